/**
 * UTC offsets of IANA zones, the one place that asks `Intl` about them. Recurrence expansion
 * converts many wall times to instants, and every write reads a few instants' local dates and
 * times (`LocalTime`); asking `Intl` for each (~10 µs a `formatToParts`, three per
 * conversion) would dominate their cost, so offsets are read once per zone and UTC day
 * (bisecting the transition when the day has one) and kept. Wall times here are "floating"
 * milliseconds: the wall clock's fields read as UTC.
 */

const formatters = new Map<string, Intl.DateTimeFormat>()

/**
 * The one wall-clock formatter per zone. `Intl` uses the proleptic Gregorian calendar and
 * reads years before 1 as era years (1 BC), hence the era. Throws a RangeError for a zone
 * `Intl` does not know.
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

const DAY = 86_400_000

interface DayOffsets {
  readonly before: number
  /** The first millisecond of the new offset, or Infinity when the day has no transition. */
  readonly switchAt: number
  readonly after: number
}

const days = new Map<string, Map<number, DayOffsets>>()
// Bounded: far-flung dates in many zones must not grow the cache without limit (an entry is
// ~100 bytes of heap, so this is ~5 MiB full: 137 zone-years; refilling costs a couple of
// Intl calls a day).
const MAX_DAYS = 50_000
let cachedDays = 0

/**
 * Drops the oldest eighth of every zone's days. Gradual, so the days in use stay warm when a
 * user cycling through zones fills the cache: clearing it all would make every zone cold at
 * once, and a cold VTIMEZONE costs ~100 ms of Intl calls. Amortized, a lookup pays O(1).
 */
const evictOldest = () => {
  for (const [zone, zoneDays] of days) {
    let drop = Math.ceil(zoneDays.size / 8)
    for (const day of zoneDays.keys()) {
      if (drop-- <= 0) break
      zoneDays.delete(day)
      cachedDays--
    }
    if (zoneDays.size === 0) days.delete(zone)
  }
}

const intlOffset = (zone: string, ms: number): number => {
  const whole = ms - (((ms % 1000) + 1000) % 1000)
  const parts = formatterFor(zone).formatToParts(new Date(whole))
  let year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, bc = false
  for (const p of parts) {
    switch (p.type) {
      case "year": year = Number(p.value); break
      case "month": month = Number(p.value); break
      case "day": day = Number(p.value); break
      case "hour": hour = Number(p.value); break
      case "minute": minute = Number(p.value); break
      case "second": second = Number(p.value); break
      case "era": bc = p.value === "BC"; break
    }
  }
  const d = new Date(0)
  d.setUTCFullYear(bc ? 1 - year : year, month - 1, day)
  d.setUTCHours(hour, minute, second, 0)
  return d.getTime() - whole
}

/**
 * The first millisecond of a day's new offset, given the offset it opens with. Transitions
 * fall on whole seconds, and in practice on a quarter hour of UTC: bisect the day's 96
 * quarter hours first (7 Intl calls), and only when the second before the quarter hour found
 * still shows the new offset, the 900 seconds before it (10 more). An Intl call near a
 * transition costs up to ~0.25 ms, so a whole-day bisection by seconds (17 calls) held the
 * event loop ~4 ms per transition day of a cold zone.
 */
const switchIn = (zone: string, start: number, before: number): number => {
  const QUARTER = 900_000
  let lo = 0, hi = DAY / QUARTER
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2)
    if (intlOffset(zone, start + mid * QUARTER) === before) lo = mid
    else hi = mid
  }
  const quarter = start + hi * QUARTER
  if (intlOffset(zone, quarter - 1000) === before) return quarter
  let loS = 0, hiS = QUARTER / 1000
  const from = quarter - QUARTER
  while (hiS - loS > 1) {
    const mid = Math.floor((loS + hiS) / 2)
    if (intlOffset(zone, from + mid * 1000) === before) loS = mid
    else hiS = mid
  }
  return from + hiS * 1000
}

const dayOffsets = (zone: string, dayIndex: number): DayOffsets => {
  const known = days.get(zone)?.get(dayIndex)
  if (known !== undefined) return known
  const start = dayIndex * DAY
  // A day's closing offset is the next day's opening one: read it from there when known.
  // Intl is asked before the zone gets a map, so a zone it refuses (a RangeError) leaves none.
  const before = days.get(zone)?.get(dayIndex - 1)?.after ?? intlOffset(zone, start)
  const after = days.get(zone)?.get(dayIndex + 1)?.before ?? intlOffset(zone, start + DAY)
  let entry: DayOffsets
  if (before === after) {
    entry = { before, switchAt: Infinity, after }
  } else {
    entry = { before, switchAt: switchIn(zone, start, before), after }
  }
  if (cachedDays >= MAX_DAYS) evictOldest()
  let zoneDays = days.get(zone)
  if (zoneDays === undefined) {
    zoneDays = new Map()
    days.set(zone, zoneDays)
  }
  zoneDays.set(dayIndex, entry)
  cachedDays++
  return entry
}

/**
 * The offset at one instant straight from Intl, bypassing the day cache: for probes of
 * scattered instants (a VTIMEZONE checking a yearly rule across decades), where filling the
 * cache would cost a bisection of every day probed.
 */
export const probeOffset = (zone: string, instant: number): number =>
  zone === "UTC" || zone === "Etc/UTC" ? 0 : intlOffset(zone, instant)

/** Offset of `zone` from UTC at an instant, in ms (east positive). */
export const offsetAt = (zone: string, instant: number): number => {
  if (zone === "UTC" || zone === "Etc/UTC") return 0
  const entry = dayOffsets(zone, Math.floor(instant / DAY))
  return instant < entry.switchAt ? entry.before : entry.after
}

/** The floating wall time of an instant. */
export const wallOf = (zone: string, instant: number): number => instant + offsetAt(zone, instant)

/**
 * The instant a wall time names: a wall time skipped by a gap moves forward by the gap
 * (the offset before the gap applies); a repeated wall time takes its first instant.
 */
export const instantOfWall = (zone: string, wall: number): number => {
  const early = offsetAt(zone, wall - DAY)
  const late = offsetAt(zone, wall + DAY)
  let best: number | undefined
  for (const offset of early === late ? [early] : [early, late]) {
    const t = wall - offset
    if (t + offsetAt(zone, t) === wall && (best === undefined || t < best)) best = t
  }
  return best ?? wall - early
}
