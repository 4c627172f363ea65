import type * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Schema } from "effect"
import { DailyStats } from "../history/History.js"
import type { UserId } from "../kernel/Ids.js"
import { type SqlText, sqlText } from "../sql/SqlText.js"

/**
 * Every statement on `daily_stats`: the additions the mutation pipeline and
 * the rollover sweep make, and the sums statistics are read from. A user's day may be spread
 * over several rows (`shard`, so concurrent writers of one day do not queue on one row);
 * reads always sum them.
 */

/** A day's (or a range's) counts, as the statements sum and cast them (`::int`). */
const DayCounts = Schema.Struct({ completions: Schema.Int, tasks_created: Schema.Int, snoozes: Schema.Int })
export type DayCounts = typeof DayCounts.Type

export interface DayAddition extends DayCounts {
  readonly user_id: number
  /** The user's local calendar date, `YYYY-MM-DD`. */
  readonly date: string
}

/**
 * Adds to users' days: an INSERT for a statement of its own or a data-modifying CTE. In key
 * order, so two writers touching the same users' days never deadlock.
 */
export const addToDays = (additions: ReadonlyArray<DayAddition>): SqlText =>
  sqlText`
    INSERT INTO daily_stats (user_id, date, shard, completions, tasks_created, snoozes)
    SELECT x.user_id, x.date, steady_stats_shard(), x.completions, x.tasks_created, x.snoozes
    FROM jsonb_to_recordset(${JSON.stringify(additions)}::jsonb)
      AS x(user_id integer, date date, completions integer, tasks_created integer, snoozes integer)
    ORDER BY x.user_id, x.date
    ON CONFLICT (user_id, date, shard) DO UPDATE SET
      completions = daily_stats.completions + EXCLUDED.completions,
      tasks_created = daily_stats.tasks_created + EXCLUDED.tasks_created,
      snoozes = daily_stats.snoozes + EXCLUDED.snoozes`

const decodeSum = Schema.decodeUnknown(Schema.Tuple(DayCounts))

/** A user's counts summed over the dates from `from` to `to` (either open). */
export const sumOfDays = (sql: SqlClient.SqlClient, userId: UserId, from: string | undefined, to: string | undefined) =>
  sql`
    SELECT COALESCE(sum(completions), 0)::int AS completions, COALESCE(sum(tasks_created), 0)::int AS tasks_created,
           COALESCE(sum(snoozes), 0)::int AS snoozes
    FROM daily_stats WHERE user_id = ${userId}
      ${from === undefined ? sql`` : sql`AND date >= ${from}::date`}
      ${to === undefined ? sql`` : sql`AND date <= ${to}::date`}`.pipe(
    Effect.flatMap(decodeSum),
    Effect.map(([row]) => row),
    Effect.orDie
  )

/** `min(id)` of `integer` ids and the `::int` sums: all null over no rows. */
const decodeDay = Schema.decodeUnknown(Schema.Tuple(Schema.Struct({
  id: Schema.NullOr(Schema.Int),
  completions: Schema.NullOr(Schema.Int),
  tasks_created: Schema.NullOr(Schema.Int),
  snoozes: Schema.NullOr(Schema.Int)
})))

/** One day of a user's, with the id of its first row; all null when nothing was counted that day. */
export const oneDay = (sql: SqlClient.SqlClient, userId: UserId, date: string) =>
  sql`
    SELECT min(id) AS id, sum(completions)::int AS completions, sum(tasks_created)::int AS tasks_created,
           sum(snoozes)::int AS snoozes
    FROM daily_stats WHERE user_id = ${userId} AND date = ${date}::date`.pipe(
    Effect.flatMap(decodeDay),
    Effect.map(([row]) => row),
    Effect.orDie
  )

/** The days as GET /api/stats sends them: `DailyStats`, whose fields are in the statement's column order. */
const decodeDays = Schema.decodeUnknown(Schema.Array(DailyStats))

/** Each day from `start` to `end` that has counts, in date order. */
export const daysBetween = (sql: SqlClient.SqlClient, userId: UserId, start: string, end: string) =>
  sql`
    SELECT min(id) AS id, user_id, to_char(date, 'YYYY-MM-DD') AS date, sum(completions)::int AS completions,
           sum(tasks_created)::int AS tasks_created, sum(snoozes)::int AS snoozes
    FROM daily_stats WHERE user_id = ${userId} AND date >= ${start}::date AND date <= ${end}::date
    GROUP BY user_id, date
    -- A day whose counts were all taken back (done then undone) has no stats (spec §4.5).
    HAVING sum(completions) <> 0 OR sum(tasks_created) <> 0 OR sum(snoozes) <> 0
    ORDER BY date`.pipe(Effect.flatMap(decodeDays), Effect.orDie)
