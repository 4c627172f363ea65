import type * as SqlClient from "@effect/sql/SqlClient"

/**
 * Every statement on `quota_periods` outside the mutation pipeline's own writes:
 * the rollover sweep's batch of closed periods. The pipeline records a period a
 * single task closes through `QuotaPeriodsTable` (`Tables.ts`), the table's spec.
 */

/** A quota period the rollover sweep closes, as it ended. */
export interface SweptPeriod {
  readonly task_id: number
  readonly user_id: number
  readonly period_start: string
  readonly period_end: string
  readonly count: number
  readonly target: number
  readonly met: boolean
}

/** Records the sweep's closed periods, closed at `at` (not early: their period ran out). */
export const insertSweptPeriods = (sql: SqlClient.SqlClient, at: string, periods: ReadonlyArray<SweptPeriod>) =>
  sql`
        INSERT INTO quota_periods (task_id, user_id, period_start, period_end, count, target, met, closed_at, closed_early)
        SELECT x.task_id, x.user_id, x.period_start, x.period_end, x.count, x.target, x.met, ${at}::timestamptz, false
        FROM jsonb_to_recordset(${JSON.stringify(periods)}::jsonb)
          AS x(task_id int, user_id int, period_start timestamptz, period_end timestamptz, count int, target int, met boolean)`
