import type * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Effect } from "effect"
import type { ProjectId, TaskId, UserId } from "../kernel/Ids.js"
import type { TaskRow } from "../pipeline/Rows.js"
import type { Task } from "./Task.js"
import { inSharedProject } from "../projects/ProjectsTable.js"
import { decodeRow, taskRowJson, TasksTable } from "../pipeline/Tables.js"
import { type CalendarColumns, calendarColumns } from "../accounts/UsersTable.js"
import { isNotQuota, isOpen, isOverdue, isQuota } from "../pipeline/WireSql.js"

/**
 * Statements on `tasks` that read, lock or check the tasks a caller names or acts on:
 * one task for a read or a write (with its owner's calendar when the write needs
 * it), the visible tasks among ids a bulk action names, the overdue ones it snoozes, the
 * reminders and quotas a time-slot change moves, the tasks moved to their owners' Inboxes,
 * and the probes the change feed and change log make. The conditions shared by the task
 * statements (which tasks a user sees, which are overdue) are here too; open, quota and
 * overdue in general are `WireSql`'s. Lists, counts and pages of a user's tasks are in
 * `TaskListSql`; the rollover's and the enrichment queue's statements in `TaskRolloverSql`
 * and `TaskEnrichmentSql`. The pipeline inserts, updates and removes tasks through
 * `TasksTable` (`Tables.ts`), the table's spec.
 */

/** Tasks a user may see: their own, and those in projects shared with everyone. */
export const visibleTo = (sql: SqlClient.SqlClient, userId: UserId, alias = "t"): Fragment =>
  sql`(${sql.literal(`${alias}.user_id`)} = ${userId} OR ${inSharedProject(sql, `${alias}.project_id`)})`

/**
 * The one overdue definition (spec §4.2): the user's own open tasks whose current due
 * date has passed; reminders and quotas are never overdue.
 */
export const overdueOf = (sql: SqlClient.SqlClient, userId: UserId, now: Date, alias = "t"): Fragment =>
  sql`${sql.literal(`${alias}.user_id`)} = ${userId} AND ${isOverdue(sql, now, alias)}`

/**
 * `{data: Task}` as JSON text (the stored wire text in the envelope json_build_object
 * wrote, without parsing it again); undefined when the user cannot see the task.
 */
export const taskBody = (sql: SqlClient.SqlClient, userId: UserId, id: TaskId) =>
  sql<{ body: string }>`
        SELECT '{"data" : ' || t.wire_text || '}' AS body FROM tasks t
        WHERE t.id = ${id} AND ${visibleTo(sql, userId)}`.pipe(Effect.map((rows) => rows[0]?.body), Effect.orDie)

/** The wire object of a task the caller knows exists. */
export const taskWire = (sql: SqlClient.SqlClient, id: number) =>
  sql<{ task: Task }>`SELECT steady_task_json(t) AS task FROM tasks t WHERE t.id = ${id}`.pipe(
    Effect.map((rows) => rows[0]!.task),
    Effect.orDie
  )

/** A task the user can see, locked for a mutation; undefined otherwise. */
export const lockVisible = (sql: SqlClient.SqlClient, userId: UserId, id: TaskId) =>
  sql<{ row: Record<string, unknown> }>`
        SELECT ${sql.literal(taskRowJson)} AS row FROM tasks t WHERE t.id = ${id} AND ${visibleTo(sql, userId)} FOR UPDATE OF t`.pipe(
    Effect.orDie,
    Effect.map((rows) => rows[0] === undefined ? undefined : decodeRow(TasksTable, rows[0].row))
  )

/** The user's own task, locked: not one they only see through a shared project. */
export const lockOwned = (sql: SqlClient.SqlClient, userId: UserId, id: TaskId) =>
  sql<{ row: Record<string, unknown> }>`
        SELECT ${sql.literal(taskRowJson)} AS row FROM tasks t WHERE t.id = ${id} AND t.user_id = ${userId} FOR UPDATE OF t`.pipe(
    Effect.orDie,
    Effect.map((rows) => rows[0] === undefined ? undefined : decodeRow(TasksTable, rows[0].row))
  )

/**
 * `lockVisible`, with the owner's calendar columns read in the same statement: a write's
 * anchors and periods are on the owner's calendar, whoever acts on the task.
 */
export const lockWithCalendar = (sql: SqlClient.SqlClient, userId: UserId, id: TaskId) =>
  sql<{ row: Record<string, unknown> } & CalendarColumns>`
        SELECT ${sql.literal(taskRowJson)} AS row, ${calendarColumns(sql, "u")}
        FROM tasks t JOIN users u ON u.id = t.user_id
        WHERE t.id = ${id} AND ${visibleTo(sql, userId)} FOR UPDATE OF t`.pipe(
    Effect.orDie,
    Effect.map((rows): { readonly row: TaskRow; readonly calendar: CalendarColumns } | undefined =>
      rows[0] === undefined ? undefined : { row: decodeRow(TasksTable, rows[0].row), calendar: rows[0] }
    )
  )

/** The visible rows among `ids`, locked, in id order. */
export const lockVisibleAmong = (sql: SqlClient.SqlClient, userId: UserId, ids: ReadonlyArray<number>) =>
  sql<{ row: Record<string, unknown> }>`
        SELECT ${sql.literal(taskRowJson)} AS row FROM tasks t
        WHERE t.id IN ${sql.in([...ids])} AND ${visibleTo(sql, userId)}
        ORDER BY t.id FOR UPDATE OF t`.pipe(
    Effect.map((rows) => rows.map((r) => decodeRow(TasksTable, r.row))),
    Effect.orDie
  )

/** The user's overdue tasks (`overdueOf`), locked, in id order. */
export const lockOverdue = (sql: SqlClient.SqlClient, userId: UserId, now: Date) =>
  Effect.orDie(sql<{ row: Record<string, unknown> }>`
            SELECT ${sql.literal(taskRowJson)} AS row FROM tasks t WHERE ${overdueOf(sql, userId, now)}
            ORDER BY t.id FOR UPDATE OF t`).pipe(Effect.map((rows) => rows.map((r) => decodeRow(TasksTable, r.row))))

/** Whether the task is visible to the user now; undefined when it is gone. */
export const isVisibleTo = (sql: SqlClient.SqlClient, userId: UserId, taskId: number) =>
  sql<{ visible: boolean }>`SELECT ${visibleTo(sql, userId)} AS visible FROM tasks t WHERE t.id = ${taskId}`.pipe(
    Effect.map((rows) => rows[0]?.visible),
    Effect.orDie
  )

/** The task's owner; undefined when it is gone. */
export const ownerOf = (sql: SqlClient.SqlClient, taskId: TaskId) =>
  Effect.orDie(sql<{ user_id: UserId }>`SELECT user_id FROM tasks WHERE id = ${taskId}`).pipe(
    Effect.map((rows) => rows[0]?.user_id)
  )

/** Which of `ids` are the user's quotas, not in the trash, with what their prompts are checked against. */
export const quotasAmong = (sql: SqlClient.SqlClient, userId: UserId, ids: ReadonlyArray<number>) =>
  Effect.orDie(sql<{ id: number; rrule: string | null; progress_target: number }>`
          SELECT id, rrule, progress_target FROM tasks WHERE id IN ${sql.in(ids)} AND user_id = ${userId}
            AND ${isQuota(sql, "")} AND deleted_at IS NULL`)

/** The user's open reminders, locked, with what their time of day is read from. */
export const lockOpenReminders = (sql: SqlClient.SqlClient, userId: UserId) =>
  Effect.orDie(sql<{ id: TaskId; due_at: string | null; anchor_time: string | null }>`
          SELECT id, steady_iso(due_at) AS due_at, anchor_time FROM tasks
          WHERE user_id = ${userId} AND is_reminder AND ${isOpen(sql, "")} AND ${isNotQuota(sql, "")}
          ORDER BY id FOR UPDATE`)

/** The user's quotas whose prompts start in the slot (configured, or by the user's default), locked. */
export const lockQuotasPromptingIn = (sql: SqlClient.SqlClient, userId: UserId, slotId: number, isDefault: boolean) =>
  sql<Pick<TaskRow, "id" | "quota_prompt_config">>`
        SELECT id, quota_prompt_config FROM tasks
        WHERE user_id = ${userId} AND ${isQuota(sql, "")} AND NOT done AND deleted_at IS NULL
          AND ((quota_prompt_config->>'slot_id')::int = ${slotId}
               ${isDefault ? sql`OR quota_prompt_config IS NULL OR quota_prompt_config->'slot_id' IS NULL OR quota_prompt_config->'slot_id' = 'null'::jsonb` : sql``})
        ORDER BY id FOR UPDATE`.pipe(Effect.orDie)

/** How many tasks not in the trash are filed in the project. */
export const liveTasksIn = (sql: SqlClient.SqlClient, projectId: number) =>
  Effect.orDie(
    sql<{ n: number }>`SELECT count(*)::int AS n FROM tasks WHERE project_id = ${projectId} AND deleted_at IS NULL`
  ).pipe(Effect.map((rows) => rows[0]!.n))

/**
 * Every task filed in the project (in the trash or not), locked, with its owner's Inbox
 * it moves to when the project goes.
 */
export const lockWithInbox = (sql: SqlClient.SqlClient, projectId: number) =>
  Effect.orDie(sql<{ id: TaskId; inbox: ProjectId }>`
            SELECT t.id, p.id AS inbox FROM tasks t JOIN projects p ON p.owner_id = t.user_id AND p.is_inbox
            WHERE t.project_id = ${projectId} ORDER BY t.id FOR UPDATE OF t`)

/** A task locked before a write outside the mutation pipeline touches it and another row. */
export const lockTask = (sql: SqlClient.SqlClient, id: number) => sql`SELECT id FROM tasks WHERE id = ${id} FOR UPDATE`

/**
 * The task a change names, for a LATERAL join: `kind` and `id` are the caller's columns.
 * Looked up by key, one probe per row (OFFSET 0): a plain join let a generic plan made on a
 * small database hash-join a scan of every task on each read.
 */
export const taskNamedBy = (sql: SqlClient.SqlClient, kind: string, id: string): Fragment =>
  sql`(SELECT x AS task, x.id, x.user_id, x.project_id FROM tasks x
                           WHERE ${sql.literal(kind)} = 'task' AND x.id = ${sql.literal(id)} OFFSET 0)`

/** A change's task owner and whether it is in a shared project, for the change log's LATERAL probe (see `taskNamedBy`). */
export const taskOwnerNamedBy = (sql: SqlClient.SqlClient, kind: string, id: string): Fragment =>
  sql`SELECT x.user_id, ${inSharedProject(sql, "x.project_id")} AS in_shared
      FROM tasks x WHERE ${sql.literal(kind)} = 'task' AND x.id = ${sql.literal(id)}`

/** One task id as a row `e`, with the task (if still there) as `x`: the change log's source for a single task. */
export const taskById = (sql: SqlClient.SqlClient, id: number): Fragment =>
  sql`(SELECT ${id}::integer AS id) AS e LEFT JOIN tasks x ON x.id = e.id`
