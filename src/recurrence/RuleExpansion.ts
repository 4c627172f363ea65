import { Either } from "effect"
import { DAILY, HOURLY, MONTHLY, type ParsedRule, WEEKLY, YEARLY } from "./Recurrence.js"
import {
  civilFromDays,
  DAY_MS,
  type DayFilter,
  dayFilter,
  daysFromCivil,
  maxCandidatesPerPeriod,
  monthLength,
  passes,
  weekdayOf
} from "./RuleCalendar.js"
import { instantOfWall, wallOf } from "../kernel/ZoneOffsets.js"

/**
 * A bounded RFC 5545 expander on the local calendar. It replaces `rrule`'s iteration, which
 * walks every period from DTSTART (decades of hours for an old series), has no bound on
 * periods that never match (it loops forever on HOURLY;INTERVAL=2;BYHOUR=1) and cannot be
 * interrupted because it runs synchronously.
 *
 * Here a search jumps straight to the period near the instant it needs (INTERVAL keeps its
 * phase: periods count from the series start's period), expands one period at a time into
 * wall times, converts each to an instant, and spends at most `BUDGET` units (a period, a day
 * examined or a candidate each) before giving up with a refusal. Wall times are floating
 * milliseconds (the wall clock's fields read as UTC).
 *
 * DST: a candidate's wall time becomes an instant by `instantOfWall` — a skipped wall time
 * moves forward by the gap, a repeated one takes its first instant — so only that occurrence
 * moves; the series keeps counting on its wall times.
 */

export const BUDGET = 40_000
export const TOO_EXPENSIVE = `cannot be evaluated within ${BUDGET} steps (its matches are too sparse); simplify it`
// The largest gap or fold in the time zone database is a day (Apia, Kiritimati 2011): a
// candidate whose wall time is further than this from a target's wall time cannot be nearer.
const MARGIN = 26 * 3_600_000
const MAX_YEAR = 9999
const OFFSET_SPAN = 15 * 3_600_000

export type Target =
  /** The first occurrence strictly after an instant. */
  | { readonly kind: "after"; readonly instant: number }
  /** The first occurrence at or after an instant. */
  | { readonly kind: "from"; readonly instant: number }
  /** The first occurrence whose wall time is at or after a wall time. */
  | { readonly kind: "wall"; readonly wall: number }

/** An occurrence: its instant and the wall time it stands for (they differ in a DST gap). */
export interface Hit {
  readonly instant: number
  readonly wall: number
}

/** An occurrence, undefined when the series has no such occurrence, or why it was refused. */
export type Found = Either.Either<Hit | undefined, string>

interface Compiled {
  readonly rule: ParsedRule
  readonly filter: DayFilter
  /** Seconds of the day (seconds of the hour for HOURLY), ascending. */
  readonly times: ReadonlyArray<number>
  readonly hours: ReadonlyArray<boolean> | undefined
  readonly dtWall: number
  readonly abs0: number
}

const sortedUnique = (xs: ReadonlyArray<number>) => [...new Set(xs)].sort((a, b) => a - b)

const compile = (rule: ParsedRule, dtWall: number): Compiled => {
  const dayNumber = Math.floor(dtWall / DAY_MS)
  const { day, month } = civilFromDays(dayNumber)
  const secondOfDay = Math.floor((dtWall - dayNumber * DAY_MS) / 1000)
  const h0 = Math.floor(secondOfDay / 3600)
  const mi0 = Math.floor(secondOfDay / 60) % 60
  const s0 = secondOfDay % 60
  const filter = dayFilter(rule, { month, day, weekday: weekdayOf(dayNumber) })
  const minutes = rule.byminute ?? [mi0]
  const seconds = rule.bysecond ?? [s0]
  const times: Array<number> = []
  if (rule.freq === HOURLY) {
    for (const mi of minutes) for (const s of seconds) times.push(mi * 60 + s)
  } else {
    for (const h of rule.byhour ?? [h0]) for (const mi of minutes) for (const s of seconds) times.push(h * 3600 + mi * 60 + s)
  }
  const hours = rule.freq === HOURLY && rule.byhour !== undefined
    ? Array.from({ length: 24 }, (_, h) => rule.byhour!.includes(h))
    : undefined
  const c: Omit<Compiled, "abs0"> = { rule, filter, times: sortedUnique(times), hours, dtWall }
  return { ...c, abs0: absOf(c as Compiled, dtWall) }
}

/** The absolute number of the period holding a wall time. */
const absOf = (c: Compiled, wall: number): number => {
  const n = Math.floor(wall / DAY_MS)
  switch (c.rule.freq) {
    case YEARLY: return civilFromDays(n).year
    case MONTHLY: {
      const { month, year } = civilFromDays(n)
      return year * 12 + month - 1
    }
    case WEEKLY: return Math.floor((n + 3 - c.rule.wkst) / 7)
    case DAILY: return n
    default: return Math.floor(wall / 3_600_000)
  }
}

/** The first day number of a period. */
const firstDayOf = (c: Compiled, abs: number): number => {
  switch (c.rule.freq) {
    case YEARLY: return daysFromCivil(abs, 1, 1)
    case MONTHLY: return daysFromCivil(Math.floor(abs / 12), (abs % 12) + 1, 1)
    case WEEKLY: return abs * 7 - 3 + c.rule.wkst
    case DAILY: return abs
    default: return Math.floor(abs / 24)
  }
}

interface Budget {
  left: number
}

const pushTimes = (c: Compiled, out: Array<number>, n: number) => {
  for (const t of c.times) out.push(n * DAY_MS + t * 1000)
}

/** Whether the budget is spent: expansion stops at once, and the search refuses. */
const spent = (budget: Budget, out: Array<number>) => budget.left - out.length <= 0

/** The candidates of one period, ascending, after BYSETPOS. */
const expand = (c: Compiled, abs: number, budget: Budget): Array<number> => {
  const f = c.filter
  const out: Array<number> = []
  const days = (y: number, m: number) => {
    const first = daysFromCivil(y, m, 1)
    const ml = monthLength(y, m)
    if (f.bymonthday !== undefined && f.byyearday === undefined && f.plainDays === undefined && f.byweekno === undefined) {
      // Only month days: visit just those.
      const picked = sortedUnique(f.bymonthday.map((d) => (d > 0 ? d : ml + d + 1)).filter((d) => d >= 1 && d <= ml))
      budget.left -= picked.length + 1
      for (const d of picked) {
        if (spent(budget, out)) return
        pushTimes(c, out, first + d - 1)
      }
      return
    }
    budget.left -= ml
    for (let d = 1; d <= ml; d++) {
      if (spent(budget, out)) return
      if (passes(f, first + d - 1, y, m, d)) pushTimes(c, out, first + d - 1)
    }
  }
  switch (c.rule.freq) {
    case YEARLY:
      for (let m = 1; m <= 12 && !spent(budget, out); m++) if (f.bymonth === undefined || f.bymonth[m]) days(abs, m)
      break
    case MONTHLY: {
      const y = Math.floor(abs / 12)
      const m = (abs % 12) + 1
      if (f.bymonth === undefined || f.bymonth[m]) days(y, m)
      break
    }
    case WEEKLY: {
      const first = firstDayOf(c, abs)
      budget.left -= 7
      for (let n = first; n < first + 7; n++) {
        const { year, month, day } = civilFromDays(n)
        if (passes(f, n, year, month, day)) pushTimes(c, out, n)
      }
      break
    }
    case DAILY: {
      const { year, month, day } = civilFromDays(abs)
      if (passes(f, abs, year, month, day)) pushTimes(c, out, abs)
      break
    }
    default: {
      const n = Math.floor(abs / 24)
      const hour = abs - n * 24
      if (c.hours !== undefined && !c.hours[hour]) break
      const { year, month, day } = civilFromDays(n)
      if (!passes(f, n, year, month, day)) break
      for (const t of c.times) out.push(abs * 3_600_000 + t * 1000)
    }
  }
  budget.left -= out.length + 1
  const positions = c.rule.bysetpos
  if (positions === undefined || out.length === 0) return out
  const picked = new Set<number>()
  for (const p of positions) {
    const i = p > 0 ? p - 1 : out.length + p
    if (i >= 0 && i < out.length) picked.add(out[i]!)
  }
  return [...picked].sort((a, b) => a - b)
}

/**
 * The next absolute period worth expanding after `abs`: DAILY and HOURLY rules jump over
 * months outside BYMONTH and days their day parts exclude, so sparse rules cost per month,
 * not per hour.
 */
const nextUseful = (c: Compiled, abs: number): number => {
  const f = c.filter
  if (c.rule.freq !== DAILY && c.rule.freq !== HOURLY) return abs + 1
  const n = c.rule.freq === DAILY ? abs : Math.floor(abs / 24)
  const { year, month, day } = civilFromDays(n)
  let nextDay: number | undefined
  if (f.bymonth !== undefined && !f.bymonth[month]) {
    nextDay = daysFromCivil(month === 12 ? year + 1 : year, month === 12 ? 1 : month + 1, 1)
  } else if (c.rule.freq === HOURLY && f.any && !passes(f, n, year, month, day)) {
    nextDay = n + 1
  }
  if (c.rule.freq === DAILY) return nextDay ?? abs + 1
  // HOURLY: on to the next hour BYHOUR allows, today or on the next useful day.
  const firstHour = (day: number, from: number) => {
    for (let h = from; h < 24; h++) if (c.hours === undefined || c.hours[h]) return day * 24 + h
    return undefined
  }
  if (nextDay !== undefined) return firstHour(nextDay, 0) ?? nextDay * 24
  return firstHour(n, abs - n * 24 + 1) ?? firstHour(n + 1, 0) ?? abs + 1
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b))

/**
 * Rules that INTERVAL's phase keeps off every matching period, decided from the series
 * start without expanding: which hours of the week an HOURLY rule can reach, which weekdays
 * a DAILY one, which months a MONTHLY one.
 */
const unreachable = (c: Compiled): string | undefined => {
  const { rule, filter } = c
  const interval = rule.interval
  if (rule.freq === HOURLY && (c.hours !== undefined || filter.plainDays !== undefined)) {
    const step = gcd(interval, 168)
    const start = ((c.abs0 % 168) + 168 + 72) % 168 // hour of the week, from Monday 00:00
    for (let r = start % step; r < 168; r += step) {
      const hourOk = c.hours === undefined || c.hours[r % 24]
      const dayOk = filter.plainDays === undefined || filter.plainDays[Math.floor(r / 24)]
      if (hourOk && dayOk) return undefined
    }
    return `never matches: every ${interval} hours from the series start never reaches its BYHOUR/BYDAY`
  }
  if (rule.freq === DAILY && filter.plainDays !== undefined) {
    const step = gcd(interval, 7)
    const start = weekdayOf(c.abs0)
    for (let w = start % step; w < 7; w += step) if (filter.plainDays[w]) return undefined
    return `never matches: every ${interval} days from the series start never lands on its BYDAY`
  }
  if (rule.freq === MONTHLY || (rule.freq === YEARLY && filter.bymonth !== undefined)) {
    const step = rule.freq === MONTHLY ? gcd(interval, 12) : 1
    const start = rule.freq === MONTHLY ? c.abs0 % 12 : 0
    const onlyMonthDays = filter.bymonthday !== undefined && filter.plainDays === undefined && filter.byyearday === undefined &&
      filter.byweekno === undefined
    for (let m = start % step; m < 12; m += step) {
      if (filter.bymonth !== undefined && !filter.bymonth[m + 1]) continue
      if (onlyMonthDays && !filter.bymonthday!.some((d) => Math.abs(d) <= monthLength(2000, m + 1))) continue
      return undefined
    }
    return "never matches: no month it can reach has the days it names"
  }
  return undefined
}

/**
 * How many candidates every period holds, when that is the same for all periods (so COUNT
 * can be settled by arithmetic instead of expanding from the series start).
 */
const uniformSize = (c: Compiled): number | undefined => {
  const { filter: f, rule } = c
  if (rule.bysetpos !== undefined || f.byweekno !== undefined || f.byyearday !== undefined || f.ordinals !== undefined) {
    return undefined
  }
  const times = c.times.length
  const smallDays = f.bymonthday?.every((d) => d >= 1 && d <= 28) ?? false
  switch (rule.freq) {
    case YEARLY:
      return f.plainDays === undefined && smallDays
        ? (f.bymonth?.filter(Boolean).length ?? 12) * f.bymonthday!.length * times
        : undefined
    case MONTHLY:
      return f.plainDays === undefined && f.bymonth === undefined && smallDays ? f.bymonthday!.length * times : undefined
    case WEEKLY:
      return f.bymonth === undefined && f.plainDays !== undefined ? f.plainDays.filter(Boolean).length * times : undefined
    case DAILY:
      return f.any ? undefined : times
    default:
      return f.any || c.hours !== undefined ? undefined : times
  }
}

const periodStartWall = (c: Compiled, abs: number) =>
  c.rule.freq === HOURLY ? abs * 3_600_000 : firstDayOf(c, abs) * DAY_MS

const yearOfAbs = (c: Compiled, abs: number) => civilFromDays(firstDayOf(c, abs)).year

/**
 * The occurrence of `rule`, in a series whose first period holds `dtWall`, that `target`
 * asks for. Every call ends within `BUDGET` units.
 */
export const search = (rule: ParsedRule, dtWall: number, zone: string, target: Target): Found => {
  const c = compile(rule, dtWall)
  const never = unreachable(c)
  if (never !== undefined) return Either.left(never)
  const interval = rule.interval
  const budget: Budget = { left: BUDGET }
  const targetWall = target.kind === "wall" ? target.wall : wallOf(zone, target.instant) - MARGIN
  const align = (p: number) => Math.ceil(p / interval) * interval

  let p = targetWall <= dtWall ? 0 : Math.floor((absOf(c, targetWall) - c.abs0) / interval) * interval
  // COUNT: `index` is the number of occurrences before period p, exact or (when the periods
  // differ in size) an upper bound; the bound is enough while it stays below COUNT.
  let index = 0
  let exact = true
  if (rule.count !== undefined && p > 0) {
    const size = uniformSize(c)
    if (size !== undefined) {
      index = expand(c, c.abs0, budget).filter((w) => w >= dtWall).length + (p / interval - 1) * size
    } else {
      index = maxCandidatesPerPeriod(rule) * (p / interval)
      exact = false
    }
  }
  let best: Hit | undefined
  let bestWall = 0
  for (;;) {
    if (budget.left <= 0) return Either.left(TOO_EXPENSIVE)
    const abs = c.abs0 + p
    if (yearOfAbs(c, abs) > MAX_YEAR) return Either.right(best)
    if (best !== undefined && periodStartWall(c, abs) > bestWall + MARGIN) return Either.right(best)
    let restart = false
    const candidates = expand(c, abs, budget)
    // A period cut short by the budget is incomplete (BYSETPOS would pick from a prefix).
    if (budget.left <= 0) return Either.left(TOO_EXPENSIVE)
    for (const w of candidates) {
      if (w < dtWall) continue
      if (rule.until !== undefined && !rule.untilUtc && w > rule.until) return Either.right(best)
      if (rule.count !== undefined && ++index > rule.count) {
        if (exact) return Either.right(best)
        restart = true
        break
      }
      // Converting to an instant costs zone lookups: skip candidates too early to matter
      // (offsets lie within ±15 h, so a wall time that far from a bound cannot cross it).
      if (w < targetWall && !(rule.untilUtc && w + OFFSET_SPAN >= rule.until!)) continue
      const real = instantOfWall(zone, w)
      if (rule.until !== undefined && rule.untilUtc && real > rule.until) return Either.right(best)
      if (target.kind === "wall") {
        if (w >= target.wall) return Either.right({ instant: real, wall: w })
      } else if (
        (target.kind === "after" ? real > target.instant : real >= target.instant) &&
        (best === undefined || real < best.instant)
      ) {
        best = { instant: real, wall: w }
        bestWall = wallOf(zone, real)
      }
    }
    if (restart) {
      // The bound reached COUNT: count exactly from the series start instead.
      p = 0
      index = 0
      exact = true
      best = undefined
      continue
    }
    p = align(nextUseful(c, abs) - c.abs0)
  }
}

/** A spendable allowance of expansion units shared by several walks (one calendar feed). */
export interface ExpansionBudget {
  left: number
}

/** Units a counting walk spends between two pauses: well under a millisecond of work. */
export const PAUSE_UNITS = 2_000

/** A pausing walk's answer, its pauses ignored. */
export const runToEnd = <A>(walk: Generator<void, A>): A => {
  for (;;) {
    const step = walk.next()
    if (step.done === true) return step.value
  }
}

/**
 * How many occurrences of `rule` (series' first period holding `dtWall`) fall strictly
 * before `instant` (at or before it when `inclusive`), counting no further than `limit`;
 * undefined when `budget` runs out first or the rule never matches. One forward pass from
 * the series start: `search` answers "the next one after X" and a caller stepping through a
 * series with it would restart that walk on every step. When every period holds the same
 * number of candidates the periods before the target are counted by arithmetic, so a rule
 * like FREQ=HOURLY costs a few periods however far the target lies.
 *
 * A walk can spend a whole feed's budget, so it pauses (a bare `yield`) between periods
 * each time it has spent PAUSE_UNITS: a caller sharing the event loop lets other work run
 * there; `runToEnd` ignores the pauses.
 */
export function* countBefore(
  rule: ParsedRule,
  dtWall: number,
  zone: string,
  instant: number,
  inclusive: boolean,
  limit: number,
  budget: ExpansionBudget
): Generator<void, number | undefined> {
  const c = compile(rule, dtWall)
  if (unreachable(c) !== undefined) return undefined
  const interval = rule.interval
  // Wall times past which no candidate can fall before `instant` (or within UNTIL).
  let endWall = wallOf(zone, instant) + MARGIN
  if (rule.until !== undefined) endWall = Math.min(endWall, rule.untilUtc ? wallOf(zone, rule.until) + MARGIN : rule.until)
  let count = 0
  let p = 0
  const size = uniformSize(c)
  const jumpWall = endWall - 2 * MARGIN
  if (size !== undefined && jumpWall > dtWall) {
    const q = Math.floor((absOf(c, jumpWall) - c.abs0) / interval) * interval
    if (q > 0) {
      count = expand(c, c.abs0, budget).filter((w) => w >= dtWall).length + (q / interval - 1) * size
      if (count >= limit) return limit
      p = q
    }
  }
  let pausedAt = budget.left
  for (;;) {
    if (budget.left <= 0) return undefined
    if (pausedAt - budget.left >= PAUSE_UNITS) {
      pausedAt = budget.left
      yield
    }
    const abs = c.abs0 + p
    if (yearOfAbs(c, abs) > MAX_YEAR || periodStartWall(c, abs) > endWall) return count
    const candidates = expand(c, abs, budget)
    if (budget.left <= 0) return undefined
    for (const w of candidates) {
      if (w < dtWall) continue
      if (w > endWall) return count
      if (rule.until !== undefined && !rule.untilUtc && w > rule.until) return count
      // Far enough before both bounds, a candidate counts without converting it to an instant.
      if (w >= endWall - 2 * MARGIN) {
        const real = instantOfWall(zone, w)
        if (rule.until !== undefined && rule.untilUtc && real > rule.until) return count
        if (inclusive ? real > instant : real >= instant) return count
      }
      if (++count >= limit) return limit
    }
    p = align(nextUseful(c, abs) - c.abs0, interval)
  }
}

const align = (p: number, interval: number) => Math.ceil(p / interval) * interval
