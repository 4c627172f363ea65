import { Either } from "effect"
import { dayFilter, maxCandidatesPerPeriod, someDayMatches } from "./RuleCalendar.js"

/** FREQ and INTERVAL only, with a period frequency: how a quota names its period. INTERVAL=0 names none. */
const BARE_PERIOD = /^(RRULE:)?FREQ=(DAILY|WEEKLY|MONTHLY|YEARLY)(;INTERVAL=0*[1-9]\d*)?$/i
const BARE_PERIOD_SWAPPED = /^(RRULE:)?INTERVAL=0*[1-9]\d*;FREQ=(DAILY|WEEKLY|MONTHLY|YEARLY)$/i

export const isBarePeriodRule = (rule: string): boolean => {
  const text = rule.trim()
  return BARE_PERIOD.test(text) || BARE_PERIOD_SWAPPED.test(text)
}

export const YEARLY = 0
export const MONTHLY = 1
export const WEEKLY = 2
export const DAILY = 3
export const HOURLY = 4
const FREQS: Record<string, number> = { YEARLY, MONTHLY, WEEKLY, DAILY, HOURLY }

/** 0 = Monday … 6 = Sunday, as RFC 5545 lists them from MO. */
const WEEKDAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]

export interface ByDay {
  readonly weekday: number
  /** The ordinal (`-1FR` → -1); 0 for every such weekday. */
  readonly n: number
}

export interface ParsedRule {
  readonly freq: number
  readonly interval: number
  readonly count: number | undefined
  /** Floating wall ms for a local UNTIL; a real instant when `untilUtc`. */
  readonly until: number | undefined
  readonly untilUtc: boolean
  readonly wkst: number
  readonly bymonth: ReadonlyArray<number> | undefined
  readonly byweekno: ReadonlyArray<number> | undefined
  readonly byyearday: ReadonlyArray<number> | undefined
  readonly bymonthday: ReadonlyArray<number> | undefined
  readonly byday: ReadonlyArray<ByDay> | undefined
  readonly byhour: ReadonlyArray<number> | undefined
  readonly byminute: ReadonlyArray<number> | undefined
  readonly bysecond: ReadonlyArray<number> | undefined
  readonly bysetpos: ReadonlyArray<number> | undefined
}

// Sizes that keep every expansion small; each is far beyond what a task schedule needs.
export const MAX_RULE_LENGTH = 1000
export const MAX_INTERVAL = 100_000
export const MAX_COUNT = 1_000_000_000
/** More than one occurrence a minute is what MINUTELY would do, and floods a schedule the same way. */
export const MAX_TIMES_PER_DAY = 1440
/** Candidates one period may hold (a year of days times the times of day); BYSETPOS picks among them. */
export const MAX_PERIOD_CANDIDATES = 10_000

const RANGES = {
  BYMONTH: [1, 12, false],
  BYWEEKNO: [-53, 53, true],
  BYYEARDAY: [-366, 366, true],
  BYMONTHDAY: [-31, 31, true],
  BYHOUR: [0, 23, false],
  BYMINUTE: [0, 59, false],
  BYSECOND: [0, 59, false],
  BYSETPOS: [-366, 366, true]
} as const
type ListPart = keyof typeof RANGES
const KNOWN = new Set(["FREQ", "INTERVAL", "COUNT", "UNTIL", "WKST", "BYDAY", ...Object.keys(RANGES)])

class Refused {
  constructor(readonly reason: string) {}
}
const refuse = (reason: string): never => {
  throw new Refused(reason)
}

const numberList = (name: ListPart, value: string): ReadonlyArray<number> => {
  const [min, max, signed] = RANGES[name]
  const out = new Set<number>()
  for (const item of value.split(",")) {
    if (!/^[+-]?\d{1,6}$/.test(item)) refuse(`does not parse: ${name} value "${item}" is not an integer`)
    const n = Number(item)
    if (n < min || n > max || (signed && n === 0)) {
      refuse(`${name} must be ${signed ? `${min}…-1 or 1…${max}` : `${min}…${max}`} (got ${item})`)
    }
    out.add(n)
  }
  return [...out].sort((a, b) => a - b)
}

const positive = (name: string, value: string, max: number): number => {
  if (!/^\d+$/.test(value) || Number(value) < 1) refuse(`${name} must be a positive integer`)
  const n = Number(value)
  if (n > max) refuse(`${name} must be at most ${max}`)
  return n
}

const untilOf = (value: string): { ms: number; utc: boolean } => {
  const m = /^(\d{4})(\d{2})(\d{2})(?:T(\d{2})(\d{2})(\d{2})(Z?))?$/.exec(value)
  if (m === null) return refuse(`does not parse: UNTIL "${value}" is not a date (YYYYMMDD or YYYYMMDDTHHMMSSZ)`)
  const [y, mo, d, h = "0", mi = "0", s = "0"] = m.slice(1).map((x) => x ?? "0")
  const date = new Date(0)
  date.setUTCFullYear(Number(y), Number(mo) - 1, Number(d))
  date.setUTCHours(Number(h), Number(mi), Number(s), 0)
  if (
    date.getUTCFullYear() !== Number(y) || date.getUTCMonth() !== Number(mo) - 1 || date.getUTCDate() !== Number(d) ||
    Number(h) > 23 || Number(mi) > 59 || Number(s) > 59
  ) refuse(`does not parse: UNTIL "${value}" is not a real date`)
  return { ms: date.getTime(), utc: m[7] === "Z" }
}

const byDayList = (value: string): ReadonlyArray<ByDay> => {
  const out = new Map<string, ByDay>()
  for (const item of value.split(",")) {
    const m = /^([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)$/i.exec(item)
    if (m === null) return refuse(`does not parse: BYDAY value "${item}" is not a weekday like MO or -1FR`)
    const n = m[1] === undefined ? 0 : Number(m[1])
    if (m[1] !== undefined && (n === 0 || Math.abs(n) > 53)) refuse(`BYDAY ordinal must be -53…-1 or 1…53 (got ${item})`)
    const weekday = WEEKDAYS.indexOf(m[2]!.toUpperCase())
    out.set(`${n}${weekday}`, { weekday, n })
  }
  return [...out.values()]
}

const NAMES = ["YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY"]

/** RFC 5545's table of which BY-parts each FREQ accepts, and what never matches on any calendar. */
const analyse = (rule: ParsedRule): void => {
  const freq = NAMES[rule.freq]
  if (rule.byweekno !== undefined && rule.freq !== YEARLY) refuse(`BYWEEKNO is only valid with FREQ=YEARLY, not ${freq}`)
  if (rule.byyearday !== undefined && (rule.freq === MONTHLY || rule.freq === WEEKLY || rule.freq === DAILY)) {
    refuse(`BYYEARDAY is not valid with FREQ=${freq}`)
  }
  if (rule.bymonthday !== undefined && rule.freq === WEEKLY) refuse("BYMONTHDAY is not valid with FREQ=WEEKLY")
  const ordinals = (rule.byday ?? []).filter((d) => d.n !== 0)
  if (ordinals.length > 0) {
    if (rule.freq !== MONTHLY && rule.freq !== YEARLY) refuse(`BYDAY ordinals (like -1FR) need FREQ=MONTHLY or YEARLY, not ${freq}`)
    if (rule.freq === YEARLY && rule.byweekno !== undefined) refuse("BYDAY ordinals cannot be combined with BYWEEKNO")
    const limit = rule.freq === MONTHLY || rule.bymonth !== undefined ? 5 : 53
    for (const d of ordinals) {
      if (Math.abs(d.n) > limit) refuse(`BYDAY ordinal ${d.n} never matches: a ${limit === 5 ? "month" : "year"} has at most ${limit} of each weekday`)
    }
  }
  // Day-level parts can exclude each other (BYMONTH=2 with BYMONTHDAY=30). A day's fate under
  // them depends only on its year's length and weekday of 1 January, and every such kind of
  // year occurs in 2001–2028, so checking those years decides it for all years.
  if (!someDayMatches(dayFilter(rule, undefined))) refuse("never matches: no calendar day satisfies its BYMONTH/BYWEEKNO/BYYEARDAY/BYMONTHDAY/BYDAY parts together")
  const size = (list: ReadonlyArray<unknown> | undefined) => list?.length ?? 1
  const perDay = (rule.freq === HOURLY ? 24 : size(rule.byhour)) * size(rule.byminute) * size(rule.bysecond)
  if (perDay > MAX_TIMES_PER_DAY) {
    refuse(`names ${perDay} times a day (BYHOUR × BYMINUTE × BYSECOND); at most ${MAX_TIMES_PER_DAY}, one a minute`)
  }
  if (maxCandidatesPerPeriod(rule) > MAX_PERIOD_CANDIDATES) {
    refuse(`can name up to ${maxCandidatesPerPeriod(rule)} occurrences in one ${NAMES[rule.freq]!.toLowerCase().replace("ly", "").replace("dai", "day")} period; at most ${MAX_PERIOD_CANDIDATES}`)
  }
  if (rule.bysetpos !== undefined) {
    const others = [rule.bymonth, rule.byweekno, rule.byyearday, rule.bymonthday, rule.byday, rule.byhour, rule.byminute, rule.bysecond]
    if (others.every((p) => p === undefined)) refuse("BYSETPOS needs another BY-part to pick from (RFC 5545)")
    const most = maxCandidatesPerPeriod(rule)
    if (rule.bysetpos.every((p) => Math.abs(p) > most)) {
      refuse(`BYSETPOS never matches: a period of this rule has at most ${most} candidate(s)`)
    }
  }
}

const parseUncached = (rule: string): ParsedRule => {
  const text = rule.trim().replace(/^RRULE:/i, "")
  if (!/^[A-Z]+=/i.test(text)) refuse("is not an RRULE (expected e.g. FREQ=DAILY)")
  if (text.length > MAX_RULE_LENGTH) refuse(`is longer than ${MAX_RULE_LENGTH} characters`)
  const parts = new Map<string, string>()
  for (const part of text.split(";")) {
    const m = /^([A-Z]+)=(.+)$/i.exec(part)
    if (m === null) refuse(`does not parse: "${part}" is not NAME=VALUE`)
    const name = m![1]!.toUpperCase()
    if (!KNOWN.has(name)) refuse(`does not parse: unknown part ${name}`)
    if (parts.has(name)) refuse(`does not parse: ${name} appears twice`)
    parts.set(name, m![2]!)
  }
  const freqText = parts.get("FREQ")?.toUpperCase()
  if (freqText === "MINUTELY" || freqText === "SECONDLY") {
    // Minute- and second-level rules make no sense for tasks and would flood the schedule.
    refuse("FREQ must be YEARLY, MONTHLY, WEEKLY, DAILY or HOURLY")
  }
  const freq = freqText === undefined ? undefined : FREQS[freqText]
  if (freq === undefined) refuse("needs a FREQ")
  const list = (name: ListPart) => {
    const value = parts.get(name)
    return value === undefined ? undefined : numberList(name, value)
  }
  const wkst = parts.get("WKST")
  const wkstIndex = wkst === undefined ? 0 : WEEKDAYS.indexOf(wkst.toUpperCase())
  if (wkstIndex < 0) refuse(`does not parse: WKST "${wkst}" is not a weekday`)
  const until = parts.has("UNTIL") ? untilOf(parts.get("UNTIL")!) : undefined
  const byday = parts.get("BYDAY")
  const parsed: ParsedRule = {
    freq: freq!,
    interval: parts.has("INTERVAL") ? positive("INTERVAL", parts.get("INTERVAL")!, MAX_INTERVAL) : 1,
    count: parts.has("COUNT") ? positive("COUNT", parts.get("COUNT")!, MAX_COUNT) : undefined,
    until: until?.ms,
    untilUtc: until?.utc ?? false,
    wkst: wkstIndex,
    bymonth: list("BYMONTH"),
    byweekno: list("BYWEEKNO"),
    byyearday: list("BYYEARDAY"),
    bymonthday: list("BYMONTHDAY"),
    byday: byday === undefined ? undefined : byDayList(byday),
    byhour: list("BYHOUR"),
    byminute: list("BYMINUTE"),
    bysecond: list("BYSECOND"),
    bysetpos: list("BYSETPOS")
  }
  analyse(parsed)
  return parsed
}

// Parsing and the calendar analysis run on every expansion; a task list recomputes the same
// few rules, so results are kept (bounded, so hostile input cannot grow it).
const cache = new Map<string, Either.Either<ParsedRule, string>>()
const CACHE_SIZE = 1000

/**
 * Parses an RFC 5545 RRULE (the subset Steady expands) and refuses, by analysis, rules that
 * can never match; the reason comes back when it is refused.
 */
export const parseRule = (rule: string): Either.Either<ParsedRule, string> => {
  const known = cache.get(rule)
  if (known !== undefined) return known
  let result: Either.Either<ParsedRule, string>
  try {
    result = Either.right(parseUncached(rule))
  } catch (error) {
    if (!(error instanceof Refused)) throw error
    result = Either.left(error.reason)
  }
  if (rule.length <= MAX_RULE_LENGTH + 16) {
    if (cache.size >= CACHE_SIZE) cache.clear()
    cache.set(rule, result)
  }
  return result
}
