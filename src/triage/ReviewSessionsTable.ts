import type * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Effect, Option, Schema } from "effect"
import { IsoText } from "../kernel/Columns.js"
import { UserId } from "../kernel/Ids.js"

/**
 * Every statement on `review_sessions`: keeping a user's session (one per user, a new one
 * replaces the last), the purge by age and count that goes with it, reading one and taking
 * it. The session numbers tasks; `tasks` holds their ids by number.
 */

/** A stored session. */
export const StoredSession = Schema.Struct({
  user_id: UserId,
  created_at: IsoText,
  /** Task ids by seq − 1. */
  tasks: Schema.Array(Schema.Int)
})
export type StoredSession = typeof StoredSession.Type

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * Keeps the user's new session (the upsert replaces the last), then drops those created
 * before `cutoff` and all but the newest `limit` over all users.
 */
export const keepSession = (
  sql: SqlClient.SqlClient,
  session: { readonly id: string; readonly userId: UserId; readonly at: string; readonly tasks: ReadonlyArray<number> },
  cutoff: string,
  limit: number
) =>
  Effect.zipRight(
    sql`
          INSERT INTO review_sessions (id, user_id, created_at, tasks)
          VALUES (${session.id}::uuid, ${session.userId}, ${session.at}::timestamptz, ${`{${session.tasks.join(",")}}`}::int[])
          ON CONFLICT (user_id) DO UPDATE SET
            id = EXCLUDED.id, created_at = EXCLUDED.created_at, tasks = EXCLUDED.tasks, seq = DEFAULT`,
    sql`
          DELETE FROM review_sessions
          WHERE created_at < ${cutoff}::timestamptz
             OR seq <= (SELECT seq FROM review_sessions ORDER BY seq DESC OFFSET ${limit} LIMIT 1)`
  ).pipe(Effect.asVoid, Effect.orDie)

/** A stored session by its id; undefined when there is none (or the id is no UUID). */
export const storedSession = (sql: SqlClient.SqlClient, sessionId: string) =>
  UUID.test(sessionId)
    ? SqlSchema.findOne({
      Request: Schema.String,
      Result: StoredSession,
      execute: (id) =>
        sql`SELECT user_id, steady_iso(created_at) AS created_at, tasks FROM review_sessions WHERE id = ${id}::uuid`
    })(sessionId).pipe(Effect.map(Option.getOrUndefined), Effect.orDie)
    : Effect.succeed(undefined)

/** Takes a session once: of two executes racing on any instances, one gets it. */
export const takeSession = (sql: SqlClient.SqlClient, sessionId: string) =>
  SqlSchema.findAll({
    Request: Schema.String,
    Result: Schema.Struct({ id: Schema.String }),
    execute: (id) => sql`DELETE FROM review_sessions WHERE id = ${id}::uuid RETURNING id`
  })(sessionId).pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)
