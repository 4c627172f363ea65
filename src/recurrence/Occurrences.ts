import { Either } from "effect"
import { HOURLY, parseRule } from "./Recurrence.js"
import { DAY_MS } from "./RuleCalendar.js"
import { countBefore, type ExpansionBudget, type Found, search, type Target } from "./RuleExpansion.js"
import { wallOf } from "../kernel/ZoneOffsets.js"

/**
 * Occurrences of an RFC 5545 rule on the user's local calendar (see RuleExpansion for how
 * they are found within a bound). Everything crossing this module's boundary is a real
 * instant. A wall time skipped by a DST gap moves forward by the gap (02:30 → 03:30); a
 * repeated wall time means its first instant; only that occurrence moves, the series keeps
 * its wall time.
 *
 * Each function answers `Right(Date)`, `Right(undefined)` when the series has no such
 * occurrence (COUNT spent, UNTIL passed, past year 9999), or `Left(reason)` when the rule is
 * refused: it does not parse, provably never matches, or its matches are too sparse to find
 * within the expansion's bound.
 */

export type RecurrenceMode = "from_due" | "from_completion"

export interface RecurrenceInput {
  readonly rule: string
  readonly zone: string
  /** `HH:MM` local: the time of day of each occurrence unless the rule sets BYHOUR/BYMINUTE. */
  readonly anchorTime: string | null
}

export type Occurrence = Either.Either<Date | undefined, string>

const parseAnchor = (anchor: string | null): { hour: number; minute: number } | undefined => {
  const m = anchor === null ? null : /^(\d{2}):(\d{2})$/.exec(anchor)
  return m === null ? undefined : { hour: Number(m[1]), minute: Number(m[2]) }
}

/** The series' first wall time: the reference's local date at the anchor, else its wall clock. */
const seriesWall = (reference: Date, input: RecurrenceInput, fallback?: { hour: number; minute: number }): number => {
  const wall = wallOf(input.zone, reference.getTime())
  const anchor = parseAnchor(input.anchorTime) ?? fallback
  if (anchor === undefined) return wall - (((wall % 1000) + 1000) % 1000)
  return Math.floor(wall / DAY_MS) * DAY_MS + (anchor.hour * 60 + anchor.minute) * 60_000
}

const find = (input: RecurrenceInput, dtWall: (freq: number) => number, target: (freq: number) => Target): Found =>
  Either.flatMap(parseRule(input.rule), (rule): Found => search(rule, dtWall(rule.freq), input.zone, target(rule.freq)))

const run = (input: RecurrenceInput, dtWall: (freq: number) => number, target: (freq: number) => Target): Occurrence =>
  Either.map(find(input, dtWall, target), (hit) => (hit === undefined ? undefined : new Date(hit.instant)))

/**
 * The first occurrence strictly after `after`, in a series that starts at `seriesStart`
 * (both real instants) — including one a DST gap moved past `after` although its wall time
 * reads earlier than `after`'s.
 */
export const nextOccurrence = (input: RecurrenceInput, seriesStart: Date, after: Date): Occurrence =>
  run(input, () => seriesWall(seriesStart, input), () => ({ kind: "after", instant: after.getTime() }))

/**
 * How many occurrences of a series that starts at `seriesStart` lie strictly between it and
 * `before`, counting no further than `limit`; undefined when the rule is refused or `budget`
 * runs out. One forward pass, however far `before` lies, pausing as RuleExpansion.countBefore
 * does (`runToEnd` for the plain answer).
 */
export function* occurrencesBetween(
  input: RecurrenceInput,
  seriesStart: Date,
  before: Date,
  limit: number,
  budget: ExpansionBudget
): Generator<void, number | undefined> {
  const parsed = parseRule(input.rule)
  if (Either.isLeft(parsed)) return undefined
  const dtWall = seriesWall(seriesStart, input)
  const upToStart = yield* countBefore(parsed.right, dtWall, input.zone, seriesStart.getTime(), true, Infinity, budget)
  if (upToStart === undefined) return undefined
  const beforeEnd = yield* countBefore(parsed.right, dtWall, input.zone, before.getTime(), false, limit + upToStart, budget)
  return beforeEnd === undefined ? undefined : Math.min(limit, Math.max(0, beforeEnd - upToStart))
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
): Occurrence => {
  if (input.mode === "from_due" && currentDue !== null) {
    return nextOccurrence(input, seriesStart ?? currentDue, currentDue)
  }
  const completedWall = wallOf(input.zone, completedAt.getTime())
  return run(
    input,
    () => seriesWall(completedAt, input),
    (freq) =>
      freq === HOURLY
        ? { kind: "after", instant: completedAt.getTime() }
        : { kind: "wall", wall: (Math.floor(completedWall / DAY_MS) + 1) * DAY_MS }
  )
}

/**
 * The first occurrence at or after `from`, for a new recurring task: the series starts on
 * `from`'s local date at the anchor time (00:00 without one).
 */
export const firstOccurrence = (input: RecurrenceInput, from: Date): Occurrence =>
  Either.map(firstOccurrenceAt(input, from), (first) => first?.at)

/**
 * firstOccurrence with the wall time (`HH:MM`) the occurrence stands for: a new series is
 * anchored there, not at the instant's clock reading, which a DST gap may have moved.
 */
export const firstOccurrenceAt = (
  input: RecurrenceInput,
  from: Date
): Either.Either<{ readonly at: Date; readonly wallTime: string } | undefined, string> =>
  Either.map(
    find(input, () => seriesWall(from, input, { hour: 0, minute: 0 }), () => ({ kind: "from", instant: from.getTime() })),
    (hit) => {
      if (hit === undefined) return undefined
      const minutes = Math.floor((((hit.wall % DAY_MS) + DAY_MS) % DAY_MS) / 60_000)
      const pad = (n: number) => String(n).padStart(2, "0")
      return { at: new Date(hit.instant), wallTime: `${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}` }
    }
  )
