import type * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Effect, Option, Schema } from "effect"
import { IsoText } from "../kernel/Columns.js"
import { UserId } from "../kernel/Ids.js"

/**
 * Every statement on the AI's own tables: the model-call log (`ai_activity`), the day's
 * "what next" (`ai_whats_next`), insights sessions and their results (`ai_insight_sessions`,
 * `ai_insight_results`) and the rate-limit buckets (`ai_rate_limits`). The enrichment queue's
 * statements are `EnrichmentQueue`'s and `TaskEnrichmentSql`'s; reads that join tasks
 * (candidates, insight results with their tasks) are the tasks'.
 */

// ---- ai_activity ----

/** One model call for the log; the prompt and answer only when the configuration keeps them. */
export interface ActivityEntry {
  readonly userId: number | null
  readonly feature: string
  readonly ok: boolean
  readonly durationMs: number
  readonly provider: string
  readonly model: string
  readonly error: string | null
  readonly prompt: string | null
  readonly answer: string | null
  readonly at: string
}

export const insertActivity = (sql: SqlClient.SqlClient, entry: ActivityEntry) =>
  sql`INSERT INTO ai_activity (user_id, feature, status, duration_ms, provider, model, error, prompt, answer, created_at)
          VALUES (${entry.userId}, ${entry.feature}, ${entry.ok ? "ok" : "error"}, ${entry.durationMs}, ${entry.provider},
                  ${entry.model}, ${entry.error}, ${entry.prompt}, ${entry.answer}, ${entry.at}::timestamptz)`.pipe(Effect.asVoid)

export const deleteActivityBefore = (sql: SqlClient.SqlClient, cutoff: string) =>
  sql`DELETE FROM ai_activity WHERE created_at < ${cutoff}::timestamptz`.pipe(Effect.asVoid)

/** A logged call as the status shows it. */
export const ActivityRow = Schema.Struct({
  feature: Schema.String,
  status: Schema.Literal("ok", "error"),
  duration_ms: Schema.Int,
  model: Schema.String,
  error: Schema.NullOr(Schema.String),
  created_at: IsoText
})

/** The user's newest `limit` calls, newest first. */
export const recentActivity = (sql: SqlClient.SqlClient, userId: UserId, limit: number) =>
  SqlSchema.findAll({
    Request: Schema.Struct({ userId: UserId, limit: Schema.Int }),
    Result: ActivityRow,
    execute: ({ limit, userId }) =>
      sql`SELECT feature, status, duration_ms, model, error, steady_iso(created_at) AS created_at FROM ai_activity
          WHERE user_id = ${userId} ORDER BY created_at DESC, id DESC LIMIT ${limit}`
  })({ userId, limit }).pipe(Effect.orDie)

// ---- ai_whats_next ----

/** A day's "what next" as stored (jsonb) and answered. */
export const WhatsNextResult = Schema.Struct({
  tasks: Schema.Array(Schema.Struct({ task_id: Schema.Int, reason: Schema.String })),
  summary: Schema.String,
  generated_at: IsoText,
  duration_ms: Schema.Int
})
export type WhatsNextResult = typeof WhatsNextResult.Type

/** The user's "what next" of `day` (YYYY-MM-DD), null when none was made. */
export const storedWhatsNext = (sql: SqlClient.SqlClient, userId: UserId, day: string) =>
  SqlSchema.findOne({
    Request: Schema.Struct({ userId: UserId, day: Schema.String }),
    Result: Schema.Struct({ result: WhatsNextResult }),
    execute: ({ day, userId }) => sql`SELECT result FROM ai_whats_next WHERE user_id = ${userId} AND day = ${day}::date`
  })({ userId, day }).pipe(Effect.map(Option.match({ onNone: () => null, onSome: (row) => row.result })), Effect.orDie)

export const storeWhatsNext = (sql: SqlClient.SqlClient, userId: UserId, day: string, result: WhatsNextResult) =>
  sql`INSERT INTO ai_whats_next (user_id, day, result) VALUES (${userId}, ${day}::date, ${JSON.stringify(result)}::jsonb)
        ON CONFLICT (user_id, day) DO UPDATE SET result = EXCLUDED.result`.pipe(Effect.asVoid, Effect.orDie)

// ---- ai_insight_sessions, ai_insight_results ----

/** Ends, as failed, the running sessions whose heartbeat is older than `cutoff`. */
export const failStaleSessions = (sql: SqlClient.SqlClient, at: string, cutoff: string) =>
  sql`UPDATE ai_insight_sessions SET status = 'failed', finished_at = ${at}::timestamptz,
          error = 'interrupted: the service stopped while this session ran'
        WHERE status = 'running' AND heartbeat_at < ${cutoff}::timestamptz`.pipe(Effect.asVoid, Effect.orDie)

/**
 * Starts a session; false when the user has one running already (the partial unique index
 * allows one running session per user, across instances).
 */
export const insertSession = (
  sql: SqlClient.SqlClient,
  session: { readonly id: string; readonly userId: UserId; readonly totalTasks: number; readonly at: string }
) =>
  SqlSchema.findAll({
    Request: Schema.Struct({ id: Schema.String, userId: UserId, totalTasks: Schema.Int, at: IsoText }),
    Result: Schema.Struct({ id: Schema.String }),
    execute: ({ at, id, totalTasks, userId }) =>
      sql`INSERT INTO ai_insight_sessions (id, user_id, status, total_tasks, completed, started_at, heartbeat_at)
          VALUES (${id}, ${userId}, 'running', ${totalTasks}, 0, ${at}::timestamptz, ${at}::timestamptz)
          ON CONFLICT (user_id) WHERE status = 'running' DO NOTHING RETURNING id`
  })(session).pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

/** One insight of a chunk, as `checkInsights` makes it. */
export interface InsightRow {
  readonly task_id: number
  readonly score: number
  readonly commentary: string
  readonly signals: unknown
}

/** A chunk's results and the session's progress, in one transaction. */
export const recordChunk = (
  sql: SqlClient.SqlClient,
  sessionId: string,
  results: ReadonlyArray<InsightRow>,
  chunkSize: number,
  at: string
) =>
  sql.withTransaction(Effect.gen(function*() {
    for (const r of results) {
      yield* sql`INSERT INTO ai_insight_results (session_id, task_id, score, commentary, signals)
              VALUES (${sessionId}, ${r.task_id}, ${r.score}, ${r.commentary}, ${JSON.stringify(r.signals)}::jsonb)
              ON CONFLICT DO NOTHING`
    }
    yield* sql`UPDATE ai_insight_sessions SET completed = completed + ${chunkSize}, heartbeat_at = ${at}::timestamptz
            WHERE id = ${sessionId}`
  })).pipe(Effect.orDie)

/** Ends a running session: complete without an error, failed with one. */
export const finishSession = (sql: SqlClient.SqlClient, sessionId: string, error: string | null, at: string) =>
  sql`UPDATE ai_insight_sessions SET status = ${error === null ? "complete" : "failed"},
            finished_at = ${at}::timestamptz, error = ${error}
          WHERE id = ${sessionId} AND status = 'running'`.pipe(Effect.asVoid, Effect.orDie)

/** A session as its status shows it (the progress is worked out from the counts). */
export const SessionRow = Schema.Struct({
  session_id: Schema.String,
  status: Schema.Literal("running", "complete", "failed"),
  total_tasks: Schema.Int,
  completed: Schema.Int,
  started_at: IsoText,
  finished_at: Schema.NullOr(IsoText),
  error: Schema.NullOr(Schema.String)
})

/** One of the user's sessions; undefined when it is not theirs or unknown. */
export const sessionOf = (sql: SqlClient.SqlClient, userId: UserId, sessionId: string) =>
  SqlSchema.findOne({
    Request: Schema.Struct({ userId: UserId, sessionId: Schema.String }),
    Result: SessionRow,
    execute: ({ sessionId, userId }) =>
      sql`SELECT id AS session_id, status, total_tasks, completed, steady_iso(started_at) AS started_at,
                 steady_iso(finished_at) AS finished_at, error
          FROM ai_insight_sessions WHERE id = ${sessionId} AND user_id = ${userId}`
  })({ userId, sessionId }).pipe(Effect.map(Option.getOrUndefined), Effect.orDie)

/** The user's latest complete session; undefined when none has completed. */
export const latestCompleteSession = (sql: SqlClient.SqlClient, userId: UserId) =>
  SqlSchema.findOne({
    Request: UserId,
    Result: Schema.Struct({ id: Schema.String, finished_at: IsoText }),
    execute: (userId) =>
      sql`SELECT id, steady_iso(finished_at) AS finished_at FROM ai_insight_sessions
          WHERE user_id = ${userId} AND status = 'complete' ORDER BY finished_at DESC, started_at DESC LIMIT 1`
  })(userId).pipe(Effect.map(Option.getOrUndefined), Effect.orDie)

// ---- ai_rate_limits ----

/** A bucket: `capacity` tokens, refilled at `capacity` per `windowMs`; the time is `at`. */
export interface Bucket {
  readonly userId: UserId
  readonly bucket: string
  readonly capacity: number
  readonly windowMs: number
  readonly at: string
}

/** The bucket's tokens at `at`: what it held plus the refill since, at most `capacity`. */
const refilled = (sql: SqlClient.SqlClient, b: Bucket) =>
  sql`LEAST(${b.capacity}::float8, b.tokens + GREATEST(0, extract(epoch FROM (${b.at}::timestamptz - b.updated_at))::float8 * 1000)
        * ${b.capacity}::float8 / ${b.windowMs}::float8)`

/**
 * Takes one token from the bucket; false when it has less than one. One statement:
 * concurrent requests queue on the row, so a burst cannot overshoot.
 */
export const takeToken = (sql: SqlClient.SqlClient, b: Bucket) =>
  SqlSchema.findAll({
    Request: Schema.Void,
    Result: Schema.Struct({ user_id: UserId }),
    execute: () =>
      sql`INSERT INTO ai_rate_limits AS b (user_id, bucket, tokens, updated_at)
          VALUES (${b.userId}, ${b.bucket}, ${b.capacity - 1}::float8, ${b.at}::timestamptz)
          ON CONFLICT (user_id, bucket) DO UPDATE SET tokens = ${refilled(sql, b)} - 1, updated_at = EXCLUDED.updated_at
            WHERE ${refilled(sql, b)} >= 1
          RETURNING b.user_id`
  })(undefined).pipe(Effect.map((rows) => rows.length > 0), Effect.catchTag("ParseError", Effect.die))

/** The bucket's tokens at `at` (0 when it has no row). */
export const tokensLeft = (sql: SqlClient.SqlClient, b: Bucket) =>
  SqlSchema.findOne({
    Request: Schema.Void,
    Result: Schema.Struct({ tokens: Schema.Number }),
    execute: () =>
      sql`SELECT ${refilled(sql, b)} AS tokens FROM ai_rate_limits b WHERE b.user_id = ${b.userId} AND b.bucket = ${b.bucket}`
  })(undefined).pipe(
    Effect.map(Option.match({ onNone: () => 0, onSome: (row) => row.tokens })),
    Effect.catchTag("ParseError", Effect.die)
  )
