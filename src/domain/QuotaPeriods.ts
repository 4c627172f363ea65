import { Either } from "effect"
import { addDays, instantOf, localParts } from "./LocalTime.js"

/**
 * Quota periods on the user's local calendar (spec "Quota period rules"). Pure: every
 * function takes the instants it works on.
 *
 * A period is [start, end). Starts and ends are local midnights: the first of a day, of the
 * user's week (week_start), of a month, of a year. INTERVAL counts whole units from the
 * first period. 23- and 25-hour days are normal days.
 */

export type PeriodFreq = "DAILY" | "WEEKLY" | "MONTHLY" | "YEARLY"
export type WeekStartDay = "sunday" | "monday"

export interface PeriodRule {
  readonly freq: PeriodFreq
  readonly interval: number
}

export interface PeriodSettings {
  readonly zone: string
  readonly weekStart: WeekStartDay
}

export interface Period {
  readonly start: Date
  readonly end: Date
}

const RULE = /^(?:RRULE:)?(?:FREQ=(DAILY|WEEKLY|MONTHLY|YEARLY)(?:;INTERVAL=(\d+))?|INTERVAL=(\d+);FREQ=(DAILY|WEEKLY|MONTHLY|YEARLY))$/i

/** The period a quota's rule names, or why it is not one. */
export const parsePeriodRule = (rule: string): Either.Either<PeriodRule, string> => {
  const m = RULE.exec(rule.trim())
  if (m === null) return Either.left("A quota's rule is FREQ=DAILY, WEEKLY, MONTHLY or YEARLY with an optional INTERVAL")
  const freq = (m[1] ?? m[4])!.toUpperCase() as PeriodFreq
  const interval = Number(m[2] ?? m[3] ?? "1")
  if (!Number.isInteger(interval) || interval < 1 || interval > 1000) return Either.left("INTERVAL must be 1-1000")
  return Either.right({ freq, interval })
}

interface CalendarDate {
  readonly year: number
  readonly month: number
  readonly day: number
}

const midnight = (zone: string, d: CalendarDate) => instantOf(zone, d.year, d.month, d.day)

const dayNumber = (d: CalendarDate) => Math.floor(Date.UTC(d.year, d.month - 1, d.day) / 86_400_000)

const fromDayNumber = (n: number): CalendarDate => {
  const date = new Date(n * 86_400_000)
  return { year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate() }
}

const addMonths = (d: CalendarDate, months: number): CalendarDate => {
  const index = d.year * 12 + (d.month - 1) + months
  return { year: Math.floor(index / 12), month: (index % 12 + 12) % 12 + 1, day: 1 }
}

const weekStartIndex = (weekStart: WeekStartDay) => (weekStart === "monday" ? 1 : 0)

/** The first local day of the calendar unit (day, week, month, year) containing `d`. */
export const unitStart = (freq: PeriodFreq, d: CalendarDate, weekStart: WeekStartDay): CalendarDate => {
  switch (freq) {
    case "DAILY":
      return d
    case "WEEKLY": {
      const weekday = new Date(Date.UTC(d.year, d.month - 1, d.day)).getUTCDay()
      return addDays(d.year, d.month, d.day, -((weekday - weekStartIndex(weekStart) + 7) % 7))
    }
    case "MONTHLY":
      return { year: d.year, month: d.month, day: 1 }
    case "YEARLY":
      return { year: d.year, month: 1, day: 1 }
  }
}

/** `units` whole units after the unit starting on `d` (a unit start). */
const addUnits = (freq: PeriodFreq, d: CalendarDate, units: number): CalendarDate => {
  switch (freq) {
    case "DAILY":
      return fromDayNumber(dayNumber(d) + units)
    case "WEEKLY":
      return fromDayNumber(dayNumber(d) + 7 * units)
    case "MONTHLY":
      return addMonths(d, units)
    case "YEARLY":
      return { year: d.year + units, month: 1, day: 1 }
  }
}

/** Whole units from unit start `a` to unit start `b` (negative when b is earlier). */
const unitsBetween = (freq: PeriodFreq, a: CalendarDate, b: CalendarDate): number => {
  switch (freq) {
    case "DAILY":
      return dayNumber(b) - dayNumber(a)
    case "WEEKLY":
      return Math.round((dayNumber(b) - dayNumber(a)) / 7)
    case "MONTHLY":
      return (b.year * 12 + b.month) - (a.year * 12 + a.month)
    case "YEARLY":
      return b.year - a.year
  }
}

const localDay = (instant: Date, zone: string): CalendarDate => {
  const p = localParts(instant, zone)
  return { year: p.year, month: p.month, day: p.day }
}

/**
 * The period containing `at`, in the series whose first period starts at `anchor` (a
 * period start). Without an anchor, the series is anchored at the unit containing `at`.
 */
export const periodContaining = (
  rule: PeriodRule,
  settings: PeriodSettings,
  at: Date,
  anchor?: Date
): Period => {
  const atUnit = unitStart(rule.freq, localDay(at, settings.zone), settings.weekStart)
  const anchorUnit = anchor === undefined ? atUnit : unitStart(rule.freq, localDay(anchor, settings.zone), settings.weekStart)
  const k = Math.floor(unitsBetween(rule.freq, anchorUnit, atUnit) / rule.interval)
  const startDay = addUnits(rule.freq, anchorUnit, k * rule.interval)
  const endDay = addUnits(rule.freq, startDay, rule.interval)
  const period = { start: midnight(settings.zone, startDay), end: midnight(settings.zone, endDay) }
  // A fall-back just after midnight (St. John's before 2011: 00:01 → 23:01) shows the
  // previous date again after the new day began; such an instant is in the next period.
  return at.getTime() >= period.end.getTime()
    ? { start: period.end, end: periodEndFrom(rule, settings, period.end) }
    : period
}

/** The end of the full period that starts at `start` (a local unit start). */
export const periodEndFrom = (rule: PeriodRule, settings: PeriodSettings, start: Date): Date => {
  const startUnit = unitStart(rule.freq, localDay(start, settings.zone), settings.weekStart)
  return midnight(settings.zone, addUnits(rule.freq, startUnit, rule.interval))
}

/**
 * The first unit boundary under `settings` strictly after `after`: where the current
 * period ends when week_start or the time zone changes (period rule 4: the short period
 * lasts at most one unit, and full intervals run from this boundary).
 */
export const nextBoundary = (rule: PeriodRule, settings: PeriodSettings, after: Date): Date => {
  const unit = unitStart(rule.freq, localDay(after, settings.zone), settings.weekStart)
  const start = midnight(settings.zone, unit)
  return start.getTime() > after.getTime() ? start : midnight(settings.zone, addUnits(rule.freq, unit, 1))
}

/**
 * The unit boundary under `settings` nearest to `target` and later than `after`: where a
 * period ends when only the time zone moved, so the end shifts by the change of offset and
 * no count is cut short.
 */
export const nearestBoundary = (rule: PeriodRule, settings: PeriodSettings, target: Date, after: Date): Date => {
  const justBefore = new Date(target.getTime() - 1)
  const later = nextBoundary(rule, settings, justBefore)
  const earlier = midnight(settings.zone, unitStart(rule.freq, localDay(justBefore, settings.zone), settings.weekStart))
  if (earlier.getTime() <= after.getTime()) return later
  return target.getTime() - earlier.getTime() <= later.getTime() - target.getTime() ? earlier : later
}

/** The periods that have ended by `now`, starting with the current one: [start, end), … */
export const endedPeriods = (
  rule: PeriodRule,
  settings: PeriodSettings,
  current: Period,
  now: Date,
  limit = 1000
): { readonly ended: ReadonlyArray<Period>; readonly next: Period } => {
  const ended: Array<Period> = []
  let period = current
  while (period.end.getTime() <= now.getTime()) {
    ended.push(period)
    if (ended.length >= limit) {
      // After a very long outage, jump straight to the period containing now.
      const jump = periodContaining(rule, settings, now, period.end)
      return { ended, next: jump }
    }
    period = { start: period.end, end: periodEndFrom(rule, settings, period.end) }
  }
  return { ended, next: period }
}
