import type { ByDay, ParsedRule } from "./Recurrence.js"

/**
 * Proleptic Gregorian calendar arithmetic on day numbers (days since 1970-01-01) and the
 * day-level BY-parts of a rule (BYMONTH, BYWEEKNO, BYYEARDAY, BYMONTHDAY, BYDAY) as one filter.
 */

export const DAY_MS = 86_400_000

/** Day number of a civil date (H. Hinnant's days_from_civil). */
export const daysFromCivil = (y: number, m: number, d: number): number => {
  const yy = m <= 2 ? y - 1 : y
  const era = Math.floor(yy / 400)
  const yoe = yy - era * 400
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
}

export const civilFromDays = (n: number): { year: number; month: number; day: number } => {
  const z = n + 719468
  const era = Math.floor(z / 146097)
  const doe = z - era * 146097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1
  const month = mp < 10 ? mp + 3 : mp - 9
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day }
}

/** 0 = Monday … 6 = Sunday (1970-01-01 was a Thursday). */
export const weekdayOf = (n: number): number => (((n + 3) % 7) + 7) % 7

export const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
export const monthLength = (y: number, m: number) => (m === 2 && isLeap(y) ? 29 : MONTH_DAYS[m - 1]!)
export const yearLength = (y: number) => (isLeap(y) ? 366 : 365)

/** First day of week 1 of a year: the week (starting on `wkst`) holding at least 4 of its days. */
const week1Start = (y: number, wkst: number): number => {
  const jan1 = daysFromCivil(y, 1, 1)
  const into = (weekdayOf(jan1) - wkst + 7) % 7
  return into <= 3 ? jan1 - into : jan1 + 7 - into
}

export interface DayFilter {
  readonly freq: number
  readonly wkst: number
  readonly bymonth: ReadonlyArray<boolean> | undefined
  readonly byweekno: ReadonlyArray<number> | undefined
  readonly byyearday: ReadonlyArray<number> | undefined
  readonly bymonthday: ReadonlyArray<number> | undefined
  readonly plainDays: ReadonlyArray<boolean> | undefined
  readonly ordinals: ReadonlyArray<ByDay> | undefined
  /** Ordinals count within the month (MONTHLY, or YEARLY with BYMONTH) or the year. */
  readonly ordinalsInMonth: boolean
  readonly any: boolean
}

export interface DayDefaults {
  readonly month: number
  readonly day: number
  readonly weekday: number
}

/**
 * The day filter of a rule. With `defaults` (the series start's date), the parts RFC 5545
 * leaves implicit are filled as `rrule` does: YEARLY takes the start's month and day,
 * MONTHLY its day of month, WEEKLY its weekday, when the rule names no day.
 */
export const dayFilter = (rule: ParsedRule, defaults: DayDefaults | undefined): DayFilter => {
  const named = rule.byweekno !== undefined || rule.byyearday !== undefined || rule.bymonthday !== undefined ||
    rule.byday !== undefined
  let bymonth = rule.bymonth
  let bymonthday = rule.bymonthday
  let byday = rule.byday
  if (defaults !== undefined && !named) {
    if (rule.freq === 0) {
      bymonth ??= [defaults.month]
      bymonthday = [defaults.day]
    } else if (rule.freq === 1) {
      bymonthday = [defaults.day]
    } else if (rule.freq === 2) {
      byday = [{ weekday: defaults.weekday, n: 0 }]
    }
  }
  const plain = byday?.filter((d) => d.n === 0) ?? []
  const ordinals = byday?.filter((d) => d.n !== 0) ?? []
  const months = bymonth === undefined ? undefined : Array.from({ length: 13 }, (_, m) => bymonth!.includes(m))
  return {
    freq: rule.freq,
    wkst: rule.wkst,
    bymonth: months,
    byweekno: rule.byweekno,
    byyearday: rule.byyearday,
    bymonthday,
    plainDays: byday === undefined ? undefined : Array.from({ length: 7 }, (_, w) => plain.some((d) => d.weekday === w)),
    ordinals: ordinals.length > 0 ? ordinals : undefined,
    ordinalsInMonth: rule.freq === 1 || bymonth !== undefined,
    any: months !== undefined || rule.byweekno !== undefined || rule.byyearday !== undefined ||
      bymonthday !== undefined || byday !== undefined
  }
}

const includesEither = (list: ReadonlyArray<number>, a: number, b: number) => list.includes(a) || list.includes(b)

/** Whether day number `n` (civil date y-m-d) passes the filter. */
export const passes = (f: DayFilter, n: number, y: number, m: number, d: number): boolean => {
  if (f.bymonth !== undefined && !f.bymonth[m]) return false
  if (f.byweekno !== undefined) {
    let start = week1Start(y, f.wkst)
    let next = week1Start(y + 1, f.wkst)
    if (n < start) {
      next = start
      start = week1Start(y - 1, f.wkst)
    } else if (n >= next) {
      start = next
      next = week1Start(y + 2, f.wkst)
    }
    const week = Math.floor((n - start) / 7) + 1
    if (!includesEither(f.byweekno, week, week - (next - start) / 7 - 1)) return false
  }
  const ml = monthLength(y, m)
  if (f.bymonthday !== undefined && !includesEither(f.bymonthday, d, d - ml - 1)) return false
  if (f.byyearday !== undefined || (f.ordinals !== undefined && !f.ordinalsInMonth)) {
    const yd = n - daysFromCivil(y, 1, 1) + 1
    const len = yearLength(y)
    if (f.byyearday !== undefined && !includesEither(f.byyearday, yd, yd - len - 1)) return false
    if (f.ordinals !== undefined && !f.ordinalsInMonth) return dayOfWeekPasses(f, n, yd, len)
  }
  return dayOfWeekPasses(f, n, d, ml)
}

/** BYDAY: a plain weekday, or the k-th (or k-th from last) such weekday of its month or year. */
const dayOfWeekPasses = (f: DayFilter, n: number, position: number, length: number): boolean => {
  if (f.plainDays === undefined) return true
  const wd = weekdayOf(n)
  if (f.plainDays[wd]) return true
  if (f.ordinals === undefined) return false
  const k = Math.floor((position - 1) / 7) + 1
  const fromEnd = -(Math.floor((length - position) / 7) + 1)
  return f.ordinals.some((o) => o.weekday === wd && (o.n === k || o.n === fromEnd))
}

const CYCLE_FIRST = daysFromCivil(2001, 1, 1)

/**
 * Whether some day passes the filter. A day's fate depends only on its year's kind (length
 * and the weekday of 1 January; BYWEEKNO also looks at the neighbouring years, whose kinds
 * follow from it) and every kind occurs in 2001–2028, so those years decide it for all.
 */
export const someDayMatches = (f: DayFilter): boolean => {
  if (!f.any) return true
  let n = CYCLE_FIRST
  for (let year = 2001; year <= 2028; year++) {
    for (let month = 1; month <= 12; month++) {
      const ml = monthLength(year, month)
      if (f.bymonth !== undefined && !f.bymonth[month]) {
        n += ml
        continue
      }
      for (let day = 1; day <= ml; day++, n++) if (passes(f, n, year, month, day)) return true
    }
  }
  return false
}

/** An upper bound on the candidates one period of the rule can hold (before BYSETPOS). */
export const maxCandidatesPerPeriod = (rule: ParsedRule): number => {
  const months = rule.bymonth?.length ?? 12
  let days = [366, 31, 7, 1, 1][rule.freq]!
  if (rule.byyearday !== undefined) days = Math.min(days, rule.byyearday.length)
  if (rule.byweekno !== undefined) days = Math.min(days, rule.byweekno.length * 7)
  if (rule.bymonthday !== undefined) {
    days = Math.min(days, rule.bymonthday.length * (rule.freq === 0 ? months : 1))
  }
  if (rule.byday !== undefined) {
    const plain = new Set(rule.byday.filter((d) => d.n === 0).map((d) => d.weekday)).size
    const ordinals = rule.byday.filter((d) => d.n !== 0).length
    const perWeekday = rule.freq === 0 ? (rule.bymonth !== undefined ? 5 * months : 53) : rule.freq === 1 ? 5 : 1
    const scopes = rule.freq === 0 && rule.bymonth !== undefined ? months : 1
    days = Math.min(days, plain * perWeekday + ordinals * scopes)
  }
  const size = (list: ReadonlyArray<number> | undefined) => list?.length ?? 1
  const times = (rule.freq === 4 ? 1 : size(rule.byhour)) * size(rule.byminute) * size(rule.bysecond)
  return days * times
}
