import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import {
  endedPeriods,
  nearestBoundary,
  nextBoundary,
  type Period,
  type PeriodFreq,
  periodContaining,
  periodEndFrom,
  type PeriodRule,
  type PeriodSettings,
  parsePeriodRule,
  type WeekStartDay
} from "../../src/quotas/QuotaPeriods.js"

/*
 * Quota periods (spec "Quota period rules" 1 and 4) checked against an oracle written
 * here from scratch: local dates come from Intl.DateTimeFormat, the calendar is walked one
 * day at a time, and a local midnight is found by searching the instants around it. The
 * oracle shares no code with src/domain/QuotaPeriods.ts or LocalTime.ts.
 */

const MAIN_ZONES = ["America/New_York", "Europe/Berlin", "Australia/Sydney", "Asia/Kolkata", "UTC"] as const
// Odd ones: 45-minute offsets, 30-minute DST, DST at midnight (the day starts at 01:00 or
// the previous day runs to 25 hours), +14, the southern hemisphere, and St. John's, whose
// clocks went back at 00:01 until 2011 (the date itself goes back for an hour).
const ODD_ZONES = [
  "Asia/Kathmandu",
  "Pacific/Chatham",
  "Australia/Lord_Howe",
  "America/Sao_Paulo",
  "America/Santiago",
  "America/Havana",
  "Asia/Tehran",
  "America/St_Johns",
  "Pacific/Kiritimati",
  "Pacific/Pago_Pago",
  "Africa/Casablanca",
  "America/Asuncion"
] as const
const ZONES = [...MAIN_ZONES, ...ODD_ZONES]

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

// ---------------------------------------------------------------------------------------
// The oracle
// ---------------------------------------------------------------------------------------

const formatters = new Map<string, Intl.DateTimeFormat>()
const wallParts = (t: number, zone: string) => {
  let f = formatters.get(zone)
  if (f === undefined) {
    f = new Intl.DateTimeFormat("en-GB", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit"
    })
    formatters.set(zone, f)
  }
  const parts = f.formatToParts(new Date(t))
  const get = (type: string) => Number(parts.find((p) => p.type === type)!.value)
  return { y: get("year"), m: get("month"), d: get("day"), h: get("hour"), mi: get("minute"), s: get("second") }
}

/** A calendar date as a day number (days since 1970-01-01). */
type DayNo = number
const dayNo = (y: number, m: number, d: number): DayNo => Date.UTC(y, m - 1, d) / DAY
const ymd = (n: DayNo) => {
  const date = new Date(n * DAY)
  return { y: date.getUTCFullYear(), m: date.getUTCMonth() + 1, d: date.getUTCDate(), weekday: date.getUTCDay() }
}
const show = (n: DayNo) => new Date(n * DAY).toISOString().slice(0, 10)

/** The local calendar date at an instant. */
const dateAt = (t: number, zone: string): DayNo => {
  const p = wallParts(t, zone)
  return dayNo(p.y, p.m, p.d)
}

/** UTC offset of the zone at an instant, in ms. */
const offsetAt = (t: number, zone: string) => {
  const p = wallParts(t, zone)
  return Date.UTC(p.y, p.m - 1, p.d, p.h, p.mi, p.s) - Math.floor(t / 1000) * 1000
}

/** Smallest t in (lo, hi] with pred(t), given !pred(lo), pred(hi) and pred monotone on the range. */
const bisect = (lo: number, hi: number, pred: (t: number) => boolean) => {
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2)
    if (pred(mid)) hi = mid
    else lo = mid
  }
  return hi
}

const dayStartCache = new Map<string, number>()
/**
 * The first instant whose local date is `date` or later: hour by hour from well before
 * the date, splitting each hour at an offset change so every piece is monotone.
 */
const dayStart = (date: DayNo, zone: string): number => {
  const key = `${zone}|${date}`
  const cached = dayStartCache.get(key)
  if (cached !== undefined) return cached
  const reached = (t: number) => dateAt(t, zone) >= date
  // Start two hours before midnight at the offset of the day before (offsets change by an
  // hour or less); if that is already the date, from 15 hours before (no zone is further ahead).
  let a = date * DAY - offsetAt(date * DAY - DAY, zone) - 2 * HOUR
  if (reached(a)) a = date * DAY - 15 * HOUR
  let found: number | undefined
  while (found === undefined) {
    const b = a + HOUR
    const offsetA = offsetAt(a, zone)
    if (offsetAt(b, zone) !== offsetA) {
      const change = bisect(a, b, (t) => offsetAt(t, zone) !== offsetA)
      if (reached(change - 1)) found = bisect(a, change - 1, reached)
      else if (reached(change)) found = change
      else if (reached(b)) found = bisect(change, b, reached)
    } else if (reached(b)) {
      found = bisect(a, b, reached)
    }
    a = b
  }
  dayStartCache.set(key, found)
  return found
}

const WEEKDAY: Record<WeekStartDay, number> = { sunday: 0, monday: 1 }

const isUnitStart = (freq: PeriodFreq, date: DayNo, weekStart: WeekStartDay) => {
  const p = ymd(date)
  switch (freq) {
    case "DAILY":
      return true
    case "WEEKLY":
      return p.weekday === WEEKDAY[weekStart]
    case "MONTHLY":
      return p.d === 1
    case "YEARLY":
      return p.m === 1 && p.d === 1
  }
}

/** Walks back one day at a time to the first day of the unit. */
const unitStartOf = (freq: PeriodFreq, date: DayNo, weekStart: WeekStartDay): DayNo => {
  let d = date
  while (!isUnitStart(freq, d, weekStart)) d--
  return d
}

/** From a unit start, walks `units` unit starts forward (or back), one day at a time. */
const walkUnits = (freq: PeriodFreq, from: DayNo, units: number, weekStart: WeekStartDay): DayNo => {
  let d = from
  let left = Math.abs(units)
  const step = units >= 0 ? 1 : -1
  while (left > 0) {
    d += step
    if (isUnitStart(freq, d, weekStart)) left--
  }
  return d
}

/** Unit starts among the days in [from, to), one day at a time. */
const unitsIn = (freq: PeriodFreq, from: DayNo, to: DayNo, weekStart: WeekStartDay) => {
  let n = 0
  for (let d = from; d < to; d++) if (isUnitStart(freq, d, weekStart)) n++
  return n
}

/** The oracle's period: the tile [start of unit k, start of unit k + interval) holding `at`. */
const oraclePeriod = (rule: PeriodRule, settings: PeriodSettings, at: number, anchor?: number) => {
  const { weekStart, zone } = settings
  const unit = unitStartOf(rule.freq, dateAt(at, zone), weekStart)
  // Without an anchor the series starts at the unit `at` belongs to, which in a repeated
  // hour after midnight (St. John's) is the one after the date on the clock.
  const first = anchor !== undefined
    ? unitStartOf(rule.freq, dateAt(anchor, zone), weekStart)
    : rule.interval === 1
    ? unit
    : dateAt(oraclePeriod({ freq: rule.freq, interval: 1 }, settings, at).start, zone)
  const between = unit >= first ? unitsIn(rule.freq, first, unit, weekStart) : -unitsIn(rule.freq, unit, first, weekStart)
  const k = Math.floor(between / rule.interval)
  const tile = (j: number) => {
    const startDay = walkUnits(rule.freq, first, j * rule.interval, weekStart)
    const endDay = walkUnits(rule.freq, startDay, rule.interval, weekStart)
    return { start: dayStart(startDay, zone), end: dayStart(endDay, zone) }
  }
  // A date that repeats after its midnight (St. John's) can put `at` in the next tile.
  for (const j of [k, k + 1, k - 1]) {
    const t = tile(j)
    if (t.start <= at && at < t.end) return t
  }
  throw new Error(`oracle: no tile holds ${new Date(at).toISOString()}`)
}

const ms = (p: Period) => ({ start: p.start.getTime(), end: p.end.getTime() })
const iso = (p: Period) => ({ start: p.start.toISOString(), end: p.end.toISOString() })

/** A period boundary: the first instant of its local date, on a unit start. */
const expectBoundary = (t: number, rule: PeriodRule, settings: PeriodSettings) => {
  const date = dateAt(t, settings.zone)
  expect(t).toBe(dayStart(date, settings.zone))
  expect(isUnitStart(rule.freq, date, settings.weekStart), `${show(date)} starts a ${rule.freq} unit`).toBe(true)
}

/** Exactly `interval` units by the day-by-day walk. */
const expectUnits = (p: Period, rule: PeriodRule, settings: PeriodSettings) => {
  const from = dateAt(p.start.getTime(), settings.zone)
  const to = dateAt(p.end.getTime(), settings.zone)
  expect(unitsIn(rule.freq, from, to, settings.weekStart)).toBe(rule.interval)
}

// ---------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------

const transitionsCache = new Map<string, ReadonlyArray<number>>()
/** Instants near which the zone's offset changes, 2000-2040 (empty for fixed zones). */
const transitionsOf = (zone: string): ReadonlyArray<number> => {
  const cached = transitionsCache.get(zone)
  if (cached !== undefined) return cached
  const out: Array<number> = []
  const end = Date.UTC(2040, 11, 31)
  // Week by week; a week whose offset changed is bisected to the change (DST changes are
  // months apart, so a week holds at most one).
  for (let t = Date.UTC(2000, 0, 1); t < end; t += 7 * DAY) {
    const offset = offsetAt(t, zone)
    if (offsetAt(t + 7 * DAY, zone) !== offset) out.push(bisect(t, t + 7 * DAY, (u) => offsetAt(u, zone) !== offset))
  }
  transitionsCache.set(zone, out)
  return out
}

const zoneArb = fc.constantFrom(...ZONES)
const freqArb = fc.constantFrom<PeriodFreq>("DAILY", "WEEKLY", "MONTHLY", "YEARLY")
const intervalArb = fc.integer({ min: 1, max: 5 })
const weekStartArb = fc.constantFrom<WeekStartDay>("sunday", "monday")
const MIN = Date.UTC(2000, 0, 1)
const MAX = Date.UTC(2040, 11, 31)

/** A zone and an instant in 2000-2040, half of the time within three days of a DST change. */
const zonedInstantArb = fc.tuple(zoneArb, fc.integer({ min: MIN, max: MAX }), fc.boolean(), fc.nat(), fc.integer({ min: -3 * DAY, max: 3 * DAY }))
  .map(([zone, uniform, nearChange, pick, shift]) => {
    const changes = transitionsOf(zone)
    const at = nearChange && changes.length > 0 ? changes[pick % changes.length]! + shift : uniform
    return { zone, at: Math.min(MAX, Math.max(MIN, at)) }
  })

const settingsArb = fc.tuple(zonedInstantArb, weekStartArb, freqArb, intervalArb).map(([{ at, zone }, weekStart, freq, interval]) => ({
  at,
  settings: { zone, weekStart } as PeriodSettings,
  rule: { freq, interval } as PeriodRule
}))

// ---------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------

describe("quota periods against a day-by-day local-calendar oracle", () => {
  it.prop("periodContaining holds the instant and is the oracle's period (no anchor: the unit containing it)", [settingsArb], ([{ at, rule, settings }]) => {
    const p = periodContaining(rule, settings, new Date(at))
    expect(p.start.getTime()).toBeLessThanOrEqual(at)
    expect(p.end.getTime()).toBeGreaterThan(at)
    expect(ms(p)).toEqual(oraclePeriod(rule, settings, at))
    expectBoundary(p.start.getTime(), rule, settings)
    expectBoundary(p.end.getTime(), rule, settings)
    expectUnits(p, rule, settings)
  }, { fastCheck: { numRuns: 300 } })

  it.prop(
    "with an anchor, the period is in the anchor's series: a whole number of intervals from it",
    [settingsArb, fc.integer({ min: -3 * 365, max: 3 * 365 })],
    ([{ at, rule, settings }, anchorDays]) => {
      const anchorAt = Math.min(MAX, Math.max(MIN, at + anchorDays * DAY + 7 * HOUR))
      const anchor = periodContaining({ freq: rule.freq, interval: 1 }, settings, new Date(anchorAt)).start
      const p = periodContaining(rule, settings, new Date(at), anchor)
      expect(p.start.getTime()).toBeLessThanOrEqual(at)
      expect(p.end.getTime()).toBeGreaterThan(at)
      expect(ms(p)).toEqual(oraclePeriod(rule, settings, at, anchor.getTime()))
      const a = dateAt(anchor.getTime(), settings.zone)
      const s = dateAt(p.start.getTime(), settings.zone)
      const between = s >= a ? unitsIn(rule.freq, a, s, settings.weekStart) : unitsIn(rule.freq, s, a, settings.weekStart)
      expect(between % rule.interval).toBe(0)
      expectUnits(p, rule, settings)
    },
    { fastCheck: { numRuns: 300 } }
  )

  it.prop("consecutive periods tile time: end of one = start of the next, and each instant has exactly one", [settingsArb, fc.boolean()], ([{ at, rule, settings }, anchored]) => {
    const anchor = anchored ? periodContaining(rule, settings, new Date(at)).start : undefined
    const periods: Array<Period> = [periodContaining(rule, settings, new Date(at), anchor)]
    for (let i = 0; i < 4; i++) {
      const start = periods[i]!.end
      periods.push({ start, end: periodEndFrom(rule, settings, start) })
    }
    const series = periods[0]!.start
    for (const [i, p] of periods.entries()) {
      expect(p.end.getTime()).toBeGreaterThan(p.start.getTime())
      if (i > 0) expect(p.start.getTime()).toBe(periods[i - 1]!.end.getTime())
      expectBoundary(p.start.getTime(), rule, settings)
      expectUnits(p, rule, settings)
      // No gap, no overlap: the first and last instants of each, and one in the middle, map back to it.
      const mid = Math.floor((p.start.getTime() + p.end.getTime()) / 2)
      for (const t of [p.start.getTime(), mid, p.end.getTime() - 1]) {
        expect(iso(periodContaining(rule, settings, new Date(t), series))).toEqual(iso(p))
      }
    }
  }, { fastCheck: { numRuns: 250 } })

  it.prop(
    "nextBoundary after a week_start change: a short period of at most one week, then full intervals",
    [zonedInstantArb, weekStartArb, weekStartArb, intervalArb],
    ([{ at, zone }, oldStart, newStart, interval]) => {
      const rule: PeriodRule = { freq: "WEEKLY", interval }
      const old: PeriodSettings = { zone, weekStart: oldStart }
      const changed: PeriodSettings = { zone, weekStart: newStart }
      const current = periodContaining(rule, old, new Date(at))
      const boundary = nextBoundary(rule, changed, current.start).getTime()
      const s = current.start.getTime()
      expect(boundary).toBeGreaterThan(s)
      expectBoundary(boundary, { freq: "WEEKLY", interval: 1 }, changed)
      // Day by day from the day after the start to the first day of a new-style week.
      let d = dateAt(s, zone) + 1
      while (!isUnitStart("WEEKLY", d, newStart)) d++
      expect(boundary).toBe(dayStart(d, zone))
      const days = dateAt(boundary, zone) - dateAt(s, zone)
      expect(days).toBeGreaterThanOrEqual(1)
      expect(days).toBeLessThanOrEqual(7)
      // The short period holds at most one unit; the next period is a full interval.
      expect(unitsIn("WEEKLY", dateAt(s, zone), dateAt(boundary, zone), newStart)).toBeLessThanOrEqual(1)
      const full = { start: new Date(boundary), end: periodEndFrom(rule, changed, new Date(boundary)) }
      expectUnits(full, rule, changed)
      expect(dateAt(full.end.getTime(), zone) - dateAt(boundary, zone)).toBe(7 * interval)
    },
    { fastCheck: { numRuns: 300 } }
  )

  it.prop(
    "nextBoundary under another zone: the first unit start strictly after the instant",
    [settingsArb, zoneArb],
    ([{ at, rule, settings }, newZone]) => {
      const changed: PeriodSettings = { zone: newZone, weekStart: settings.weekStart }
      const after = periodContaining(rule, settings, new Date(at)).start.getTime()
      const boundary = nextBoundary(rule, changed, new Date(after)).getTime()
      expect(boundary).toBeGreaterThan(after)
      // The period start is the first instant of its local date there, so the next unit
      // start is on a later date: walk to it day by day. A day whose start is not after the
      // instant is passed over too: where clocks went back across midnight (St. John's
      // until 2011, at 00:01), the instant can show the previous date again while its day,
      // which began before it, is already the new one (README: quotas).
      let d = dateAt(after, newZone) + 1
      while (!isUnitStart(rule.freq, d, settings.weekStart) || dayStart(d, newZone) <= after) d++
      expect(new Date(boundary).toISOString()).toBe(new Date(dayStart(d, newZone)).toISOString())
    },
    { fastCheck: { numRuns: 200 } }
  )

  it.prop(
    "endedPeriods returns exactly the periods that ended by now, in order, and the one holding now",
    [settingsArb, fc.integer({ min: 0, max: 40 }), fc.double({ min: 0, max: 1, noNaN: true })],
    ([{ at, rule, settings }, units, fraction]) => {
      const current = periodContaining(rule, settings, new Date(at))
      // Up to 40 periods later, anywhere inside the period reached.
      let target: Period = current
      for (let i = 0; i < units; i++) target = { start: target.end, end: periodEndFrom(rule, settings, target.end) }
      const now = target.start.getTime() + Math.floor(fraction * (target.end.getTime() - target.start.getTime() - 1))
      const { ended, next } = endedPeriods(rule, settings, current, new Date(now))
      // The oracle: walk the tiles from the current period, keeping those ending by now.
      const expected: Array<{ start: number; end: number }> = []
      let tile = ms(current)
      while (tile.end <= now) {
        expected.push(tile)
        const endDay = walkUnits(rule.freq, dateAt(tile.end, settings.zone), rule.interval, settings.weekStart)
        tile = { start: tile.end, end: dayStart(endDay, settings.zone) }
      }
      expect(ended.map(ms)).toEqual(expected)
      expect(ended.length).toBe(units)
      expect(ms(next)).toEqual(tile)
      expect(next.start.getTime()).toBeLessThanOrEqual(now)
      expect(next.end.getTime()).toBeGreaterThan(now)
      for (const p of ended) expect(p.end.getTime()).toBeLessThanOrEqual(now)
    },
    { fastCheck: { numRuns: 200 } }
  )

  it.prop("endedPeriods with a limit stops there and jumps to the period holding now", [settingsArb, fc.integer({ min: 1, max: 5 })], ([{ at, rule, settings }, limit]) => {
    const current = periodContaining(rule, settings, new Date(at))
    let far: Period = current
    for (let i = 0; i < limit + 3; i++) far = { start: far.end, end: periodEndFrom(rule, settings, far.end) }
    const now = far.start.getTime() + 1
    const { ended, next } = endedPeriods(rule, settings, current, new Date(now), limit)
    expect(ended.length).toBe(limit)
    expect(iso(ended[0]!)).toEqual(iso(current))
    expect(iso(next)).toEqual(iso(far))
  }, { fastCheck: { numRuns: 100 } })
})

describe("23- and 25-hour days", () => {
  it("every daily period of 2026 in every zone runs from one local midnight to the next", () => {
    const rule: PeriodRule = { freq: "DAILY", interval: 1 }
    const lengths = new Map<string, Set<number>>()
    for (const zone of ZONES) {
      const settings: PeriodSettings = { zone, weekStart: "sunday" }
      const seen = new Set<number>()
      for (let d = dayNo(2026, 1, 1); d < dayNo(2027, 1, 1); d++) {
        const start = dayStart(d, zone)
        const end = dayStart(d + 1, zone)
        const p = periodContaining(rule, settings, new Date(start + Math.floor((end - start) / 2)))
        expect(ms(p)).toEqual({ start, end })
        seen.add((end - start) / MINUTE)
      }
      lengths.set(zone, seen)
    }
    expect([...lengths.get("UTC")!]).toEqual([24 * 60])
    expect([...lengths.get("Asia/Kolkata")!]).toEqual([24 * 60])
    for (const zone of ["America/New_York", "Europe/Berlin", "Australia/Sydney"]) {
      expect([...lengths.get(zone)!].sort()).toEqual([23 * 60, 24 * 60, 25 * 60].sort())
    }
    expect([...lengths.get("Australia/Lord_Howe")!].sort()).toEqual([23.5 * 60, 24 * 60, 24.5 * 60].sort())
  })

  const cases: ReadonlyArray<readonly [string, string, string, string, number]> = [
    // zone, an instant that day, expected start, expected end, hours
    ["America/New_York", "2026-03-08T15:00:00Z", "2026-03-08T05:00:00.000Z", "2026-03-09T04:00:00.000Z", 23],
    ["America/New_York", "2026-11-01T15:00:00Z", "2026-11-01T04:00:00.000Z", "2026-11-02T05:00:00.000Z", 25],
    ["Europe/Berlin", "2026-03-29T10:00:00Z", "2026-03-28T23:00:00.000Z", "2026-03-29T22:00:00.000Z", 23],
    ["Europe/Berlin", "2026-10-25T10:00:00Z", "2026-10-24T22:00:00.000Z", "2026-10-25T23:00:00.000Z", 25],
    ["Australia/Sydney", "2026-04-05T03:00:00Z", "2026-04-04T13:00:00.000Z", "2026-04-05T14:00:00.000Z", 25],
    ["Australia/Sydney", "2026-10-04T03:00:00Z", "2026-10-03T14:00:00.000Z", "2026-10-04T13:00:00.000Z", 23],
    ["Asia/Kolkata", "2026-03-08T12:00:00Z", "2026-03-07T18:30:00.000Z", "2026-03-08T18:30:00.000Z", 24],
    // Brazil's clocks went forward at midnight: that day began at 01:00 and had 23 hours.
    ["America/Sao_Paulo", "2018-11-04T12:00:00Z", "2018-11-04T03:00:00.000Z", "2018-11-05T02:00:00.000Z", 23],
    // …and back at midnight: the day before ran 23:00-24:00 twice.
    ["America/Sao_Paulo", "2018-02-17T12:00:00Z", "2018-02-17T02:00:00.000Z", "2018-02-18T03:00:00.000Z", 25]
  ]
  for (const [zone, at, start, end, hours] of cases) {
    it(`${zone}: the day of ${at.slice(0, 10)} has ${hours} hours`, () => {
      const p = periodContaining({ freq: "DAILY", interval: 1 }, { zone, weekStart: "sunday" }, new Date(at))
      expect(iso(p)).toEqual({ start, end })
      expect((p.end.getTime() - p.start.getTime()) / HOUR).toBe(hours)
    })
  }

  it("a week holding a DST change lasts 167 or 169 hours", () => {
    const ny: PeriodSettings = { zone: "America/New_York", weekStart: "sunday" }
    const spring = periodContaining({ freq: "WEEKLY", interval: 1 }, ny, new Date("2026-03-11T12:00:00Z"))
    expect(iso(spring)).toEqual({ start: "2026-03-08T05:00:00.000Z", end: "2026-03-15T04:00:00.000Z" })
    expect((spring.end.getTime() - spring.start.getTime()) / HOUR).toBe(167)
    const fall = periodContaining({ freq: "WEEKLY", interval: 1 }, { ...ny, weekStart: "monday" }, new Date("2026-10-28T12:00:00Z"))
    expect(iso(fall)).toEqual({ start: "2026-10-26T04:00:00.000Z", end: "2026-11-02T05:00:00.000Z" })
    expect((fall.end.getTime() - fall.start.getTime()) / HOUR).toBe(169)
  })

  it("St. John's 2010: the hour after midnight that shows the previous date again belongs to the new day", () => {
    // At 00:01 NDT on 7 Nov 2010 the clocks went back to 23:01 NST on the 6th.
    const settings: PeriodSettings = { zone: "America/St_Johns", weekStart: "sunday" }
    const rule: PeriodRule = { freq: "DAILY", interval: 1 }
    const sixth = periodContaining(rule, settings, new Date("2010-11-06T12:00:00Z"))
    expect(iso(sixth)).toEqual({ start: "2010-11-06T02:30:00.000Z", end: "2010-11-07T02:30:00.000Z" })
    const repeated = new Date("2010-11-07T03:00:00Z") // shows 23:30 on the 6th, after the 7th began
    const p = periodContaining(rule, settings, repeated)
    expect(p.start.getTime()).toBeLessThanOrEqual(repeated.getTime())
    expect(p.end.getTime()).toBeGreaterThan(repeated.getTime())
    expect(iso(p)).toEqual({ start: "2010-11-07T02:30:00.000Z", end: "2010-11-08T03:30:00.000Z" })
    expect(iso(p)).toEqual({ start: sixth.end.toISOString(), end: periodEndFrom(rule, settings, sixth.end).toISOString() })
  })
})

describe("St. John's repeated hour and Apia's skipped day", () => {
  const stJohns = (weekStart: WeekStartDay = "sunday"): PeriodSettings => ({ zone: "America/St_Johns", weekStart })
  // 2 Nov 2008, 00:01 NDT → 23:01 NST on the 1st: this instant shows Nov 1 23:19 for the
  // second time, after Nov 2 began at 02:30Z.
  const repeated = new Date("2008-11-02T02:49:38.945Z")

  it("nextBoundary is strictly after `after` and is where periodContaining ends", () => {
    const daily: PeriodRule = { freq: "DAILY", interval: 1 }
    expect(nextBoundary(daily, stJohns(), repeated).toISOString()).toBe("2008-11-03T03:30:00.000Z")
    expect(periodContaining(daily, stJohns(), repeated).end.toISOString()).toBe("2008-11-03T03:30:00.000Z")
    // 2 Nov 2008 was a Sunday: the repeated hour is in the week that began then.
    const weekly: PeriodRule = { freq: "WEEKLY", interval: 1 }
    expect(nextBoundary(weekly, stJohns("sunday"), repeated).toISOString()).toBe("2008-11-09T03:30:00.000Z")
    expect(nextBoundary(weekly, stJohns("monday"), repeated).toISOString()).toBe("2008-11-03T03:30:00.000Z")
    expect(periodContaining(weekly, stJohns("sunday"), repeated).end.toISOString()).toBe("2008-11-09T03:30:00.000Z")
    // Found by the property above (seed 90342229): Santiago's midnight of 1 Nov 2009 is
    // 23:30 NST in St. John's, in the hour repeated after its Nov 1 began at 02:30Z.
    expect(nextBoundary(daily, stJohns(), new Date("2009-11-01T03:00:00.000Z")).toISOString()).toBe("2009-11-02T03:30:00.000Z")
  })

  it("nearestBoundary never answers at or before `after`", () => {
    const daily: PeriodRule = { freq: "DAILY", interval: 1 }
    const target = new Date("2008-11-02T02:50:00.000Z")
    expect(nearestBoundary(daily, stJohns(), target, repeated).toISOString()).toBe("2008-11-03T03:30:00.000Z")
    // A target before `after` too: the first boundary after `after`.
    expect(nearestBoundary(daily, stJohns(), new Date("2008-11-02T02:00:00Z"), repeated).toISOString())
      .toBe("2008-11-03T03:30:00.000Z")
  })

  it("INTERVAL=2 anchored in the repeated hour starts on the new day (README: quotas)", () => {
    const p = periodContaining({ freq: "DAILY", interval: 2 }, stJohns(), repeated)
    expect(iso(p)).toEqual({ start: "2008-11-02T02:30:00.000Z", end: "2008-11-04T03:30:00.000Z" })
  })

  it("Apia skipped 30 Dec 2011: daily INTERVAL counts days that happened", () => {
    const apia: PeriodSettings = { zone: "Pacific/Apia", weekStart: "sunday" }
    const rule: PeriodRule = { freq: "DAILY", interval: 2 }
    const anchor = new Date("2011-12-28T10:00:00Z") // 28 Dec 00:00 -10
    const first = periodContaining(rule, apia, new Date("2011-12-29T12:00:00Z"), anchor)
    expect(iso(first)).toEqual({ start: "2011-12-28T10:00:00.000Z", end: "2011-12-30T10:00:00.000Z" })
    // 29 Dec was followed by 31 Dec (+14): the next period is 31 Dec and 1 Jan.
    const second = periodContaining(rule, apia, new Date("2011-12-31T12:00:00Z"), anchor)
    expect(iso(second)).toEqual({ start: "2011-12-30T10:00:00.000Z", end: "2012-01-01T10:00:00.000Z" })
    expect(periodEndFrom(rule, apia, first.end).toISOString()).toBe(second.end.toISOString())
    const { ended, next } = endedPeriods(rule, apia, first, new Date("2012-01-01T11:00:00Z"))
    expect(ended.map(iso)).toEqual([iso(first), iso(second)])
    expect(iso(next)).toEqual({ start: "2012-01-01T10:00:00.000Z", end: "2012-01-03T10:00:00.000Z" })
  })
})

describe("concrete periods", () => {
  const ny = (weekStart: WeekStartDay): PeriodSettings => ({ zone: "America/New_York", weekStart })

  it("weeks start at midnight on the user's first day of the week", () => {
    const wed = new Date("2026-03-11T12:00:00Z")
    expect(iso(periodContaining({ freq: "WEEKLY", interval: 1 }, ny("sunday"), wed))).toEqual({
      start: "2026-03-08T05:00:00.000Z",
      end: "2026-03-15T04:00:00.000Z"
    })
    expect(iso(periodContaining({ freq: "WEEKLY", interval: 1 }, ny("monday"), wed))).toEqual({
      start: "2026-03-09T04:00:00.000Z",
      end: "2026-03-16T04:00:00.000Z"
    })
  })

  it("months start on the 1st and years on January 1, at local midnight", () => {
    const sydney: PeriodSettings = { zone: "Australia/Sydney", weekStart: "sunday" }
    expect(iso(periodContaining({ freq: "MONTHLY", interval: 1 }, sydney, new Date("2026-04-10T00:00:00Z")))).toEqual({
      start: "2026-03-31T13:00:00.000Z", // 1 April 00:00 AEDT (+11)
      end: "2026-04-30T14:00:00.000Z" // 1 May 00:00 AEST (+10)
    })
    const kolkata: PeriodSettings = { zone: "Asia/Kolkata", weekStart: "sunday" }
    expect(iso(periodContaining({ freq: "YEARLY", interval: 1 }, kolkata, new Date("2026-06-01T00:00:00Z")))).toEqual({
      start: "2025-12-31T18:30:00.000Z",
      end: "2026-12-31T18:30:00.000Z"
    })
  })

  it("INTERVAL counts whole units from the anchor", () => {
    const rule: PeriodRule = { freq: "WEEKLY", interval: 2 }
    const anchor = new Date("2026-03-01T05:00:00Z") // Sunday 1 March, 00:00 EST
    expect(iso(periodContaining(rule, ny("sunday"), new Date("2026-03-11T12:00:00Z"), anchor))).toEqual({
      start: "2026-03-01T05:00:00.000Z",
      end: "2026-03-15T04:00:00.000Z"
    })
    expect(iso(periodContaining(rule, ny("sunday"), new Date("2026-03-16T12:00:00Z"), anchor))).toEqual({
      start: "2026-03-15T04:00:00.000Z",
      end: "2026-03-29T04:00:00.000Z"
    })
    // Before the anchor too.
    expect(iso(periodContaining(rule, ny("sunday"), new Date("2026-02-20T12:00:00Z"), anchor))).toEqual({
      start: "2026-02-15T05:00:00.000Z",
      end: "2026-03-01T05:00:00.000Z"
    })
    const months: PeriodRule = { freq: "MONTHLY", interval: 3 }
    const utc: PeriodSettings = { zone: "UTC", weekStart: "sunday" }
    expect(iso(periodContaining(months, utc, new Date("2026-12-15T00:00:00Z"), new Date("2026-02-01T00:00:00Z")))).toEqual({
      start: "2026-11-01T00:00:00.000Z",
      end: "2027-02-01T00:00:00.000Z"
    })
  })

  it("nextBoundary: switching a Sunday week to Monday ends it the next day; switching back ends it 6 days later", () => {
    const rule: PeriodRule = { freq: "WEEKLY", interval: 2 }
    expect(nextBoundary(rule, ny("monday"), new Date("2026-03-08T05:00:00Z")).toISOString()).toBe("2026-03-09T04:00:00.000Z")
    expect(nextBoundary(rule, ny("sunday"), new Date("2026-03-09T04:00:00Z")).toISOString()).toBe("2026-03-15T04:00:00.000Z")
    // Already on a boundary of the new kind: the next one, a week later.
    expect(nextBoundary(rule, ny("sunday"), new Date("2026-03-08T05:00:00Z")).toISOString()).toBe("2026-03-15T04:00:00.000Z")
    expect(periodEndFrom(rule, ny("monday"), new Date("2026-03-09T04:00:00Z")).toISOString()).toBe("2026-03-23T04:00:00.000Z")
  })

  it("endedPeriods after an outage lists each missed day", () => {
    const rule: PeriodRule = { freq: "DAILY", interval: 1 }
    const utc: PeriodSettings = { zone: "UTC", weekStart: "sunday" }
    const current = { start: new Date("2026-03-01T00:00:00Z"), end: new Date("2026-03-02T00:00:00Z") }
    const { ended, next } = endedPeriods(rule, utc, current, new Date("2026-03-04T12:00:00Z"))
    expect(ended.map(iso)).toEqual([
      { start: "2026-03-01T00:00:00.000Z", end: "2026-03-02T00:00:00.000Z" },
      { start: "2026-03-02T00:00:00.000Z", end: "2026-03-03T00:00:00.000Z" },
      { start: "2026-03-03T00:00:00.000Z", end: "2026-03-04T00:00:00.000Z" }
    ])
    expect(iso(next)).toEqual({ start: "2026-03-04T00:00:00.000Z", end: "2026-03-05T00:00:00.000Z" })
    // A period ending exactly now has ended.
    expect(endedPeriods(rule, utc, current, new Date("2026-03-02T00:00:00Z")).ended.length).toBe(1)
    expect(endedPeriods(rule, utc, current, new Date("2026-03-01T23:59:59.999Z")).ended.length).toBe(0)
  })

  it("parsePeriodRule reads FREQ and INTERVAL and refuses anything else", () => {
    expect(parsePeriodRule("FREQ=WEEKLY;INTERVAL=2")).toEqual(Either.right({ freq: "WEEKLY", interval: 2 }))
    expect(parsePeriodRule("INTERVAL=3;FREQ=MONTHLY")).toEqual(Either.right({ freq: "MONTHLY", interval: 3 }))
    expect(parsePeriodRule("RRULE:freq=daily")).toEqual(Either.right({ freq: "DAILY", interval: 1 }))
    for (const bad of ["FREQ=WEEKLY;BYDAY=MO", "FREQ=HOURLY", "FREQ=DAILY;INTERVAL=0", "", "FREQ=YEARLY;INTERVAL=1001"]) {
      expect(Either.isLeft(parsePeriodRule(bad)), bad).toBe(true)
    }
  })
})
