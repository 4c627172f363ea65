import type * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Option, Schema } from "effect"
import { CountRow } from "../kernel/Columns.js"
import { TaskId, UserId } from "../kernel/Ids.js"
import { inboxOf, inSharedProject } from "../projects/ProjectsTable.js"
import { lockTask } from "../tasks/TasksTable.js"

/**
 * Statements on `tasks` that go with the enrichment queue: a task row's
 * `enrichment_status` is the request a create makes, moved into `ai_enrichment_queue` when
 * the worker looks; a reprocess queues one and marks the task; an ended request marks the
 * task done or failed. The queue's own rows are `EnrichmentQueue`'s.
 */

/**
 * Moves up to `limit` requests, oldest first, into the queue (a pending row due at the
 * task's creation). Another instance promoting the same task at once inserts nothing (ON
 * CONFLICT); a task already queued (a reprocess, or a request queued by the code before
 * 0021) is left. A baseline kept by the code of migration 0021 may lack the Inbox's id (a
 * null `project_id`): the owner's Inbox, which never changes.
 */
export const promotePending = (sql: SqlClient.SqlClient, limit: number) =>
  sql`
        INSERT INTO ai_enrichment_queue (task_id, user_id, state, attempts, next_attempt_at, source_title, baseline, created_at, updated_at)
        SELECT t.id, t.user_id, 'pending', 0, t.created_at, t.original_title,
          CASE WHEN t.enrichment_baseline IS NULL THEN steady_enrichment_baseline(t)
            ELSE t.enrichment_baseline || jsonb_build_object('project_id', COALESCE((t.enrichment_baseline->>'project_id')::integer,
              ${inboxOf(sql, sql`t.user_id`)})) END,
          t.created_at, t.created_at
        FROM tasks t
        WHERE t.enrichment_status = 'pending'
          AND NOT EXISTS (SELECT 1 FROM ai_enrichment_queue q WHERE q.task_id = t.id)
        ORDER BY t.id LIMIT ${limit}
        ON CONFLICT (task_id) DO NOTHING`

/**
 * Queues enrichment of task `taskId` from `sourceTitle` (replacing a request queued before)
 * and marks the task pending; its baseline is the row as it is now
 * (`steady_enrichment_baseline`, as for a create).
 */
export const requeueTask = (sql: SqlClient.SqlClient, taskId: number, sourceTitle: string, at: string) =>
  sql`
        WITH queued AS (
          INSERT INTO ai_enrichment_queue (task_id, user_id, state, attempts, next_attempt_at, source_title, baseline, created_at, updated_at)
          SELECT t.id, t.user_id, 'pending', 0, ${at}::timestamptz, ${sourceTitle}, steady_enrichment_baseline(t),
            ${at}::timestamptz, ${at}::timestamptz
          FROM tasks t WHERE t.id = ${taskId}
          ON CONFLICT (task_id) DO UPDATE SET state = 'pending', attempts = 0, next_attempt_at = EXCLUDED.next_attempt_at,
            lease_until = NULL, source_title = EXCLUDED.source_title, baseline = EXCLUDED.baseline, last_error = NULL,
            updated_at = EXCLUDED.updated_at
          RETURNING task_id
        )
        UPDATE tasks SET enrichment_status = 'pending' WHERE id IN (SELECT task_id FROM queued)`

/**
 * Ends the request for `taskId` made at `requestedAt` (if it is still the current one):
 * done or failed, on the queue row and the task. Returns the task, when it was ended.
 */
export const endRequest = (
  sql: SqlClient.SqlClient,
  taskId: number,
  requestedAt: string,
  state: "done" | "failed",
  error: string | null,
  now: Date
) =>
  // The task row is locked first, in the order create and reprocess take the two rows.
  lockTask(sql, taskId).pipe(Effect.zipRight(SqlSchema.findAll({
    Request: Schema.Void,
    Result: Schema.Struct({ id: TaskId }),
    execute: () =>
      sql`
        WITH ended AS (
          UPDATE ai_enrichment_queue SET state = ${state}, attempts = attempts + 1, lease_until = NULL,
            last_error = ${error}, updated_at = ${now.toISOString()}::timestamptz
          WHERE task_id = ${taskId} AND steady_iso(updated_at) = ${requestedAt}
          RETURNING task_id
        )
        UPDATE tasks SET enrichment_status = ${state}, enrichment_baseline = NULL WHERE id IN (SELECT task_id FROM ended) RETURNING id`
  })(undefined)), Effect.catchTag("ParseError", Effect.die))

/**
 * Whether the task is in a shared project now: then users besides its owner read what
 * enrichment writes, and its prompt carries none of the owner's private context. A task
 * that is gone counts as shared (nothing private is sent for it).
 */
export const inSharedProjectNow = (sql: SqlClient.SqlClient, taskId: number) =>
  SqlSchema.findOne({
    Request: Schema.Int,
    Result: Schema.Struct({ shared: Schema.Boolean }),
    execute: (taskId) => sql`SELECT ${inSharedProject(sql, "t.project_id")} AS shared FROM tasks t WHERE t.id = ${taskId}`
  })(taskId).pipe(Effect.map(Option.match({ onNone: () => true, onSome: (row) => row.shared })), Effect.orDie)

/** How many of the user's tasks wait for enrichment. */
export const pendingOf = (sql: SqlClient.SqlClient, userId: UserId) =>
  SqlSchema.single({
    Request: UserId,
    Result: CountRow,
    execute: (userId) => sql`SELECT count(*)::int AS n FROM tasks WHERE user_id = ${userId} AND enrichment_status = 'pending'`
  })(userId).pipe(Effect.map((row) => row.n), Effect.catchTags({ ParseError: Effect.die, NoSuchElementException: Effect.die }))

/** How many tasks of every user wait for enrichment, as a subquery. */
export const pendingCount = (sql: SqlClient.SqlClient): Fragment =>
  sql`(SELECT count(*)::int FROM tasks WHERE enrichment_status = 'pending')`
