import type * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { closingFrom, type EndedSchedule, endedSchedule } from "./QuotaClosing.js"
import { calendarFrom } from "../accounts/UserCalendar.js"
import { claimEnded, startNextPeriods, type SweepCursor } from "./TaskRolloverSql.js"
import { addToDays } from "../pipeline/DailyStatsTable.js"
import { statementOf } from "../sql/SqlText.js"
import { insertSwept, type SweptCompletion } from "../lifecycle/CompletionsTable.js"
import { insertSweptPeriods, type SweptPeriod } from "./QuotaPeriodsSql.js"

/**
 * The rollover sweep, set-based. A batch of quotas is claimed with `FOR UPDATE SKIP LOCKED`
 * (so instances sweeping at the same moment split the work instead of queueing on each
 * other's rows), their ended periods are computed by `closingOf` (the rule the per-task
 * rollover in the mutation pipeline uses too), and the batch is written with one statement
 * per table: the same rows a rollover through `Mutations.run` writes (quota periods,
 * completions of met ones, the task's new period and counters with `updated_at`, the
 * owner's daily completions; no undo entry, no event), a handful of round trips a batch
 * instead of eight to ten a quota.
 *
 * Exactly once: a row is claimed only while its period has ended, and under the row lock
 * PostgreSQL re-checks that condition on the latest committed version, so a quota another
 * instance has just rolled no longer qualifies; `UNIQUE (task_id, period_start)` backs it.
 */

/** Rows per transaction: large enough to amortise round trips, small enough to keep locks short. */
export const SWEEP_BATCH = 1000

/** Batches one sweep runs at once, each on its own connection. */
export const SWEEP_WORKERS = 2

export type { SweepCursor }

export interface BatchResult {
  /** Periods recorded. */
  readonly closed: number
  /** Rows claimed (a claimed quota may have nothing to close: a rule that is not a period). */
  readonly claimed: number
  readonly cursor: SweepCursor | undefined
}

const date = (text: string | null) => (text === null ? null : new Date(text))

/**
 * One batch in one transaction: claim, compute, write. `skipLocked` false waits for rows
 * other transactions hold instead of passing them by.
 */
export const closeBatch = (
  sql: SqlClient.SqlClient,
  now: Date,
  after: SweepCursor | undefined,
  size = SWEEP_BATCH,
  skipLocked = true
) =>
  Effect.gen(function*() {
    const at = now.toISOString()
    const rows = yield* claimEnded(sql, at, after, size, skipLocked)
    const last = rows.at(-1)
    const cursor = last === undefined ? after : { end: last.end_key, id: last.id }

    const periods: Array<SweptPeriod> = []
    const completions: Array<SweptCompletion> = []
    const updates: Array<unknown> = []
    const stats = new Map<string, { user_id: number; date: string; completions: number; tasks_created: 0; snoozes: 0 }>()
    // Quotas sharing a rule, a period and a calendar share their schedule: at one local
    // midnight that is nearly all of them.
    const schedules = new Map<string, EndedSchedule | undefined>()
    for (const row of rows) {
      const calendar = calendarFrom(row)
      const key = `${row.rrule} ${row.period_start} ${row.period_end} ${calendar.zone} ${calendar.weekStart}`
      let schedule = schedules.get(key)
      if (schedule === undefined && !schedules.has(key)) {
        const current = { start: date(row.period_start), end: date(row.period_end) }
        schedule = endedSchedule(row.rrule, current, calendar, now)
        schedules.set(key, schedule)
      }
      if (schedule === undefined) continue
      const closing = closingFrom(schedule, {
        rrule: row.rrule,
        periodStart: date(row.period_start),
        periodEnd: date(row.period_end),
        current: row.progress_current,
        target: row.progress_target,
        completionCount: row.completion_count,
        firstCompletedAt: row.first_completed_at
      })
      for (const { count, met, period, statsDate } of closing.closed) {
        periods.push({
          task_id: row.id,
          user_id: row.user_id,
          period_start: period.start.toISOString(),
          period_end: period.end.toISOString(),
          count,
          target: row.progress_target,
          met
        })
        if (!met) continue
        completions.push({
          task_id: row.id,
          user_id: row.user_id,
          completed_at: period.end.toISOString(),
          task_title: row.title,
          project_id: row.project_id,
          is_tracked: row.is_tracked,
          progress_target: row.progress_target
        })
        const key = `${row.user_id} ${statsDate}`
        const stat = stats.get(key) ?? { user_id: row.user_id, date: statsDate, completions: 0, tasks_created: 0, snoozes: 0 }
        stat.completions++
        stats.set(key, stat)
      }
      updates.push({
        id: row.id,
        period_start: closing.next.start.toISOString(),
        period_end: closing.next.end.toISOString(),
        completion_count: closing.completion?.completionCount ?? null,
        first_completed_at: closing.completion?.firstCompletedAt ?? null,
        last_completed_at: closing.completion?.lastCompletedAt ?? null
      })
    }

    if (periods.length > 0) {
      yield* insertSweptPeriods(sql, at, periods)
    }
    if (completions.length > 0) {
      yield* insertSwept(sql, completions)
    }
    if (updates.length > 0) {
      yield* startNextPeriods(sql, at, updates)
    }
    if (stats.size > 0) {
      yield* statementOf(sql, addToDays([...stats.values()]))
    }
    return { closed: periods.length, claimed: rows.length, cursor } satisfies BatchResult
  }).pipe(sql.withTransaction, Effect.orDie, Effect.withSpan("QuotaSweep.closeBatch"))
