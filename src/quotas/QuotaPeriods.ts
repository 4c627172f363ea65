import { Either } from "effect"
import { addDays, instantOf, localParts } from "../kernel/LocalTime.js"

const DAY_MS = 86_400_000

/**
 * Quota periods on the user's local calendar (spec "Quota period rules"). Pure: every
 * function takes the instants it works on.
 *
 * A period is [start, end). Starts and ends are local midnights: the first of a day, of the
 * user's week (week_start), of a month, of a year. INTERVAL counts whole units from the
 * first period. 23- and 25-hour days are normal days.
 *
 * Every function places an instant on the same local day (`dayOf`): the one whose first
 * midnight it has reached. Where clocks went back across midnight (St. John's until 2011:
 * 00:01 → 23:01), the repeated hour shows the old date but belongs to the new day.
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

const midnights = new Map<string, number>()
/**
 * The first instant of a local date. Memoised (bounded): counting days asks for the same
 * few midnights over and over, and each costs several Intl look-ups.
 */
const midnight = (zone: string, d: CalendarDate): Date => {
  const key = `${zone} ${d.year}-${d.month}-${d.day}`
  const known = midnights.get(key)
  if (known !== undefined) return new Date(known)
  if (midnights.size >= 10_000) midnights.clear()
  const at = instantOf(zone, d.year, d.month, d.day)
  midnights.set(key, at.getTime())
  return at
}

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

/**
 * Days that happened from local date `a` to `b`. A date skipped by a date-line change
 * (Apia and Fakaofo, 30 Dec 2011) has the same first instant as the next date, so it adds
 * nothing; other offset changes are under 12 hours and vanish in the rounding.
 */
const daysBetween = (zone: string, a: CalendarDate, b: CalendarDate): number =>
  Math.round((midnight(zone, b).getTime() - midnight(zone, a).getTime()) / DAY_MS)

/** The date `days` days that happened after `d` (a skipped date counts as the day after it). */
const addLivedDays = (zone: string, d: CalendarDate, days: number): CalendarDate => {
  let n = dayNumber(d) + days
  // A skipped date makes the calendar guess one short; two corrections settle it.
  for (let i = 0; i < 3; i++) {
    const lived = daysBetween(zone, d, fromDayNumber(n))
    if (lived === days) break
    n += days - lived
  }
  return fromDayNumber(n)
}

/** `units` whole units after the unit starting on `d` (a unit start). */
const addUnits = (freq: PeriodFreq, zone: string, d: CalendarDate, units: number): CalendarDate => {
  switch (freq) {
    case "DAILY":
      return addLivedDays(zone, d, units)
    case "WEEKLY":
      return fromDayNumber(dayNumber(d) + 7 * units)
    case "MONTHLY":
      return addMonths(d, units)
    case "YEARLY":
      return { year: d.year + units, month: 1, day: 1 }
  }
}

/** Whole units from unit start `a` to unit start `b` (negative when b is earlier). */
const unitsBetween = (freq: PeriodFreq, zone: string, a: CalendarDate, b: CalendarDate): number => {
  switch (freq) {
    case "DAILY":
      return daysBetween(zone, a, b)
    case "WEEKLY":
      return Math.round((dayNumber(b) - dayNumber(a)) / 7)
    case "MONTHLY":
      return (b.year * 12 + b.month) - (a.year * 12 + a.month)
    case "YEARLY":
      return b.year - a.year
  }
}

/**
 * The local day an instant belongs to: the date on the clock, or the next date when its
 * first midnight has already passed (the repeated hour of a fall-back across midnight).
 */
export const dayOf = (instant: Date, zone: string): CalendarDate => {
  const p = localParts(instant, zone)
  const clock = { year: p.year, month: p.month, day: p.day }
  // Only a clock that went back can show a date whose successor has begun; it shows an
  // evening hour then, so the lookup is skipped for the other half of the day.
  if (p.hour < 12) return clock
  const next = fromDayNumber(dayNumber(clock) + 1)
  return midnight(zone, next).getTime() <= instant.getTime() ? next : clock
}

/** The first local day of the unit (interval 1) that `instant` belongs to. */
const unitOf = (freq: PeriodFreq, settings: PeriodSettings, instant: Date): CalendarDate =>
  unitStart(freq, dayOf(instant, settings.zone), settings.weekStart)

/**
 * The period containing `at`, in the series whose first period starts at `anchor` (a
 * period start). Without an anchor, the series starts at the unit containing `at`.
 */
export const periodContaining = (
  rule: PeriodRule,
  settings: PeriodSettings,
  at: Date,
  anchor?: Date
): Period => {
  const atUnit = unitOf(rule.freq, settings, at)
  const anchorUnit = anchor === undefined ? atUnit : unitOf(rule.freq, settings, anchor)
  const k = Math.floor(unitsBetween(rule.freq, settings.zone, anchorUnit, atUnit) / rule.interval)
  const startDay = addUnits(rule.freq, settings.zone, anchorUnit, k * rule.interval)
  const endDay = addUnits(rule.freq, settings.zone, startDay, rule.interval)
  return { start: midnight(settings.zone, startDay), end: midnight(settings.zone, endDay) }
}

/** The end of the full period that starts at `start` (a local unit start). */
export const periodEndFrom = (rule: PeriodRule, settings: PeriodSettings, start: Date): Date =>
  midnight(settings.zone, addUnits(rule.freq, settings.zone, unitOf(rule.freq, settings, start), rule.interval))

/**
 * The first unit boundary under `settings` strictly after `after`: where the current
 * period ends when week_start or the time zone changes (period rule 4: the short period
 * lasts at most one unit, and full intervals run from this boundary).
 */
export const nextBoundary = (rule: PeriodRule, settings: PeriodSettings, after: Date): Date =>
  midnight(settings.zone, addUnits(rule.freq, settings.zone, unitOf(rule.freq, settings, after), 1))

/**
 * The unit boundary under `settings` nearest to `target` and later than `after`: where a
 * period ends when only the time zone moved, so the end shifts by the change of offset and
 * no count is cut short. Ties go to the earlier boundary.
 */
export const nearestBoundary = (rule: PeriodRule, settings: PeriodSettings, target: Date, after: Date): Date => {
  const justBefore = new Date(target.getTime() - 1)
  const later = nextBoundary(rule, settings, justBefore)
  // A target at or before `after`: no boundary lies between them, the first after `after` is nearest.
  if (later.getTime() <= after.getTime()) return nextBoundary(rule, settings, after)
  const earlier = midnight(settings.zone, unitOf(rule.freq, settings, justBefore))
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
