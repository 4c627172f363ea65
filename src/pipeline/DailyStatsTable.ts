import type * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { DailyStats } from "../history/History.js"
import type { UserId } from "../kernel/Ids.js"

/**
 * Every statement on `daily_stats`: the additions the mutation pipeline and
 * the rollover sweep make, and the sums statistics are read from. A user's day may be spread
 * over several rows (`shard`, so concurrent writers of one day do not queue on one row);
 * reads always sum them.
 */

export interface DayCounts {
  readonly completions: number
  readonly tasks_created: number
  readonly snoozes: number
}

export interface DayAddition extends DayCounts {
  readonly user_id: number
  /** The user's local calendar date, `YYYY-MM-DD`. */
  readonly date: string
}

/**
 * Adds to users' days: an INSERT for a statement of its own or a data-modifying CTE. In key
 * order, so two writers touching the same users' days never deadlock.
 */
export const addToDays = (sql: SqlClient.SqlClient, additions: ReadonlyArray<DayAddition>) =>
  sql`
    INSERT INTO daily_stats (user_id, date, shard, completions, tasks_created, snoozes)
    SELECT x.user_id, x.date, steady_stats_shard(), x.completions, x.tasks_created, x.snoozes
    FROM jsonb_to_recordset(${JSON.stringify(additions)}::jsonb)
      AS x(user_id integer, date date, completions integer, tasks_created integer, snoozes integer)
    ORDER BY x.user_id, x.date
    ON CONFLICT (user_id, date, shard) DO UPDATE SET
      completions = daily_stats.completions + EXCLUDED.completions,
      tasks_created = daily_stats.tasks_created + EXCLUDED.tasks_created,
      snoozes = daily_stats.snoozes + EXCLUDED.snoozes`

/** A user's counts summed over the dates from `from` to `to` (either open). */
export const sumOfDays = (sql: SqlClient.SqlClient, userId: UserId, from: string | undefined, to: string | undefined) =>
  sql<DayCounts>`
    SELECT COALESCE(sum(completions), 0)::int AS completions, COALESCE(sum(tasks_created), 0)::int AS tasks_created,
           COALESCE(sum(snoozes), 0)::int AS snoozes
    FROM daily_stats WHERE user_id = ${userId}
      ${from === undefined ? sql`` : sql`AND date >= ${from}::date`}
      ${to === undefined ? sql`` : sql`AND date <= ${to}::date`}`.pipe(Effect.map((rows) => rows[0]!), Effect.orDie)

/** One day of a user's, with the id of its first row; all null when nothing was counted that day. */
export const oneDay = (sql: SqlClient.SqlClient, userId: UserId, date: string) =>
  sql<{ readonly [K in "id" | keyof DayCounts]: number | null }>`
    SELECT min(id) AS id, sum(completions)::int AS completions, sum(tasks_created)::int AS tasks_created,
           sum(snoozes)::int AS snoozes
    FROM daily_stats WHERE user_id = ${userId} AND date = ${date}::date`.pipe(Effect.map((rows) => rows[0]!), Effect.orDie)

/** Each day from `start` to `end` that has counts, in date order. */
export const daysBetween = (sql: SqlClient.SqlClient, userId: UserId, start: string, end: string) =>
  sql<typeof DailyStats.Encoded>`
    SELECT min(id) AS id, user_id, to_char(date, 'YYYY-MM-DD') AS date, sum(completions)::int AS completions,
           sum(tasks_created)::int AS tasks_created, sum(snoozes)::int AS snoozes
    FROM daily_stats WHERE user_id = ${userId} AND date >= ${start}::date AND date <= ${end}::date
    GROUP BY user_id, date
    -- A day whose counts were all taken back (done then undone) has no stats (spec §4.5).
    HAVING sum(completions) <> 0 OR sum(tasks_created) <> 0 OR sum(snoozes) <> 0
    ORDER BY date`.pipe(Effect.orDie)
