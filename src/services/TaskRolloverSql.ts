import type * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Effect } from "effect"
import type { TaskId, UserId } from "../domain/Ids.js"
import { visibleTo } from "./TasksTable.js"
import { type CalendarColumns, calendarColumns } from "./UsersTable.js"
import { hasRunningPeriod, isNotQuota, isOpen } from "./WireSql.js"

/**
 * Statements on `tasks` that find what rolls over with time (issue 12 item 2): quotas whose
 * periods run or have ended (the rollover sweep's batch and its write, a user's running
 * quotas to realign, the ended ones an undo settles first, the metrics' rollover lag) and
 * the recurring reminders whose time has passed. They read every user's tasks or a set of
 * them, each through the partial index its condition matches.
 */

/** Where the previous batch stopped, in the claim order (period end, then id). */
export interface SweepCursor {
  /** The timestamptz as PostgreSQL prints it, so it goes back exactly (microseconds included). */
  readonly end: string
  readonly id: number
}

/** A quota claimed by the sweep, with its owner's calendar. */
export interface ClaimedQuota extends CalendarColumns {
  readonly id: number
  readonly user_id: number
  readonly project_id: number
  readonly title: string
  readonly rrule: string | null
  readonly is_tracked: boolean
  readonly progress_target: number
  readonly progress_current: number
  readonly period_start: string | null
  readonly period_end: string | null
  readonly end_key: string
  readonly completion_count: number
  readonly first_completed_at: string | null
}

/**
 * Claims up to `size` quotas whose periods have ended by `at`, after `after` in the claim
 * order, locked; `skipLocked` false waits for rows other transactions hold instead of
 * passing them by.
 */
export const claimEnded = (
  sql: SqlClient.SqlClient,
  at: string,
  after: SweepCursor | undefined,
  size: number,
  skipLocked: boolean
) =>
  sql<ClaimedQuota>`
      SELECT t.id, t.user_id, t.project_id, t.title, t.rrule, t.is_tracked, t.progress_target, t.progress_current,
             steady_iso(t.progress_period_start) AS period_start, steady_iso(t.progress_period_end) AS period_end,
             t.progress_period_end::text AS end_key, t.completion_count,
             steady_iso(t.first_completed_at) AS first_completed_at,
             ${calendarColumns(sql, "u")}
      FROM tasks t JOIN users u ON u.id = t.user_id
      WHERE ${hasRunningPeriod(sql)}
        AND t.progress_period_end <= ${at}::timestamptz
        ${after === undefined ? sql`` : sql`AND (t.progress_period_end, t.id) > (${after.end}::timestamptz, ${after.id}::int)`}
      ORDER BY t.progress_period_end, t.id
      LIMIT ${size}
      FOR UPDATE OF t ${skipLocked ? sql`SKIP LOCKED` : sql``}`

/**
 * Moves the claimed quotas to their next periods, in one statement: each update names the
 * task (`id`), its next period and its counters (a null `completion_count`: unchanged).
 */
export const startNextPeriods = (sql: SqlClient.SqlClient, at: string, updates: ReadonlyArray<unknown>) =>
  sql`
        UPDATE tasks t SET
          progress_current = 0,
          progress_period_start = x.period_start,
          progress_period_end = x.period_end,
          completion_count = COALESCE(x.completion_count, t.completion_count),
          first_completed_at = CASE WHEN x.completion_count IS NULL THEN t.first_completed_at ELSE x.first_completed_at END,
          last_completed_at = CASE WHEN x.completion_count IS NULL THEN t.last_completed_at ELSE x.last_completed_at END,
          updated_at = ${at}::timestamptz
        FROM jsonb_to_recordset(${JSON.stringify(updates)}::jsonb)
          AS x(id int, period_start timestamptz, period_end timestamptz, completion_count int,
               first_completed_at timestamptz, last_completed_at timestamptz)
        WHERE t.id = x.id`

/** The user's quotas whose periods run, by id (a change of zone or week start realigns them). */
export const runningQuotasOf = (sql: SqlClient.SqlClient, userId: UserId) =>
  Effect.orDie(sql<{ id: TaskId }>`
          SELECT id FROM tasks WHERE user_id = ${userId} AND ${hasRunningPeriod(sql, "")} ORDER BY id`)

/**
 * The quotas among `ids` (a subquery of task ids) whose periods have ended by `now` and that
 * the user can see, by id.
 */
export const endedQuotasAmong = (sql: SqlClient.SqlClient, userId: UserId, now: Date, ids: Fragment) =>
  Effect.orDie(sql<{ id: TaskId }>`
          SELECT t.id FROM tasks t
          WHERE ${hasRunningPeriod(sql)} AND t.progress_period_end <= ${now.toISOString()}::timestamptz
            AND t.id IN ${ids}
            AND ${visibleTo(sql, userId)}
          ORDER BY t.id`)

/** How far behind the rollover is at `now`, in seconds: since the oldest period end not rolled yet (a subquery, NULL when none). */
export const rolloverLag = (sql: SqlClient.SqlClient, now: Date): Fragment =>
  sql`(SELECT EXTRACT(EPOCH FROM (${now.toISOString()}::timestamptz - min(progress_period_end)))::float8
        FROM tasks WHERE ${hasRunningPeriod(sql, "")}
          AND progress_period_end <= ${now.toISOString()}::timestamptz)`

export interface MissedReminder {
  readonly id: TaskId
  readonly user_id: UserId
  readonly username: string
  readonly timezone: string
  readonly rrule: string
  readonly anchor_time: string | null
  readonly due_at: string
  readonly series_start_at: string | null
}

/**
 * Up to 1,000 open recurring reminders whose time has passed, of every user: read from the
 * partial index of open recurring reminders (migration 0019), so the minutely sweep reads
 * those few rows, not every task (it was a scan of the whole table, ~2 s at a million tasks).
 */
export const missedReminders = (sql: SqlClient.SqlClient, now: Date) =>
  sql<MissedReminder>`
    SELECT t.id, t.user_id, u.username, u.timezone, t.rrule, t.anchor_time, steady_iso(t.due_at) AS due_at,
           steady_iso(t.series_start_at) AS series_start_at
    FROM tasks t JOIN users u ON u.id = t.user_id
    WHERE t.is_reminder AND t.rrule IS NOT NULL AND ${isNotQuota(sql)} AND ${isOpen(sql)}
      AND t.due_at < ${now.toISOString()}::timestamptz
    ORDER BY t.id LIMIT 1000`
