import { Either } from "effect"
import { localDate } from "../kernel/LocalTime.js"
import { endedPeriods, type Period, type PeriodSettings, parsePeriodRule } from "./QuotaPeriods.js"

/** The columns of a quota that decide what closing its ended periods records. */
export interface QuotaState {
  readonly rrule: string | null
  readonly periodStart: Date | null
  readonly periodEnd: Date | null
  readonly current: number
  readonly target: number
  readonly completionCount: number
  readonly firstCompletedAt: string | null
}

export interface ClosedPeriod {
  readonly period: Period
  readonly count: number
  readonly met: boolean
  /** The local date a met period's completion counts on: the period's last local day. */
  readonly statsDate: string
}

/** What closing writes: one row per ended period, and the task's new period and counters. */
export interface QuotaClosing {
  readonly closed: ReadonlyArray<ClosedPeriod>
  readonly next: Period
  readonly completion?: {
    readonly completionCount: number
    readonly firstCompletedAt: string
    readonly lastCompletedAt: string
  }
}

/** The periods of a quota that have ended by `now` and the one it moves to: no counts yet. */
export interface EndedSchedule {
  readonly ended: ReadonlyArray<{ readonly period: Period; readonly statsDate: string }>
  readonly next: Period
}

/**
 * The calendar half of closing, which depends only on the rule, the current period, the
 * owner's calendar and `now`: a sweep of many quotas sharing one midnight computes it once.
 */
export const endedSchedule = (
  rrule: string | null,
  current: { readonly start: Date | null; readonly end: Date | null },
  settings: PeriodSettings,
  now: Date
): EndedSchedule | undefined => {
  if (rrule === null || current.start === null || current.end === null) return undefined
  const rule = parsePeriodRule(rrule)
  if (Either.isLeft(rule)) return undefined
  const { ended, next } = endedPeriods(rule.right, settings, { start: current.start, end: current.end }, now)
  if (ended.length === 0) return undefined
  return {
    ended: ended.map((period) => ({
      period,
      statsDate: localDate(new Date(Math.min(period.end.getTime() - 1, now.getTime())), settings.zone)
    })),
    next
  }
}

/**
 * Every period of a quota that has ended: the first keeps the current count, later ones
 * (an outage across several boundaries) count 0; a met period is also a completion. The
 * one rule behind both the per-task rollover and the batched sweep, so both record the
 * same rows.
 */
export const closingFrom = (schedule: EndedSchedule, quota: QuotaState): QuotaClosing => {
  let met = 0
  let lastMet: string | null = null
  const closed = schedule.ended.map(({ period, statsDate }, index): ClosedPeriod => {
    const count = index === 0 ? quota.current : 0
    const isMet = count >= quota.target
    if (isMet) {
      met++
      lastMet = period.end.toISOString()
    }
    return { period, count, met: isMet, statsDate }
  })
  if (met === 0 || lastMet === null) return { closed, next: schedule.next }
  return {
    closed,
    next: schedule.next,
    completion: {
      completionCount: quota.completionCount + met,
      firstCompletedAt: quota.firstCompletedAt ?? lastMet,
      lastCompletedAt: lastMet
    }
  }
}

/** Closing of one quota by `now`, or nothing when no period of it has ended (or it has none). */
export const closingOf = (quota: QuotaState, settings: PeriodSettings, now: Date): QuotaClosing | undefined => {
  const schedule = endedSchedule(quota.rrule, { start: quota.periodStart, end: quota.periodEnd }, settings, now)
  return schedule === undefined ? undefined : closingFrom(schedule, quota)
}
