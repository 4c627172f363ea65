import { Effect } from "effect"
import { Quotas } from "../../src/quotas/Quotas.js"
import { query } from "./rows.js"
import type { TestService } from "./service.js"

/** A closed quota period as recorded in quota_periods, timestamps as wire text. */
export interface PeriodRow {
  readonly task_id: number
  readonly period_start: string
  readonly period_end: string
  readonly count: number
  readonly target: number
  readonly met: boolean
  readonly closed_at: string
  readonly closed_early: boolean
}

export const periodRows = (service: TestService, taskId?: number) =>
  query<PeriodRow>(service, (sql) =>
    taskId === undefined
      ? sql<PeriodRow>`SELECT task_id, steady_iso(period_start) AS period_start, steady_iso(period_end) AS period_end,
          count, target, met, steady_iso(closed_at) AS closed_at, closed_early
          FROM quota_periods ORDER BY task_id, period_start`
      : sql<PeriodRow>`SELECT task_id, steady_iso(period_start) AS period_start, steady_iso(period_end) AS period_end,
          count, target, met, steady_iso(closed_at) AS closed_at, closed_early
          FROM quota_periods WHERE task_id = ${taskId} ORDER BY period_start`)

/** The period columns as stored, including the end, which the wire does not show. */
export const storedPeriod = async (service: TestService, taskId: number) => {
  const [row] = await query<{ start: string | null; end: string | null; current: number }>(service, (sql) =>
    sql`SELECT steady_iso(progress_period_start) AS start, steady_iso(progress_period_end) AS "end",
          progress_current AS current FROM tasks WHERE id = ${taskId}`)
  return row!
}

export interface CompletionRow {
  readonly task_id: number
  readonly completed_at: string
  readonly due_at_was: string | null
  readonly due_at_next: string | null
  readonly is_tracked: boolean
  readonly is_reminder: boolean
  readonly progress_target: number
}

export const completionRows = (service: TestService, taskId: number) =>
  query<CompletionRow>(service, (sql) =>
    sql<CompletionRow>`SELECT task_id, steady_iso(completed_at) AS completed_at, steady_iso(due_at_was) AS due_at_was,
        steady_iso(due_at_next) AS due_at_next, is_tracked, is_reminder, progress_target
      FROM completions WHERE task_id = ${taskId} ORDER BY completed_at, id`)

/**
 * Moves a quota's current period `days` days into the past, as if the service had been
 * down (or the sweep had not run yet) across its end. Only for setting up a state.
 */
export const shiftPeriodBack = (service: TestService, taskId: number, days: number) =>
  query(service, (sql) =>
    sql`UPDATE tasks SET progress_period_start = progress_period_start - make_interval(days => ${days}),
          progress_period_end = progress_period_end - make_interval(days => ${days})
        WHERE id = ${taskId} RETURNING id`)

/** One rollover sweep through the service's own layers. */
export const sweep = (service: TestService) => service.run(Effect.flatMap(Quotas, (q) => q.sweep()))
