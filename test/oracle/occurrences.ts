import { Temporal } from "@js-temporal/polyfill"
import { Either } from "effect"
import { firstOccurrence, nextOccurrence } from "../../src/recurrence/Occurrences.js"
import { DAY, DST_EDGE_ZONES, FROM, HOUR, MAX_EXAMPLES, type OracleReport, type Random, seededRandom, TO } from "./common.js"

/*
 * The occurrence half of the Temporal oracle: nextOccurrence and firstOccurrence against
 * expectations computed with Temporal (`@js-temporal/polyfill`), which shares no code with
 * src/recurrence (RuleCalendar, RuleExpansion) and src/kernel/ZoneOffsets.
 *
 * The rules the expectations encode (README, Recurrence):
 * - The series' first wall time is the series start's local date at the anchor time
 *   (firstOccurrence: `from`'s local date, at the anchor or 00:00).
 * - INTERVAL counts calendar units (days, Monday-started weeks, months, years) from that
 *   date; a date no clock shows (Apia, 30 Dec 2011) still counts.
 * - Each occurrence's wall time becomes an instant with Temporal's `compatible`
 *   disambiguation: a skipped wall time moves forward by the gap, a repeated one takes its
 *   first instant. Nothing else moves.
 * - HOURLY steps wall-clock hours from DTSTART (a gap hour moves forward like any wall time).
 * - nextOccurrence: the earliest such instant strictly after `after`; firstOccurrence: the
 *   earliest at or after `from`. COUNT counts wall-time occurrences from the series start.
 */


export const OCCURRENCE_ZONES = [
  ...DST_EDGE_ZONES,
  "America/New_York",
  "Europe/Berlin",
  "Asia/Beirut",
  "America/Sao_Paulo",
  "America/Asuncion",
  "UTC"
] as const



// ---------------------------------------------------------------------------------------
// The zone, from Temporal: its offset changes and their offsets are read once; wall times
// within two days of a change are resolved by Temporal itself (memoised), the rest by the
// constant offset between changes. Dates are epoch-day numbers on JavaScript's own calendar.
// ---------------------------------------------------------------------------------------

const TABLE_FROM = Date.UTC(1970, 0, 1)
const TABLE_TO = Date.UTC(2060, 0, 1)

interface ZoneTable {
  readonly transitions: ReadonlyArray<number>
  /** offsets[i] holds from transitions[i - 1] (offsets[0]: before the first). */
  readonly offsets: ReadonlyArray<number>
}

const zoned = (zone: string, t: number) => Temporal.Instant.fromEpochMilliseconds(t).toZonedDateTimeISO(zone)
const temporalOffset = (zone: string, t: number) => zoned(zone, t).offsetNanoseconds / 1e6

const tables = new Map<string, ZoneTable>()
const tableOf = (zone: string): ZoneTable => {
  const known = tables.get(zone)
  if (known !== undefined) return known
  const transitions: Array<number> = []
  const offsets: Array<number> = [temporalOffset(zone, TABLE_FROM)]
  let at: Temporal.ZonedDateTime | null = zoned(zone, TABLE_FROM)
  for (;;) {
    at = at.getTimeZoneTransition("next")
    if (at === null || at.epochMilliseconds >= TABLE_TO) break
    transitions.push(at.epochMilliseconds)
    offsets.push(at.offsetNanoseconds / 1e6)
  }
  const table = { transitions, offsets }
  tables.set(zone, table)
  return table
}

/** Index of the last transition at or before t, plus one. */
const slot = (table: ZoneTable, t: number): number => {
  let lo = 0, hi = table.transitions.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (table.transitions[mid]! <= t) lo = mid + 1
    else hi = mid
  }
  return lo
}

const offsetAt = (zone: string, t: number): number => {
  if (t < TABLE_FROM || t >= TABLE_TO) return temporalOffset(zone, t)
  const table = tableOf(zone)
  return table.offsets[slot(table, t)]!
}

/** The local date (epoch day) of an instant. */
const localDay = (zone: string, t: number): number => Math.floor((t + offsetAt(zone, t)) / DAY)

const temporalCache = new Map<string, number>()
/** The instant of a local wall time (epoch day + minute of day), `compatible` disambiguation. */
const instantOf = (zone: string, day: number, minute: number): number => {
  const wall = day * DAY + minute * 60_000
  const table = tableOf(zone)
  const i = slot(table, wall - 14 * HOUR)
  const nearChange = (table.transitions[i] ?? Infinity) < wall + 2 * DAY || wall < TABLE_FROM + 2 * DAY || wall >= TABLE_TO - 2 * DAY
  if (!nearChange) return wall - table.offsets[i]!
  const key = `${zone}|${wall}`
  const cached = temporalCache.get(key)
  if (cached !== undefined) return cached
  if (temporalCache.size > 500_000) temporalCache.clear()
  const d = new Date(day * DAY)
  const t = Temporal.PlainDateTime.from({
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: Math.floor(minute / 60),
    minute: minute % 60
  }).toZonedDateTime(zone, { disambiguation: "compatible" }).epochMilliseconds
  temporalCache.set(key, t)
  return t
}

const ymd = (day: number) => {
  const d = new Date(day * DAY)
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() }
}
const dayOfYmd = (year: number, month: number, day: number) => {
  const d = new Date(0)
  d.setUTCFullYear(year, month - 1, day)
  return Math.round(d.getTime() / DAY)
}
const daysInMonth = (year: number, month: number) => new Date(Date.UTC(2000, month, 0)).getUTCDate() + (month === 2 && !leap(year) ? -1 : 0)
const leap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0
/** ISO weekday, 1 = Monday … 7 = Sunday. */
const isoWeekday = (day: number) => ((new Date(day * DAY).getUTCDay() + 6) % 7) + 1

const transitionsOf = (zone: string): ReadonlyArray<number> =>
  tableOf(zone).transitions.filter((t) => t >= FROM && t < TO)

// ---------------------------------------------------------------------------------------
// Rules and their dates
// ---------------------------------------------------------------------------------------

type OracleRule =
  | { readonly kind: "DAILY"; readonly interval: number; readonly count: number | undefined }
  | { readonly kind: "WEEKLY"; readonly interval: number; readonly weekdays: ReadonlyArray<number> } // ISO 1=Mon..7=Sun
  | { readonly kind: "MONTHDAY"; readonly interval: number; readonly day: number }
  | { readonly kind: "LASTFRIDAY"; readonly interval: number }
  | { readonly kind: "YEARLY"; readonly interval: number }
  /** Steps of wall-clock hours from DTSTART (not elapsed hours). */
  | { readonly kind: "HOURLY"; readonly interval: number }

const ICAL_DAYS = ["", "MO", "TU", "WE", "TH", "FR", "SA", "SU"]

const ruleText = (r: OracleRule): string => {
  const interval = r.interval === 1 ? "" : `;INTERVAL=${r.interval}`
  switch (r.kind) {
    case "DAILY":
      return `FREQ=DAILY${interval}${r.count === undefined ? "" : `;COUNT=${r.count}`}`
    case "WEEKLY":
      return `FREQ=WEEKLY${interval};BYDAY=${r.weekdays.map((d) => ICAL_DAYS[d]).join(",")}`
    case "MONTHDAY":
      return `FREQ=MONTHLY${interval};BYMONTHDAY=${r.day}`
    case "LASTFRIDAY":
      return `FREQ=MONTHLY${interval};BYDAY=-1FR`
    case "YEARLY":
      return `FREQ=YEARLY${interval}`
    case "HOURLY":
      return `FREQ=HOURLY${interval}`
  }
}

/** The occurrence dates (epoch days) of step `k`: k counts INTERVAL-sized units from the start's. */
const datesOfStep = (r: Exclude<OracleRule, { kind: "HOURLY" }>, start: number, k: number): Array<number> => {
  const s = ymd(start)
  switch (r.kind) {
    case "DAILY":
      return [start + k * r.interval]
    case "WEEKLY": {
      const monday = start - (isoWeekday(start) - 1) + 7 * k * r.interval
      return [...r.weekdays].sort((a, b) => a - b).map((d) => monday + d - 1)
    }
    case "MONTHDAY":
    case "LASTFRIDAY": {
      const first = ymd(dayOfYmd(s.year, s.month + k * r.interval, 1))
      const length = daysInMonth(first.year, first.month)
      if (r.kind === "LASTFRIDAY") {
        const last = dayOfYmd(first.year, first.month, length)
        return [last - ((isoWeekday(last) - 5 + 7) % 7)]
      }
      const day = r.day > 0 ? r.day : length + r.day + 1
      return day >= 1 && day <= length ? [dayOfYmd(first.year, first.month, day)] : []
    }
    case "YEARLY": {
      const year = s.year + k * r.interval
      // 29 February only in leap years (RFC 5545: invalid dates are ignored).
      return s.month === 2 && s.day === 29 && !leap(year) ? [] : [dayOfYmd(year, s.month, s.day)]
    }
  }
}

/** The first step whose dates can reach `day` (a lower bound, never past it). */
const stepNear = (r: Exclude<OracleRule, { kind: "HOURLY" }>, start: number, day: number): number => {
  if (day <= start) return 0
  const a = ymd(start), b = ymd(day)
  const units = r.kind === "DAILY"
    ? day - start
    : r.kind === "WEEKLY"
    ? Math.floor((day - (start - isoWeekday(start) + 1)) / 7)
    : r.kind === "YEARLY"
    ? b.year - a.year
    : (b.year - a.year) * 12 + b.month - a.month
  return Math.max(0, Math.floor(units / r.interval) - 1)
}

/**
 * The earliest occurrence instant accepted by `accept`, of the series starting at
 * (`start`, `minute`), looking from the step holding `near` (or the first, with a COUNT).
 */
const expected = (
  r: OracleRule,
  zone: string,
  start: number,
  minute: number,
  near: number,
  accept: (t: number) => boolean
): number | undefined => {
  const dtstart = instantOf(zone, start, minute)
  if (r.kind === "HOURLY") return expectedHourly(r.interval, zone, start, minute, near, accept)
  let k = r.kind === "DAILY" && r.count !== undefined ? 0 : stepNear(r, start, near - 3)
  let best: number | undefined
  let bestDay: number | undefined
  for (let guard = 0; guard < 5000; guard++, k++) {
    for (const day of datesOfStep(r, start, k)) {
      if (day < start) continue
      if (bestDay !== undefined && day > bestDay + 3) return best
      if (r.kind === "DAILY" && r.count !== undefined && k >= r.count) return best
      const t = instantOf(zone, day, minute)
      // The series' first wall time is DTSTART; nothing before it on the first date counts.
      if (day === start && t < dtstart) continue
      if (accept(t) && (best === undefined || t < best)) {
        best = t
        bestDay = day
      }
    }
  }
  return best
}

/** HOURLY: wall times DTSTART + k·INTERVAL hours (floating), each resolved by Temporal. */
const expectedHourly = (
  interval: number,
  zone: string,
  start: number,
  minute: number,
  near: number,
  accept: (t: number) => boolean
): number | undefined => {
  const step = interval * HOUR
  const dtWall = start * DAY + minute * 60_000
  const from = (near - 3) * DAY
  let k = Math.max(0, Math.floor((from - dtWall) / step))
  let best: number | undefined
  let bestWall = 0
  for (let guard = 0; guard < 5000; guard++, k++) {
    const wall = dtWall + k * step
    if (best !== undefined && wall > bestWall + 2 * DAY) return best
    const t = instantOf(zone, Math.floor(wall / DAY), (wall % DAY) / 60_000)
    if (accept(t) && (best === undefined || t < best)) {
      best = t
      bestWall = wall
    }
  }
  return best
}

// ---------------------------------------------------------------------------------------
// Case generation: zones, instants near offset changes, anchors inside gaps and folds
// ---------------------------------------------------------------------------------------

const pad = (n: number) => String(n).padStart(2, "0")

const genRule = (rnd: Random): OracleRule => {
  const interval = rnd.next() < 0.5 ? 1 : rnd.int(2, 4)
  switch (rnd.int(0, 5)) {
    case 0:
      return { kind: "DAILY", interval, count: rnd.next() < 0.2 ? rnd.int(1, 400) : undefined }
    case 1: {
      const days = new Set<number>()
      const n = rnd.int(1, 3)
      while (days.size < n) days.add(rnd.int(1, 7))
      return { kind: "WEEKLY", interval, weekdays: [...days] }
    }
    case 2:
      return { kind: "MONTHDAY", interval, day: rnd.next() < 0.8 ? rnd.int(1, 31) : -rnd.int(1, 3) }
    case 3:
      return { kind: "LASTFRIDAY", interval }
    case 4:
      return { kind: "YEARLY", interval }
    default:
      return { kind: "HOURLY", interval: rnd.next() < 0.5 ? 1 : rnd.int(2, 7) }
  }
}

/** A wall time (minute of day) near an offset change: inside its gap or repeated hour, or at its edges. */
const anchorNear = (rnd: Random, zone: string, transition: number): number => {
  const minuteOf = (t: number) => Math.floor((((t + offsetAt(zone, t)) % DAY) + DAY) % DAY / 60_000)
  const before = minuteOf(transition - 1)
  const after = minuteOf(transition)
  const lo = Math.min(before, after)
  const hi = Math.max(before + 1, after)
  const minute = Math.min(23 * 60 + 59, Math.max(0, rnd.int(lo - 30, hi + 30)))
  return rnd.next() < 0.5 ? minute - (minute % 15) : minute
}

interface Case {
  readonly zone: string
  readonly rule: OracleRule
  /** Minute of the day. */
  readonly anchor: number
  readonly useAnchor: boolean
  readonly first: boolean
  readonly seriesStart: number
  readonly at: number
}

const genCase = (rnd: Random): Case => {
  const zone = rnd.pick(OCCURRENCE_ZONES)
  const transitions = transitionsOf(zone)
  const biased = transitions.length > 0 && rnd.next() < 0.85
  const pivot = biased ? rnd.pick(transitions) : FROM + Math.floor(rnd.next() * (TO - FROM))
  const anchor = biased && rnd.next() < 0.7 ? anchorNear(rnd, zone, pivot) : rnd.int(0, 23) * 60 + rnd.pick([0, 15, 30, 45])
  const rule = genRule(rnd)
  const spanDays = rule.kind === "YEARLY"
    ? rnd.int(0, 3000)
    : rule.kind === "DAILY" && rule.count !== undefined
    ? rnd.int(0, 300)
    : rnd.int(0, 400)
  // The series starts on a date before the pivot, at the anchor (the instant of a due date).
  const startDay = localDay(zone, pivot - spanDays * DAY - rnd.int(0, 23) * HOUR)
  const seriesStart = instantOf(zone, startDay, anchor)
  const jitter = rnd.pick([-1, 0, 1, 0, 0])
  const near = rnd.next() < 0.5
    ? pivot + rnd.int(-6, 6) * 15 * 60_000 + jitter
    : instantOf(zone, localDay(zone, pivot + rnd.int(-2, 2) * DAY), anchor) + jitter + rnd.pick([0, 0, HOUR, -HOUR])
  return {
    zone,
    rule,
    anchor,
    useAnchor: rnd.next() < 0.8,
    first: rnd.next() < 0.35,
    seriesStart,
    at: Math.max(near, seriesStart - DAY)
  }
}

const iso = (t: number | undefined) => (t === undefined ? "none" : new Date(t).toISOString())
const hhmm = (minute: number) => `${pad(Math.floor(minute / 60))}:${pad(minute % 60)}`

const check = (c: Case): string | undefined => {
  const rule = ruleText(c.rule)
  const anchorTime = c.first && !c.useAnchor ? null : hhmm(c.anchor)
  let want: number | undefined
  let got: Either.Either<Date | undefined, string>
  let what: string
  if (c.first) {
    const start = localDay(c.zone, c.at)
    want = expected(c.rule, c.zone, start, c.useAnchor ? c.anchor : 0, start, (t) => t >= c.at)
    got = firstOccurrence({ rule, zone: c.zone, anchorTime }, new Date(c.at))
    what = `firstOccurrence ${rule} ${c.zone} anchor ${anchorTime} from ${iso(c.at)}`
  } else {
    const start = localDay(c.zone, c.seriesStart)
    want = expected(c.rule, c.zone, start, c.anchor, localDay(c.zone, c.at), (t) => t > c.at)
    got = nextOccurrence({ rule, zone: c.zone, anchorTime }, new Date(c.seriesStart), new Date(c.at))
    what = `nextOccurrence ${rule} ${c.zone} anchor ${anchorTime} start ${iso(c.seriesStart)} after ${iso(c.at)}`
  }
  if (Either.isRight(got) && got.right?.getTime() === want) return undefined
  const answer = Either.isLeft(got) ? `refused (${got.left})` : iso(got.right?.getTime())
  return `${what}: got ${answer}, want ${iso(want)}`
}

/** Runs `cases` generated cases from `seed`; a seed reproduces a run. */
export const runOccurrenceOracle = (cases: number, seed: number): OracleReport => {
  const rnd = seededRandom(seed)
  let divergences = 0
  const examples: Array<string> = []
  for (let i = 0; i < cases; i++) {
    const divergence = check(genCase(rnd))
    if (divergence !== undefined) {
      divergences++
      if (examples.length < MAX_EXAMPLES) examples.push(divergence)
    }
  }
  return { cases, divergences, examples }
}
