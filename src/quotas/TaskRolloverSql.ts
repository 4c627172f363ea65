import type * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Schema } from "effect"
import { IsoText } from "../kernel/Columns.js"
import { TaskId, UserId } from "../kernel/Ids.js"
import { visibleTo } from "../tasks/TasksTable.js"
import { CalendarColumns, calendarColumns } from "../accounts/UsersTable.js"
import { hasRunningPeriod, isNotQuota, isOpen } from "../pipeline/WireSql.js"

/**
 * Statements on `tasks` that find what rolls over with time: quotas whose
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
const ClaimedQuota = Schema.Struct({
  id: Schema.Int,
  user_id: Schema.Int,
  project_id: Schema.Int,
  title: Schema.String,
  rrule: Schema.NullOr(Schema.String),
  is_tracked: Schema.Boolean,
  progress_target: Schema.Int,
  progress_current: Schema.Int,
  period_start: Schema.NullOr(IsoText),
  period_end: Schema.NullOr(IsoText),
  /** The timestamptz as PostgreSQL prints it (`::text`), for the cursor. */
  end_key: Schema.String,
  completion_count: Schema.Int,
  first_completed_at: Schema.NullOr(IsoText),
  ...CalendarColumns.fields
})
export type ClaimedQuota = typeof ClaimedQuota.Type
const decodeClaimed = Schema.decodeUnknown(Schema.Array(ClaimedQuota))

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
  sql`
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
      FOR UPDATE OF t ${skipLocked ? sql`SKIP LOCKED` : sql``}`.pipe(
    // A row that does not fit is a defect; the SqlError stays the sweep's.
    Effect.flatMap((rows) => Effect.catchTag(decodeClaimed(rows), "ParseError", Effect.die))
  )

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

const decodeIds = Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: TaskId })))

/** The user's quotas whose periods run, by id (a change of zone or week start realigns them). */
export const runningQuotasOf = (sql: SqlClient.SqlClient, userId: UserId) =>
  Effect.orDie(Effect.flatMap(
    sql`
          SELECT id FROM tasks WHERE user_id = ${userId} AND ${hasRunningPeriod(sql, "")} ORDER BY id`,
    decodeIds
  ))

/**
 * The quotas among `ids` (a subquery of task ids) whose periods have ended by `now` and that
 * the user can see, by id.
 */
export const endedQuotasAmong = (sql: SqlClient.SqlClient, userId: UserId, now: Date, ids: Fragment) =>
  Effect.orDie(Effect.flatMap(
    sql`
          SELECT t.id FROM tasks t
          WHERE ${hasRunningPeriod(sql)} AND t.progress_period_end <= ${now.toISOString()}::timestamptz
            AND t.id IN ${ids}
            AND ${visibleTo(sql, userId)}
          ORDER BY t.id`,
    decodeIds
  ))

/** How far behind the rollover is at `now`, in seconds: since the oldest period end not rolled yet (a subquery, NULL when none). */
export const rolloverLag = (sql: SqlClient.SqlClient, now: Date): Fragment =>
  sql`(SELECT EXTRACT(EPOCH FROM (${now.toISOString()}::timestamptz - min(progress_period_end)))::float8
        FROM tasks WHERE ${hasRunningPeriod(sql, "")}
          AND progress_period_end <= ${now.toISOString()}::timestamptz)`

const MissedReminder = Schema.Struct({
  id: TaskId,
  user_id: UserId,
  username: Schema.String,
  timezone: Schema.String,
  rrule: Schema.String,
  anchor_time: Schema.NullOr(Schema.String),
  due_at: IsoText,
  series_start_at: Schema.NullOr(IsoText)
})
export type MissedReminder = typeof MissedReminder.Type
const decodeMissed = Schema.decodeUnknown(Schema.Array(MissedReminder))

/** Candidates one page of the missed-reminder sweep reads. */
export const MISSED_REMINDERS_PAGE = 1000

/**
 * Up to `size` open recurring reminders whose time has passed, of every user, after id
 * `after`, by id: the sweep pages through them with that cursor, so whatever sits at the front
 * cannot hold back what comes after it. Reminders the sweep has stopped (`roll_stopped_at`,
 * migration 0031) are not among them, nor those of `skipUsers` (who had their share of this
 * sweep). Read from the partial index of reminders to roll, in id order, `due_at` checked on
 * its entries: the page reads those few rows, not the table.
 */
export const missedReminders = (
  sql: SqlClient.SqlClient,
  now: Date,
  after = 0,
  size = MISSED_REMINDERS_PAGE,
  skipUsers: ReadonlyArray<UserId> = []
) =>
  sql`
    SELECT t.id, t.user_id, u.username, u.timezone, t.rrule, t.anchor_time, steady_iso(t.due_at) AS due_at,
           steady_iso(t.series_start_at) AS series_start_at
    FROM tasks t JOIN users u ON u.id = t.user_id
    WHERE t.is_reminder AND t.rrule IS NOT NULL AND ${isNotQuota(sql)} AND ${isOpen(sql)} AND t.roll_stopped_at IS NULL
      AND t.id > ${after} AND t.due_at < ${now.toISOString()}::timestamptz
      ${skipUsers.length === 0 ? sql`` : sql`AND t.user_id NOT IN ${sql.in(skipUsers)}`}
    ORDER BY t.id LIMIT ${size}`.pipe(
    // A row that does not fit is a defect; the SqlError stays the sweep's.
    Effect.flatMap((rows) => Effect.catchTag(decodeMissed(rows), "ParseError", Effect.die))
  )

/**
 * Stops rolling the given reminders as of `at`: each is left out of the sweep from now on. A
 * reminder whose rule, due date, series start or anchor no longer reads as the sweep saw it
 * (the user changed it meanwhile; compared as the sweep read them, timestamps in steady_iso
 * text) is left alone, so the next sweep judges the new schedule.
 * No `updated_at`, no change feed entry: nothing a client sees changes.
 */
export const stopRolling = (sql: SqlClient.SqlClient, at: Date, seen: ReadonlyArray<MissedReminder>) => {
  const schedules = seen.map(({ anchor_time, due_at, id, rrule, series_start_at }) => ({ id, rrule, anchor_time, due_at, series_start_at }))
  return sql`
    UPDATE tasks t SET roll_stopped_at = ${at.toISOString()}::timestamptz
    FROM jsonb_to_recordset(${JSON.stringify(schedules)}::jsonb)
      AS x(id int, rrule text, anchor_time text, due_at text, series_start_at text)
    WHERE t.id = x.id AND t.rrule = x.rrule AND steady_iso(t.due_at) = x.due_at
      AND t.anchor_time IS NOT DISTINCT FROM x.anchor_time
      AND steady_iso(t.series_start_at) IS NOT DISTINCT FROM x.series_start_at
      AND t.roll_stopped_at IS NULL`
}
