import {
  contentLine,
  escapeText,
  floatingStamp,
  foldLine,
  paramValue,
  stampOfIso,
  textLine,
  utcStamp
} from "./ICalendar.js"
import { occurrencesBetween } from "../recurrence/Occurrences.js"
import { type ExpansionBudget, runToEnd } from "../recurrence/RuleExpansion.js"
import { civilFromDays, DAY_MS, daysFromCivil } from "../recurrence/RuleCalendar.js"
import { transitionsIn, vtimezone } from "./VTimezone.js"
import { instantOfWall, offsetAt } from "../kernel/ZoneOffsets.js"

/**
 * The calendar feed: a user's open dated tasks as an iCalendar VTODO list.
 * Everything here is pure; the service reads the rows and hands them over.
 */

/** Items one feed holds at most, soonest due first; more would be a multi-megabyte download every refresh. */
export const MAX_FEED_ITEMS = 5000
/** VTIMEZONE transitions are listed for at most this many years either side of now. */
export const ZONE_YEARS_AROUND_NOW = 10
/**
 * Expansion units (RuleExpansion: a period, a day examined or a candidate each) one feed may
 * spend turning stored COUNTs (which count from the series' first due date) into the count
 * left from the current occurrence, over all its tasks together. A feed URL is polled by a
 * calendar app every few minutes, so its cost must not grow with how far a user snoozed a
 * series or how many such series they keep: past this, a rule keeps its stored COUNT until a
 * later feed (the counts are cached per task version) gets to it.
 */
export const FEED_EXPANSION_BUDGET = 400_000
/**
 * A point in `feedParts`' output where its caller may let other requests run: not text.
 * One comes after every task, every day of a cold zone's offsets and every PAUSE_UNITS
 * of a COUNT walk (RuleExpansion), so the work between two is well under a millisecond.
 */
export const BREATHE = ""

/** A pausing walk with its pauses turned into BREATHE points. */
function* breathing<A>(walk: Generator<void, A>): Generator<string, A> {
  for (;;) {
    const step = walk.next()
    if (step.done === true) return step.value
    yield BREATHE
  }
}

/** Rules already rendered, by `ruleCacheKey`; the feed reads and fills it. */
export interface RuleCache {
  readonly get: (key: string) => string | undefined
  readonly set: (key: string, rule: string) => void
}

export interface FeedTask {
  readonly id: number
  readonly title: string
  readonly notes: string
  readonly priority: number
  /** ISO instants. */
  readonly due_at: string
  readonly series_start_at: string | null
  readonly created_at: string
  readonly updated_at: string
  readonly rrule: string | null
  readonly anchor_time: string | null
  readonly labels: ReadonlyArray<string>
}

export interface FeedInput {
  readonly zone: string
  readonly now: Date
  readonly calendarName: string
  /** Makes UIDs unique across Steady instances. */
  readonly instanceId: string
  /** `https://host` the task URLs start with, no trailing slash. */
  readonly origin: string
  readonly tasks: ReadonlyArray<FeedTask>
}

/**
 * Our priorities P0…P4 (P4 urgent, P0 the unset default) on RFC 5545's 1 (highest) … 9
 * (lowest), 0 undefined, using the values three-level clients read as high/medium/low.
 */
export const PRIORITY_MAP: Readonly<Record<number, number>> = { 0: 0, 1: 9, 2: 5, 3: 3, 4: 1 }
export const icalPriority = (priority: number): number => PRIORITY_MAP[priority] ?? 0

const isUtcZone = (zone: string) => zone === "UTC" || zone === "Etc/UTC"

const yearOf = (ms: number) => civilFromDays(Math.floor(ms / DAY_MS)).year

const secondFloor = (ms: number) => ms - (((ms % 1000) + 1000) % 1000)

type Budget = ExpansionBudget

/**
 * COUNT left from the current occurrence, so a calendar app that starts the series at DUE
 * ends it where Steady does; undefined when the count would cost more than the budget left.
 * The series start is its first occurrence; the current one (at `due`) is not yet spent.
 */
function* remainingCount(
  count: number,
  task: FeedTask,
  zone: string,
  due: number,
  budget: Budget
): Generator<void, number | undefined> {
  if (task.series_start_at === null) return count
  const start = new Date(task.series_start_at)
  if (start.getTime() >= due) return count
  const input = { rule: task.rrule!, zone, anchorTime: task.anchor_time }
  const between = yield* occurrencesBetween(input, start, new Date(due), count, budget)
  return between === undefined ? undefined : Math.max(1, count - 1 - between)
}

/**
 * The stored rule as RFC 5545 wants it beside a DTSTART with TZID: no `RRULE:` prefix, a
 * local UNTIL turned into UTC, COUNT counted from the current occurrence, and the anchor
 * time spelled out when the current occurrence was snoozed away from it (Steady's next
 * occurrences return to the anchor). Pauses while it counts (see RuleExpansion.countBefore).
 */
function* feedRuleSteps(
  task: FeedTask,
  zone: string,
  due: number,
  dueWall: number,
  budget: Budget
): Generator<void, { readonly rule: string; readonly exact: boolean }> {
  let exact = true
  const parts = task.rrule!.trim().replace(/^RRULE:/i, "").split(";").filter((p) => p !== "")
  const names = new Set(parts.map((p) => p.split("=")[0]!.toUpperCase()))
  const out: Array<string> = []
  for (const part of parts) {
    const eq = part.indexOf("=")
    const name = part.slice(0, eq).toUpperCase()
    const value = part.slice(eq + 1)
    if (name === "UNTIL") {
      const m = /^(\d{4})(\d{2})(\d{2})(?:T(\d{2})(\d{2})(\d{2}))?(Z?)$/i.exec(value)
      if (m !== null && m[7] === "") {
        const wall = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0))
        out.push(`UNTIL=${utcStamp(isUtcZone(zone) ? wall : instantOfWall(zone, wall))}`)
        continue
      }
    }
    if (name === "COUNT") {
      const left = yield* remainingCount(Number(value), task, zone, due, budget)
      if (left === undefined) exact = false
      out.push(`COUNT=${left ?? value}`)
      continue
    }
    // Steady reads rules case-insensitively; RFC 5545 parsers may not.
    out.push(`${name}=${value.toUpperCase()}`)
  }
  const anchor = task.anchor_time === null ? null : /^(\d{2}):(\d{2})$/.exec(task.anchor_time)
  const freq = parts.find((p) => /^FREQ=/i.test(p))?.slice(5).toUpperCase()
  if (anchor !== null && freq !== "HOURLY" && !names.has("BYHOUR") && !names.has("BYMINUTE")) {
    const minuteOfDay = Number(anchor[1]) * 60 + Number(anchor[2])
    const dueMinute = Math.floor((((dueWall % DAY_MS) + DAY_MS) % DAY_MS) / 60_000)
    const dueSecond = Math.floor(dueWall / 1000) % 60
    if (minuteOfDay !== dueMinute || dueSecond !== 0) {
      out.push(`BYHOUR=${Number(anchor[1])}`, `BYMINUTE=${Number(anchor[2])}`, "BYSECOND=0")
    }
  }
  return { rule: out.join(";"), exact }
}

/** feedRuleSteps' answer in one go. */
export const feedRule = (task: FeedTask, zone: string, due: number, dueWall: number, budget: Budget) =>
  runToEnd(feedRuleSteps(task, zone, due, dueWall, budget))

/** A rendered rule holds while the task, its zone and its current occurrence are unchanged. */
const ruleCacheKey = (task: FeedTask, zone: string) => `${task.id}|${task.updated_at}|${task.due_at}|${zone}`

/** Whether a wall time names exactly one instant (it is in no repeated hour). */
const shownOnce = (zone: string, wall: number): boolean => {
  const early = offsetAt(zone, wall - DAY_MS)
  const late = offsetAt(zone, wall + DAY_MS)
  if (early === late) return true
  let instants = 0
  for (const offset of [early, late]) if (offsetAt(zone, wall - offset) === offset) instants++
  return instants === 1
}

/** The years the VTIMEZONE lists: the due dates' years and now's, within reach of now. */
const zoneRange = (tasks: ReadonlyArray<FeedTask>, now: number) => {
  const nowYear = yearOf(now)
  let lo = nowYear, hi = nowYear + 1
  for (const t of tasks) {
    const y = yearOf(Date.parse(t.due_at))
    if (y < lo) lo = y
    if (y > hi) hi = y
  }
  return { from: Math.max(lo, nowYear - ZONE_YEARS_AROUND_NOW), to: Math.min(hi, nowYear + ZONE_YEARS_AROUND_NOW) }
}

function* vtodo(
  task: FeedTask,
  input: FeedInput,
  stamp: string,
  range: { from: number; to: number } | undefined,
  budget: Budget,
  rules: RuleCache | undefined
): Generator<string, string> {
  const due = secondFloor(Date.parse(task.due_at))
  const recurring = task.rrule !== null
  const { zone } = input
  const wall = due + (range === undefined ? 0 : offsetAt(zone, due))
  // A local time names the instant only if the zone's table covers it and the clock shows it
  // once: in a repeated hour RFC 5545 means the first pass, but parsers differ (ical.js takes
  // the second), so UTC says it exactly. A recurring task always keeps the local form, which
  // its rule expands on.
  const local = range !== undefined &&
    (recurring || (yearOf(due) >= range.from && yearOf(due) <= range.to && shownOnce(zone, wall)))
  const when = local ? `;TZID=${paramValue(zone)}:${floatingStamp(wall)}` : `:${utcStamp(due)}`
  let out = "BEGIN:VTODO\r\n" +
    contentLine("UID", `task-${task.id}-${input.instanceId}@steady`) +
    contentLine("DTSTAMP", stamp) +
    contentLine("CREATED", stampOfIso(task.created_at)) +
    contentLine("LAST-MODIFIED", stampOfIso(task.updated_at)) +
    textLine("SUMMARY", task.title)
  if (task.notes !== "") out += textLine("DESCRIPTION", task.notes)
  // A recurring VTODO's series starts at DTSTART (RFC 5545 §3.8.5.3); DUE equal to it keeps instances instant-long.
  if (recurring) out += foldLine(`DTSTART${when}`)
  out += foldLine(`DUE${when}`)
  out += contentLine("PRIORITY", String(icalPriority(task.priority)))
  if (task.labels.length > 0) out += contentLine("CATEGORIES", task.labels.map(escapeText).join(","))
  if (recurring) {
    const key = ruleCacheKey(task, zone)
    let rule = rules?.get(key)
    if (rule === undefined) {
      const made = yield* breathing(feedRuleSteps(task, zone, due, wall, budget))
      rule = made.rule
      if (made.exact) rules?.set(key, rule)
    }
    out += contentLine("RRULE", rule)
  }
  out += contentLine("URL", `${input.origin}/api/tasks/${task.id}`)
  out += "STATUS:NEEDS-ACTION\r\nEND:VTODO\r\n"
  return out
}

/**
 * The `text/calendar` body in parts, with BREATHE between bounded stretches of work: the
 * VTIMEZONE's years (a cold zone asks Intl for every day) and the tasks' COUNT walks. The
 * service yields the event loop at each BREATHE, so one feed never holds it for long.
 */
export function* feedParts(input: FeedInput, rules?: RuleCache): Generator<string> {
  const now = input.now.getTime()
  const range = isUtcZone(input.zone) ? undefined : zoneRange(input.tasks, now)
  const stamp = utcStamp(now)
  const budget: Budget = { left: FEED_EXPANSION_BUDGET }
  yield "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Steady//Task feed//EN\r\nCALSCALE:GREGORIAN\r\nMETHOD:PUBLISH\r\n"
  yield textLine("X-WR-CALNAME", input.calendarName)
  yield contentLine("X-WR-TIMEZONE", input.zone)
  // Refresh hints for subscribing apps (RFC 7986 and the de-facto Apple/Google one).
  yield "REFRESH-INTERVAL;VALUE=DURATION:PT15M\r\nX-PUBLISHED-TTL:PT15M\r\n"
  if (range !== undefined) {
    const until = yearOf(now) + ZONE_YEARS_AROUND_NOW
    // Warm the zone's offsets a day at a time (a cold day costs two or three Intl calls, a
    // cold month ~5 ms), then its transitions a year at a time; vtimezone reads them all cached.
    for (let year = range.from; year <= until; year++) {
      const last = daysFromCivil(year + 1, 1, 1)
      for (let day = daysFromCivil(year, 1, 1); day <= last; day++) {
        offsetAt(input.zone, day * DAY_MS)
        yield BREATHE
      }
      transitionsIn(input.zone, year)
      yield BREATHE
    }
    yield vtimezone(input.zone, range.from, range.to, until)
  }
  for (const task of input.tasks) {
    yield yield* vtodo(task, input, stamp, range, budget, rules)
    yield BREATHE
  }
  yield "END:VCALENDAR\r\n"
}

/** The whole `text/calendar` body at once, its BREATHE points dropped; linear in the number of tasks. */
export const renderFeed = (input: FeedInput, rules?: RuleCache): string => [...feedParts(input, rules)].join("")
