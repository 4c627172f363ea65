import { Temporal } from "@js-temporal/polyfill"
import {
  endedPeriods,
  nearestBoundary,
  nextBoundary,
  type Period,
  type PeriodFreq,
  periodContaining,
  type PeriodRule,
  type PeriodSettings,
  type WeekStartDay
} from "../../src/quotas/QuotaPeriods.js"
import { DAY, DST_EDGE_ZONES, FROM, HOUR, MAX_EXAMPLES, type OracleReport, type Random, seededRandom, TO } from "./common.js"

/*
 * The period half of the Temporal oracle: nextBoundary, nearestBoundary, periodContaining and
 * endedPeriods against expectations computed with Temporal (`@js-temporal/polyfill`), which
 * shares no code with src/kernel/LocalTime.ts or QuotaPeriods.ts.
 *
 * The rules the expectations encode (README, quotas):
 * - An instant belongs to the latest local date whose start of day (Temporal's
 *   `startOfDay`: the first instant of the date) it has reached.
 * - A unit (day, week from week_start, month, year) starts at the start of its first date.
 * - INTERVAL counts whole units from the anchor's unit (without an anchor, the unit holding
 *   the instant); a date no instant shows (Apia, Fakaofo: 30 Dec 2011) is not a day.
 */



export const PERIOD_ZONES = [
  ...DST_EDGE_ZONES,
  "America/New_York",
  "Europe/Berlin",
  "Australia/Sydney",
  "Asia/Kolkata",
  "America/Sao_Paulo",
  "Asia/Kathmandu",
  "UTC"
] as const

// ---------------------------------------------------------------------------------------
// Seeded randomness (mulberry32): a seed reproduces a run.
// ---------------------------------------------------------------------------------------


// ---------------------------------------------------------------------------------------
// Temporal expectations
// ---------------------------------------------------------------------------------------

type PlainDate = Temporal.PlainDate

const startCache = new Map<string, number>()
/** The first instant of a local date (Temporal's start of day), in epoch ms. */
const startOfDay = (zone: string, date: PlainDate): number => {
  const key = `${zone}|${date.toString()}`
  const cached = startCache.get(key)
  if (cached !== undefined) return cached
  if (startCache.size > 400_000) startCache.clear()
  const t = date.toZonedDateTime({ timeZone: zone }).epochMilliseconds
  startCache.set(key, t)
  return t
}

const zoned = (zone: string, t: number) => Temporal.Instant.fromEpochMilliseconds(t).toZonedDateTimeISO(zone)

/** The latest date whose start of day `t` has reached. */
const dayOf = (zone: string, t: number): PlainDate => {
  let date = zoned(zone, t).toPlainDate()
  // A clock set back across midnight shows the previous date after the next one began.
  for (;;) {
    const next = date.add({ days: 1 })
    if (startOfDay(zone, next) > t) return date
    date = next
  }
}

const transitionCache = new Map<string, ReadonlyArray<number>>()
/** Every offset change of the zone from 1995 to 2040, epoch ms. */
const transitionsOf = (zone: string): ReadonlyArray<number> => {
  const cached = transitionCache.get(zone)
  if (cached !== undefined) return cached
  const out: Array<number> = []
  let at: Temporal.ZonedDateTime | null = zoned(zone, FROM)
  while (at !== null && at.epochMilliseconds < TO) {
    at = at.getTimeZoneTransition("next")
    if (at !== null && at.epochMilliseconds < TO) out.push(at.epochMilliseconds)
  }
  transitionCache.set(zone, out)
  return out
}

const skippedCache = new Map<string, ReadonlyArray<PlainDate>>()
/** Dates no instant shows: between the date before a transition and the date after it. */
const skippedDates = (zone: string): ReadonlyArray<PlainDate> => {
  const cached = skippedCache.get(zone)
  if (cached !== undefined) return cached
  const out: Array<PlainDate> = []
  for (const t of transitionsOf(zone)) {
    const before = zoned(zone, t - 1).toPlainDate()
    const after = zoned(zone, t).toPlainDate()
    for (let d = before.add({ days: 1 }); Temporal.PlainDate.compare(d, after) < 0; d = d.add({ days: 1 })) out.push(d)
  }
  skippedCache.set(zone, out)
  return out
}

/** Days that happened in [a, b) (negative when b is before a). */
const livedDays = (zone: string, a: PlainDate, b: PlainDate): number => {
  const sign = Temporal.PlainDate.compare(a, b) <= 0 ? 1 : -1
  const [lo, hi] = sign === 1 ? [a, b] : [b, a]
  const skipped = skippedDates(zone).filter((d) =>
    Temporal.PlainDate.compare(lo, d) <= 0 && Temporal.PlainDate.compare(d, hi) < 0
  ).length
  return sign * (lo.until(hi, { largestUnit: "days" }).days - skipped)
}

const ISO_WEEKDAY: Record<WeekStartDay, number> = { monday: 1, sunday: 7 }

const unitStart = (freq: PeriodFreq, date: PlainDate, weekStart: WeekStartDay): PlainDate => {
  switch (freq) {
    case "DAILY":
      return date
    case "WEEKLY":
      return date.subtract({ days: (date.dayOfWeek - ISO_WEEKDAY[weekStart] + 7) % 7 })
    case "MONTHLY":
      return date.with({ day: 1 })
    case "YEARLY":
      return date.with({ month: 1, day: 1 })
  }
}

const unitsBetween = (freq: PeriodFreq, zone: string, a: PlainDate, b: PlainDate): number => {
  switch (freq) {
    case "DAILY":
      return livedDays(zone, a, b)
    case "WEEKLY":
      return a.until(b, { largestUnit: "days" }).days / 7
    case "MONTHLY":
      return a.until(b, { largestUnit: "months" }).months
    case "YEARLY":
      return a.until(b, { largestUnit: "years" }).years
  }
}

const addUnits = (freq: PeriodFreq, zone: string, a: PlainDate, n: number): PlainDate => {
  switch (freq) {
    case "DAILY": {
      // Calendar days, then a day further for each skipped date passed over.
      let d = a.add({ days: n })
      while (livedDays(zone, a, d) < n) d = d.add({ days: 1 })
      while (livedDays(zone, a, d) > n) d = d.subtract({ days: 1 })
      return d
    }
    case "WEEKLY":
      return a.add({ weeks: n })
    case "MONTHLY":
      return a.add({ months: n })
    case "YEARLY":
      return a.add({ years: n })
  }
}

interface Span {
  readonly start: number
  readonly end: number
}

const unitAt = (rule: PeriodRule, settings: PeriodSettings, t: number) =>
  unitStart(rule.freq, dayOf(settings.zone, t), settings.weekStart)

/** The tile [anchor unit + k·I, + (k+1)·I) holding `at`. */
export const expectedPeriod = (rule: PeriodRule, settings: PeriodSettings, at: number, anchor?: number): Span => {
  const unit = unitAt(rule, settings, at)
  const first = anchor === undefined ? unit : unitAt(rule, settings, anchor)
  const k = Math.floor(unitsBetween(rule.freq, settings.zone, first, unit) / rule.interval)
  const startDate = addUnits(rule.freq, settings.zone, first, k * rule.interval)
  const endDate = addUnits(rule.freq, settings.zone, startDate, rule.interval)
  return { start: startOfDay(settings.zone, startDate), end: startOfDay(settings.zone, endDate) }
}

const expectedNextBoundary = (rule: PeriodRule, settings: PeriodSettings, after: number): number =>
  startOfDay(settings.zone, addUnits(rule.freq, settings.zone, unitAt(rule, settings, after), 1))

/** Of the unit boundaries later than `after`, the nearest to `target`; ties to the earlier. */
const expectedNearestBoundary = (rule: PeriodRule, settings: PeriodSettings, target: number, after: number): number => {
  const unit = unitAt(rule, settings, target - 1)
  const earlier = startOfDay(settings.zone, unit)
  const later = startOfDay(settings.zone, addUnits(rule.freq, settings.zone, unit, 1))
  if (later <= after) return expectedNextBoundary(rule, settings, after)
  if (earlier <= after) return later
  return target - earlier <= later - target ? earlier : later
}

// ---------------------------------------------------------------------------------------
// Case generation
// ---------------------------------------------------------------------------------------

const FREQS: ReadonlyArray<PeriodFreq> = ["DAILY", "WEEKLY", "MONTHLY", "YEARLY"]
const WEEK_STARTS: ReadonlyArray<WeekStartDay> = ["sunday", "monday"]
const NUDGES = [0, 1, -1, HOUR, -HOUR, 30 * 60_000, -30 * 60_000]

const clamp = (t: number) => Math.min(TO, Math.max(FROM, t))

/** An instant in 1995-2040: uniform, or within three days of an offset change (often ±1 ms/±1 h). */
const instant = (random: Random, zone: string): number => {
  const changes = transitionsOf(zone)
  const roll = random.next()
  if (roll < 0.25 || changes.length === 0) return random.int(FROM, TO)
  const change = random.pick(changes)
  if (roll < 0.55) return clamp(change + random.pick(NUDGES))
  return clamp(change + random.int(-3 * DAY, 3 * DAY))
}

const interval = (random: Random) => {
  const roll = random.next()
  return roll < 0.5 ? 1 : roll < 0.8 ? random.int(2, 3) : random.int(4, 12)
}

/** Often moved onto a local midnight or a period boundary, ±1 ms / ±1 h / ±30 min. */
const nearBoundary = (random: Random, rule: PeriodRule, settings: PeriodSettings, t: number): number => {
  const roll = random.next()
  if (roll < 0.35) return t
  if (roll < 0.65) return clamp(startOfDay(settings.zone, dayOf(settings.zone, t)) + random.pick(NUDGES))
  const p = expectedPeriod(rule, settings, t)
  return clamp((random.next() < 0.5 ? p.start : p.end) + random.pick(NUDGES))
}

interface Case {
  readonly rule: PeriodRule
  readonly settings: PeriodSettings
  readonly at: number
}

const makeCase = (random: Random): Case => {
  const zone = random.pick(PERIOD_ZONES)
  const rule: PeriodRule = { freq: random.pick(FREQS), interval: interval(random) }
  const settings: PeriodSettings = { zone, weekStart: random.pick(WEEK_STARTS) }
  return { rule, settings, at: nearBoundary(random, rule, settings, instant(random, zone)) }
}

const iso = (t: number) => new Date(t).toISOString()
const showSpan = (s: Span) => `[${iso(s.start)}, ${iso(s.end)})`
const spanOf = (p: Period): Span => ({ start: p.start.getTime(), end: p.end.getTime() })
const sameSpan = (a: Span, b: Span) => a.start === b.start && a.end === b.end
const describe = (c: Case) =>
  `${c.settings.zone} FREQ=${c.rule.freq};INTERVAL=${c.rule.interval} week_start=${c.settings.weekStart}`

/** One check; a divergence comes back as its description. */
type Check = (random: Random, c: Case) => string | undefined

const checkPeriodContaining: Check = (random, c) => {
  const anchor = random.next() < 0.5
    ? undefined
    : expectedPeriod(c.rule, c.settings, clamp(c.at + random.int(-1200, 1200) * DAY)).start
  const expected = expectedPeriod(c.rule, c.settings, c.at, anchor)
  const actual = spanOf(periodContaining(c.rule, c.settings, new Date(c.at), anchor === undefined ? undefined : new Date(anchor)))
  if (!(expected.start <= c.at && c.at < expected.end)) return `oracle: ${showSpan(expected)} does not hold ${iso(c.at)}`
  if (sameSpan(expected, actual)) return undefined
  const anchorText = anchor === undefined ? "" : ` anchor ${iso(anchor)}`
  return `periodContaining ${describe(c)} at ${iso(c.at)}${anchorText}: got ${showSpan(actual)}, expected ${showSpan(expected)}`
}

const checkNextBoundary: Check = (_random, c) => {
  const expected = expectedNextBoundary(c.rule, c.settings, c.at)
  const actual = nextBoundary(c.rule, c.settings, new Date(c.at)).getTime()
  if (expected <= c.at) return `oracle: next boundary ${iso(expected)} is not after ${iso(c.at)}`
  return actual === expected
    ? undefined
    : `nextBoundary ${describe(c)} after ${iso(c.at)}: got ${iso(actual)}, expected ${iso(expected)}`
}

const checkNearestBoundary: Check = (random, c) => {
  // As when a zone changes: the old period's end is the target, its start the lower bound.
  const target = clamp(c.at + random.int(-2 * DAY, 40 * DAY))
  const after = random.next() < 0.8 ? c.at : clamp(target - random.int(0, 3 * HOUR))
  const expected = expectedNearestBoundary(c.rule, c.settings, target, after)
  const actual = nearestBoundary(c.rule, c.settings, new Date(target), new Date(after)).getTime()
  if (expected <= after) return `oracle: nearest boundary ${iso(expected)} is not after ${iso(after)}`
  return actual === expected
    ? undefined
    : `nearestBoundary ${describe(c)} target ${iso(target)} after ${iso(after)}: got ${iso(actual)}, expected ${iso(expected)}`
}

const checkEndedPeriods: Check = (random, c) => {
  const anchor = random.next() < 0.5
    ? undefined
    : expectedPeriod(c.rule, c.settings, clamp(c.at + random.int(-400, 400) * DAY)).start
  const tile = expectedPeriod(c.rule, c.settings, c.at, anchor)
  // Sometimes a period closed early and restarted at `at` (done with close_period).
  const current: Span = random.next() < 0.3 ? { start: c.at, end: tile.end } : tile
  const units = random.int(0, 6) * c.rule.interval
  const roughNow = tile.end + units * DAY * (c.rule.freq === "DAILY" ? 1 : c.rule.freq === "WEEKLY" ? 7 : 30) +
    random.int(-2 * DAY, 2 * DAY)
  const now = clamp(random.next() < 0.4 ? nearBoundary(random, c.rule, c.settings, roughNow) : roughNow)
  const limit = random.next() < 0.2 ? random.int(1, 3) : 1000
  // Periods after `current` are full ones counted from its end.
  const expectedEnded: Array<Span> = []
  let period = current
  while (period.end <= now && expectedEnded.length < limit) {
    expectedEnded.push(period)
    period = expectedPeriod(c.rule, c.settings, period.end, current.end)
  }
  const expectedNext = current.end > now ? current : expectedPeriod(c.rule, c.settings, now, current.end)
  const actual = endedPeriods(
    c.rule,
    c.settings,
    { start: new Date(current.start), end: new Date(current.end) },
    new Date(now),
    limit
  )
  const ended = actual.ended.map(spanOf)
  const same = ended.length === expectedEnded.length && ended.every((p, i) => sameSpan(p, expectedEnded[i]!)) &&
    sameSpan(spanOf(actual.next), expectedNext)
  if (same) return undefined
  return `endedPeriods ${describe(c)} current ${showSpan(current)} now ${iso(now)} limit ${limit}: got ` +
    `${ended.map(showSpan).join(" ")} next ${showSpan(spanOf(actual.next))}, expected ` +
    `${expectedEnded.map(showSpan).join(" ")} next ${showSpan(expectedNext)}`
}

const CHECKS: ReadonlyArray<Check> = [checkPeriodContaining, checkNextBoundary, checkNearestBoundary, checkEndedPeriods]

/**
 * `cases` generated cases from `seed`, each one check of one of the four functions in turn.
 * A check that throws counts as a divergence too.
 */
export const runPeriodOracle = (cases: number, seed: number): OracleReport => {
  const random = seededRandom(seed)
  const examples: Array<string> = []
  let divergences = 0
  for (let i = 0; i < cases; i++) {
    const c = makeCase(random)
    let problem: string | undefined
    try {
      problem = CHECKS[i % CHECKS.length]!(random, c)
    } catch (error) {
      problem = `${describe(c)} at ${iso(c.at)}: threw ${String(error)}`
    }
    if (problem !== undefined) {
      divergences++
      if (examples.length < MAX_EXAMPLES) examples.push(problem)
    }
  }
  return { cases, divergences, examples }
}
