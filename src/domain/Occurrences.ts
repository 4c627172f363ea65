import rrulePkg from "rrule"
import { instantOf, localParts } from "./LocalTime.js"

const { RRule } = rrulePkg

/**
 * Occurrences of an RFC 5545 rule on the user's local calendar.
 *
 * `rrule` computes in "floating" time: a Date whose UTC fields are read as a wall clock.
 * Everything crossing this module's boundary is a real instant; the floating values never
 * leave it. A wall time skipped by a DST jump moves forward by the jump (02:30 → 03:30);
 * a repeated wall time means its first occurrence.
 */

export type RecurrenceMode = "from_due" | "from_completion"

export interface RecurrenceInput {
  readonly rule: string
  readonly zone: string
  /** `HH:MM` local: the time of day of each occurrence unless the rule sets BYHOUR/BYMINUTE. */
  readonly anchorTime: string | null
}

const floating = (instant: Date, zone: string): Date => {
  const p = localParts(instant, zone)
  return new Date(Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second))
}

const realOf = (wall: Date, zone: string): Date =>
  instantOf(
    zone,
    wall.getUTCFullYear(),
    wall.getUTCMonth() + 1,
    wall.getUTCDate(),
    wall.getUTCHours(),
    wall.getUTCMinutes(),
    wall.getUTCSeconds()
  )

const parseAnchor = (anchor: string | null): { hour: number; minute: number } | undefined => {
  const m = anchor === null ? null : /^(\d{2}):(\d{2})$/.exec(anchor)
  return m === null ? undefined : { hour: Number(m[1]), minute: Number(m[2]) }
}

const ruleText = (rule: string) => rule.trim().replace(/^RRULE:/i, "")

/** Builds the rule starting at a floating DTSTART, dropping any DTSTART/TZID in the text. */
const build = (rule: string, dtstart: Date) => {
  const options = RRule.parseString(ruleText(rule))
  return new RRule({ ...options, dtstart, tzid: null })
}

/** The floating DTSTART for a rule whose series passes through `reference` (wall time). */
const startAt = (referenceWall: Date, anchor: { hour: number; minute: number } | undefined) => {
  if (anchor === undefined) return referenceWall
  return new Date(Date.UTC(
    referenceWall.getUTCFullYear(),
    referenceWall.getUTCMonth(),
    referenceWall.getUTCDate(),
    anchor.hour,
    anchor.minute
  ))
}

/**
 * The first occurrence strictly after `after`, in a series that starts at `seriesStart`
 * (both real instants). Undefined when the rule has no further occurrence.
 */
export const nextOccurrence = (
  input: RecurrenceInput,
  seriesStart: Date,
  after: Date
): Date | undefined => {
  const anchor = parseAnchor(input.anchorTime)
  const dtstart = startAt(floating(seriesStart, input.zone), anchor)
  const rule = build(input.rule, dtstart)
  let cursor = floating(after, input.zone)
  // A repeated (fall-back) hour maps two instants to one wall time; step until the real
  // instant is strictly later.
  for (let guard = 0; guard < 4; guard++) {
    const wall = rule.after(cursor, false)
    if (wall === null) return undefined
    const real = realOf(wall, input.zone)
    if (real.getTime() > after.getTime()) return real
    cursor = wall
  }
  return undefined
}

/**
 * Where a recurring task goes when its current occurrence is completed or skipped
 * (CONTRACT §7): `from_due` takes the next match after the current due date;
 * `from_completion` restarts the series on the completion's local day and takes its first
 * occurrence on a later day (for HOURLY rules: after the completion itself).
 */
export const advance = (
  input: RecurrenceInput & { readonly mode: RecurrenceMode },
  currentDue: Date | null,
  completedAt: Date,
  /** Where the series began (its first due date): COUNT and INTERVAL count from here. */
  seriesStart: Date | null = currentDue
): Date | undefined => {
  if (input.mode === "from_due" && currentDue !== null) {
    return nextOccurrence(input, seriesStart ?? currentDue, currentDue)
  }
  const anchor = parseAnchor(input.anchorTime)
  const completedWall = floating(completedAt, input.zone)
  const rule = build(input.rule, startAt(completedWall, anchor))
  const subDaily = rule.options.freq >= RRule.HOURLY
  const after = subDaily ? completedWall : new Date(Date.UTC(
    completedWall.getUTCFullYear(),
    completedWall.getUTCMonth(),
    completedWall.getUTCDate(),
    23,
    59,
    59
  ))
  const wall = rule.after(after, false)
  return wall === null ? undefined : realOf(wall, input.zone)
}

/** The first occurrence at or after `from`, for a new recurring task without a due date. */
export const firstOccurrence = (input: RecurrenceInput, from: Date): Date | undefined => {
  const p = localParts(from, input.zone)
  const anchor = parseAnchor(input.anchorTime) ?? { hour: 0, minute: 0 }
  const dtstartWall = new Date(Date.UTC(p.year, p.month - 1, p.day, anchor.hour, anchor.minute))
  const rule = build(input.rule, dtstartWall)
  const wall = rule.after(dtstartWall, true)
  if (wall === null) return undefined
  const real = realOf(wall, input.zone)
  if (real.getTime() >= from.getTime()) return real
  return nextOccurrence(input, real, from)
}
