import type * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Schema } from "effect"
import { compactJson, decodeOneBody, IsoText } from "../kernel/Columns.js"
import type { TaskId, UserId } from "../kernel/Ids.js"
import type { LastCompletion } from "./Lifecycle.js"
import { completionJson } from "../pipeline/WireSql.js"

/**
 * Every statement on `completions` outside the mutation pipeline's own writes:
 * the rollover sweep's batch of closed periods, the history page, a task's latest
 * completions and the export's pages. The pipeline inserts single completions through
 * `CompletionsTable` (`Tables.ts`), the table's spec.
 */

/** A completion the rollover sweep records for a met quota period. */
export interface SweptCompletion {
  readonly task_id: number
  readonly user_id: number
  readonly completed_at: string
  readonly task_title: string
  readonly project_id: number
  readonly is_tracked: boolean
  readonly progress_target: number
}

export const insertSwept = (sql: SqlClient.SqlClient, completions: ReadonlyArray<SweptCompletion>) =>
  sql`
    INSERT INTO completions (task_id, user_id, completed_at, due_at_was, due_at_next, task_title, project_id,
                             is_reminder, is_tracked, progress_target)
    SELECT x.task_id, x.user_id, x.completed_at, NULL, NULL, x.task_title, x.project_id, false, x.is_tracked, x.progress_target
    FROM jsonb_to_recordset(${JSON.stringify(completions)}::jsonb)
      AS x(task_id int, user_id int, completed_at timestamptz, task_title text, project_id int, is_tracked boolean,
           progress_target int)`

/** Which completions a history page shows: a user's, of one task or all, within every range given. */
export interface CompletionFilter {
  readonly userId: UserId
  readonly taskId: number | undefined
  /** Half-open `[from, before)` ranges of `completed_at`, as ISO instants. */
  readonly ranges: ReadonlyArray<readonly [from: string, before: string]>
}


/** `{data: {completions, count}}`, newest first, as JSON text from the database. */
export const completionsPageJson = (
  sql: SqlClient.SqlClient,
  filter: CompletionFilter,
  page: { readonly limit: number; readonly offset: number }
) => {
  const conditions = [sql`c.user_id = ${filter.userId}`]
  if (filter.taskId !== undefined) conditions.push(sql`c.task_id = ${filter.taskId}`)
  for (const [from, before] of filter.ranges) {
    conditions.push(sql`c.completed_at >= ${from}::timestamptz AND c.completed_at < ${before}::timestamptz`)
  }
  return sql`
    WITH c AS (
      SELECT c.* FROM completions c WHERE ${sql.and(conditions)}
      ORDER BY c.completed_at DESC, c.id DESC LIMIT ${page.limit} OFFSET ${page.offset}
    )
    SELECT json_build_object('data', json_build_object(
      'completions', COALESCE(json_agg(${completionJson(sql)} ORDER BY c.completed_at DESC, c.id DESC), '[]'::json),
      'count', count(*)::int))::text AS body FROM c`.pipe(
    Effect.flatMap(decodeOneBody),
    Effect.map(([row]) => compactJson(row.body)),
    Effect.orDie
  )
}

/** A completion as undoing one reads it back, timestamps as `steady_iso` text. */
const LastCompletionRow: Schema.Schema<LastCompletion> = Schema.Struct({
  id: Schema.Int,
  completed_at: IsoText,
  due_at_was: Schema.NullOr(IsoText),
  due_at_next: Schema.NullOr(IsoText)
})
const decodeLatest = Schema.decodeUnknown(Schema.Array(LastCompletionRow))

/** A task's newest completions, newest first. */
export const latestCompletions = (sql: SqlClient.SqlClient, taskId: TaskId, limit: number) =>
  sql`
    SELECT id, steady_iso(completed_at) AS completed_at, steady_iso(due_at_was) AS due_at_was,
           steady_iso(due_at_next) AS due_at_next
    FROM completions WHERE task_id = ${taskId} ORDER BY completed_at DESC, id DESC LIMIT ${limit}`.pipe(
    Effect.flatMap(decodeLatest),
    Effect.orDie
  )

/** An export page's rows: each completion's wire JSON text (made compact, `compactJson`, and otherwise handed on). */
const decodeExportRows = Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.Int, json: Schema.String })))

/** One page of a user's completions for the export, by id after `after`. */
export const exportPage = (sql: SqlClient.SqlClient, userId: UserId, after: number, limit: number) =>
  Effect.flatMap(
    sql`SELECT c.id, ${completionJson(sql)}::text AS json
    FROM completions c WHERE c.user_id = ${userId} AND c.id > ${after} ORDER BY c.id LIMIT ${limit}`,
    decodeExportRows
  ).pipe(Effect.map((rows) => rows.map((row) => ({ id: row.id, json: compactJson(row.json) }))))
