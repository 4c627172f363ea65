import { contentLine, floatingStamp, utcOffset } from "./ICalendar.js"
import { civilFromDays, DAY_MS, daysFromCivil, monthLength, weekdayOf } from "../recurrence/RuleCalendar.js"
import { offsetAt, probeOffset } from "../kernel/ZoneOffsets.js"

/**
 * A VTIMEZONE (RFC 5545 §3.6.5) built from the zone's real offsets, as the runtime's time
 * zone database (Intl) knows them: every transition over the years asked for is listed with
 * its exact local time and offsets. When the last year's transitions follow a yearly
 * weekday rule that earlier years followed too (US: second Sunday of March, EU: last Sunday
 * of March, Chile: first Sunday on or after April 2, …), they are written as that rule
 * instead, so the zone stays right for occurrences a recurring task reaches after the range.
 */

export interface Transition {
  /** The first instant of the new offset. */
  readonly at: number
  readonly from: number
  readonly to: number
}

// Transitions of one zone-year never change within a process; a feed asks for the same few.
const cache = new Map<string, ReadonlyArray<Transition>>()
const CACHE_SIZE = 2000

/** The transitions of `zone` in a calendar year (UTC), found day by day and bisected to the second. */
export const transitionsIn = (zone: string, year: number): ReadonlyArray<Transition> => {
  const key = `${zone}|${year}`
  const known = cache.get(key)
  if (known !== undefined) return known
  const out: Array<Transition> = []
  const first = daysFromCivil(year, 1, 1)
  const last = daysFromCivil(year + 1, 1, 1)
  let before = offsetAt(zone, first * DAY_MS)
  for (let day = first; day < last; day++) {
    const after = offsetAt(zone, (day + 1) * DAY_MS)
    if (after !== before) {
      // offsetAt knows the day's switch to the second: bisect on it.
      let lo = day * DAY_MS, hi = (day + 1) * DAY_MS
      while (hi - lo > 1000) {
        const mid = lo + Math.floor((hi - lo) / 2000) * 1000
        if (offsetAt(zone, mid) === before) lo = mid
        else hi = mid
      }
      out.push({ at: hi, from: before, to: after })
      before = after
    }
  }
  // Oldest first, one at a time: the zone-years in use stay.
  if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!)
  cache.set(key, out)
  return out
}

/** The local wall time a transition happens at, read on the clock before it (RFC 5545 DTSTART). */
const wallBefore = (t: Transition) => t.at + t.from

interface YearlyRule {
  readonly month: number
  /** The weekday is the first on or after this day of the month (1…22), or -1: the month's last. */
  readonly from: number
  readonly weekday: number
  readonly timeOfDay: number
}

/**
 * How many later years a rule must reproduce, checked against the zone's own future offsets:
 * 28 years run through every alignment of weekdays and dates, so "Sun>=2" and "first
 * Sunday" cannot both pass.
 */
const YEARS_CHECKED = 28

const dayOfRule = (year: number, rule: YearlyRule): number => {
  if (rule.from > 0) {
    const start = daysFromCivil(year, rule.month, rule.from)
    return start + ((rule.weekday - weekdayOf(start) + 7) % 7)
  }
  const lastDay = daysFromCivil(year, rule.month, monthLength(year, rule.month))
  return lastDay - ((weekdayOf(lastDay) - rule.weekday + 7) % 7)
}

/**
 * The weekday rules that name a transition's local date: the month's last such weekday,
 * the nth one, then "the first on or after day D" (tzdata's `Sun>=D`) for every D that fits.
 */
const rulesFor = (t: Transition): Array<YearlyRule> => {
  const wall = wallBefore(t)
  const day = Math.floor(wall / DAY_MS)
  const { year, month, day: dom } = civilFromDays(day)
  const base = { month, weekday: weekdayOf(day), timeOfDay: wall - day * DAY_MS }
  const out: Array<YearlyRule> = []
  if (dom + 7 > monthLength(year, month)) out.push({ ...base, from: -1 })
  const nth = Math.floor((dom - 1) / 7) * 7 + 1
  if (dom <= 28) out.push({ ...base, from: nth })
  // Seven days from D must exist in every year's month (February has 28).
  for (let from = Math.max(1, dom - 6); from <= dom && from <= 22; from++) if (from !== nth) out.push({ ...base, from })
  return out
}

/**
 * The rule `t` follows that the zone keeps following for YEARS_CHECKED years (each year
 * checked by the offsets one second either side of where the rule puts the change);
 * undefined when none does (irregular or ending transitions).
 */
const yearlyRuleOf = (t: Transition, zone: string): YearlyRule | undefined => {
  const year = civilFromDays(Math.floor(wallBefore(t) / DAY_MS)).year
  const holds = (rule: YearlyRule) => {
    for (let y = year + 1; y <= year + YEARS_CHECKED; y++) {
      const at = dayOfRule(y, rule) * DAY_MS + rule.timeOfDay - t.from
      if (probeOffset(zone, at - 1000) !== t.from || probeOffset(zone, at) !== t.to) return false
    }
    return true
  }
  return rulesFor(t).find(holds)
}

const WEEKDAY_NAMES = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]

const ruleText = (rule: YearlyRule): string => {
  const day = WEEKDAY_NAMES[rule.weekday]!
  if (rule.from < 0) return `FREQ=YEARLY;BYMONTH=${rule.month};BYDAY=-1${day}`
  if ((rule.from - 1) % 7 === 0) return `FREQ=YEARLY;BYMONTH=${rule.month};BYDAY=${(rule.from - 1) / 7 + 1}${day}`
  const days = Array.from({ length: 7 }, (_, i) => rule.from + i).join(",")
  return `FREQ=YEARLY;BYMONTH=${rule.month};BYMONTHDAY=${days};BYDAY=${day}`
}

const observance = (t: Transition, extra = ""): string => {
  const kind = t.to > t.from ? "DAYLIGHT" : "STANDARD"
  return `BEGIN:${kind}\r\n` +
    contentLine("DTSTART", floatingStamp(wallBefore(t))) +
    contentLine("TZOFFSETFROM", utcOffset(t.from)) +
    contentLine("TZOFFSETTO", utcOffset(t.to)) +
    extra +
    `END:${kind}\r\n`
}

/**
 * VTIMEZONE for `zone` covering `fromYear`…`toYear` (UTC calendar years): the offset in
 * force when the range opens, each transition within it, and the last year's transitions
 * as yearly rules when they follow one. When they follow none (Morocco's moves with
 * Ramadan), transitions are listed on to `irregularUntil`, as far as recurring tasks are
 * likely to be looked at.
 */
export const vtimezone = (zone: string, fromYear: number, toYear: number, irregularUntil = toYear): string => {
  const start = daysFromCivil(fromYear, 1, 1) * DAY_MS
  const opening = offsetAt(zone, start)
  let body = observance({ at: start, from: opening, to: opening })
  const years: Array<ReadonlyArray<Transition>> = []
  for (let year = fromYear; year <= toYear; year++) years.push(transitionsIn(zone, year))
  const lastYear = years[years.length - 1]!
  const rules = lastYear.map((t) => yearlyRuleOf(t, zone))
  const ruled = lastYear.length > 0 && rules.every((r) => r !== undefined)
  if (!ruled && transitionsIn(zone, toYear - 1).length + lastYear.length > 0) {
    for (let year = toYear + 1; year <= irregularUntil; year++) years.push(transitionsIn(zone, year))
  }
  for (const list of ruled ? years.slice(0, -1) : years) for (const t of list) body += observance(t)
  if (ruled) lastYear.forEach((t, i) => (body += observance(t, contentLine("RRULE", ruleText(rules[i]!)))))
  return "BEGIN:VTIMEZONE\r\n" + contentLine("TZID", zone) + body + "END:VTIMEZONE\r\n"
}
