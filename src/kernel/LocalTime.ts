/**
 * Wall-clock arithmetic in IANA time zones, on top of `Intl` only. Pure: every function
 * takes the instant it works on; nothing here reads the current time.
 */

export interface LocalParts {
  readonly year: number
  readonly month: number // 1-12
  readonly day: number // 1-31
  readonly hour: number
  readonly minute: number
  readonly second: number
  /** 0 = Sunday … 6 = Saturday */
  readonly weekday: number
}

const formatters = new Map<string, Intl.DateTimeFormat>()

/**
 * The one wall-clock formatter per zone, shared with `recurrence/ZoneOffsets` (which reads
 * the era for years before 1 and ignores the weekday; `localParts` the reverse).
 */
export const formatterFor = (zone: string): Intl.DateTimeFormat => {
  let f = formatters.get(zone)
  if (f === undefined) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      era: "short",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
      weekday: "short"
    })
    formatters.set(zone, f)
  }
  return f
}

const WEEKDAYS: Record<string, number> = { Sun: 0, Mon: 1, Tue: 2, Wed: 3, Thu: 4, Fri: 5, Sat: 6 }

/**
 * The last answer per zone, by whole second (the parts have no finer field): one write reads
 * the same instant several times (its day for statistics, anchors, periods), and writes
 * within a second share it, where each `formatToParts` costs ~10 µs.
 */
const lastParts = new Map<string, { readonly second: number; readonly parts: LocalParts }>()

export const localParts = (instant: Date, zone: string): LocalParts => {
  const second = Math.floor(instant.getTime() / 1000)
  const last = lastParts.get(zone)
  if (last !== undefined && last.second === second) return last.parts
  const parts = computeLocalParts(instant, zone)
  if (Number.isFinite(second)) lastParts.set(zone, { second, parts })
  return parts
}

const computeLocalParts = (instant: Date, zone: string): LocalParts => {
  const parts = formatterFor(zone).formatToParts(instant)
  const get = (type: Intl.DateTimeFormatPartTypes) => parts.find((p) => p.type === type)?.value ?? "0"
  return {
    year: Number(get("year")),
    month: Number(get("month")),
    day: Number(get("day")),
    hour: Number(get("hour")),
    minute: Number(get("minute")),
    second: Number(get("second")),
    weekday: WEEKDAYS[get("weekday")] ?? 0
  }
}

const pad = (n: number, width = 2) => String(n).padStart(width, "0")

/** The local calendar date of an instant, `YYYY-MM-DD`. */
export const localDate = (instant: Date, zone: string): string => {
  const p = localParts(instant, zone)
  return `${pad(p.year, 4)}-${pad(p.month)}-${pad(p.day)}`
}

/** The local wall time of an instant, `HH:MM`. */
export const localTimeOfDay = (instant: Date, zone: string): string => {
  const p = localParts(instant, zone)
  return `${pad(p.hour)}:${pad(p.minute)}`
}

/** Offset of the zone from UTC at an instant, in milliseconds (east positive). */
export const zoneOffsetMs = (instant: Date, zone: string): number => {
  const p = localParts(instant, zone)
  const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second)
  const truncated = instant.getTime() - (instant.getTime() % 1000 + 1000) % 1000
  return asUtc - truncated
}

/**
 * The instant a local wall time names. A time skipped by a DST jump moves forward by the
 * jump (02:30 on a spring-forward night becomes 03:30); a repeated time takes its first
 * occurrence.
 */
export const instantOf = (
  zone: string,
  year: number,
  month: number,
  day: number,
  hour = 0,
  minute = 0,
  second = 0
): Date => {
  const wall = Date.UTC(year, month - 1, day, hour, minute, second)
  // Two passes settle on the right offset for all but the skipped hour.
  const first = wall - zoneOffsetMs(new Date(wall), zone)
  const second_ = wall - zoneOffsetMs(new Date(first), zone)
  const candidates = [second_, first, wall - zoneOffsetMs(new Date(wall - 86_400_000), zone)]
  const exact = candidates
    .filter((t) => {
      const p = localParts(new Date(t), zone)
      return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second) === wall
    })
    .sort((a, b) => a - b)
  if (exact.length > 0) return new Date(exact[0]!)
  // Skipped wall time: the offset before the gap, which lands after the gap by its length.
  const before = zoneOffsetMs(new Date(wall - 86_400_000), zone)
  return new Date(wall - before)
}

/** Local midnight starting the local day that contains `instant`. */
export const startOfLocalDay = (instant: Date, zone: string): Date => {
  const p = localParts(instant, zone)
  return instantOf(zone, p.year, p.month, p.day)
}

/** Adds whole days to a calendar date (no time zone involved). */
export const addDays = (year: number, month: number, day: number, days: number) => {
  const d = new Date(Date.UTC(year, month - 1, day + days))
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() }
}

/** Local midnight starting the local day after the one containing `instant`. */
export const startOfNextLocalDay = (instant: Date, zone: string): Date => {
  const p = localParts(instant, zone)
  const next = addDays(p.year, p.month, p.day, 1)
  const first = instantOf(zone, next.year, next.month, next.day)
  if (first.getTime() > instant.getTime()) return first
  // A fall-back just after midnight (St. John's before 2011: 00:01 → 23:01) repeats the end
  // of the previous day after next midnight's first occurrence; the day ends at the second.
  return new Date(Date.UTC(next.year, next.month - 1, next.day) - zoneOffsetMs(instant, zone))
}

/** `YYYY-MM-DD` to its parts, or undefined when it is not a real calendar date. */
export const parseCalendarDate = (text: string) => {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text)
  if (m === null) return undefined
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])]
  const d = new Date(Date.UTC(year, month - 1, day))
  if (d.getUTCFullYear() !== year || d.getUTCMonth() !== month - 1 || d.getUTCDate() !== day) return undefined
  return { year, month, day }
}
