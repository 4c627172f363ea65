import type * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Schema } from "effect"
import { BodyRow, CountRow, decodeRowColumns, IsoText, RowObject } from "../kernel/Columns.js"
import { ProjectId, TaskId, UserId } from "../kernel/Ids.js"
import { TaskRow } from "../pipeline/Rows.js"
import { Task } from "./Task.js"
import { inSharedProject } from "../projects/ProjectsTable.js"
import { decodeRow, taskRowJson, TasksTable } from "../pipeline/Tables.js"
import { CalendarColumns, calendarColumns } from "../accounts/UsersTable.js"
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

const isTask = Schema.is(Task)

/**
 * A task's wire object as `steady_task_json` renders it (jsonb, parsed by the driver), checked
 * against `Task` where it stands rather than decoded: it goes on as it came (in a response, a
 * webhook's payload), its keys in the database's order, where a decode would rebuild it in the
 * schema's order (and cost ten times as much).
 */
export const TaskWire = Schema.declare((u: unknown): u is Task => isTask(u), { identifier: "TaskWire" })

/** Tasks a user may see: their own, and those in projects shared with everyone. */
export const visibleTo = (sql: SqlClient.SqlClient, userId: UserId, alias = "t"): Fragment =>
  sql`(${sql.literal(`${alias}.user_id`)} = ${userId} OR ${inSharedProject(sql, `${alias}.project_id`)})`

/**
 * The one overdue definition (spec §4.2): the user's own open tasks whose current due
 * date has passed; reminders and quotas are never overdue.
 */
export const overdueOf = (sql: SqlClient.SqlClient, userId: UserId, now: Date, alias = "t"): Fragment =>
  sql`${sql.literal(`${alias}.user_id`)} = ${userId} AND ${isOverdue(sql, now, alias)}`

const decodeBodies = Schema.decodeUnknown(Schema.Array(BodyRow))

/**
 * `{data: Task}` as JSON text (the stored wire text in a compact envelope, never parsed
 * again); undefined when the user cannot see the task.
 */
export const taskJson = (sql: SqlClient.SqlClient, userId: UserId, id: TaskId) =>
  sql`
        SELECT '{"data":' || t.wire_text || '}' AS body FROM tasks t
        WHERE t.id = ${id} AND ${visibleTo(sql, userId)}`.pipe(
    Effect.flatMap(decodeBodies),
    Effect.map((rows) => rows[0]?.body),
    Effect.orDie
  )

const decodeWire = Schema.decodeUnknown(Schema.Tuple(Schema.Struct({ task: TaskWire })))

/** The wire object of a task the caller knows exists. */
export const taskWire = (sql: SqlClient.SqlClient, id: number) =>
  sql`SELECT steady_task_json(t) AS task FROM tasks t WHERE t.id = ${id}`.pipe(
    Effect.flatMap(decodeWire),
    Effect.map(([row]) => row.task),
    Effect.orDie
  )

/** A task the user can see, locked for a mutation; undefined otherwise. */
export const lockVisible = (sql: SqlClient.SqlClient, userId: UserId, id: TaskId) =>
  sql`
        SELECT ${sql.literal(taskRowJson)} AS row FROM tasks t WHERE t.id = ${id} AND ${visibleTo(sql, userId)} FOR UPDATE OF t`.pipe(
    Effect.flatMap(decodeRowColumns),
    Effect.orDie,
    Effect.map((rows) => rows[0] === undefined ? undefined : decodeRow(TasksTable, rows[0].row))
  )

/** The user's own task, locked: not one they only see through a shared project. */
export const lockOwned = (sql: SqlClient.SqlClient, userId: UserId, id: TaskId) =>
  sql`
        SELECT ${sql.literal(taskRowJson)} AS row FROM tasks t WHERE t.id = ${id} AND t.user_id = ${userId} FOR UPDATE OF t`.pipe(
    Effect.flatMap(decodeRowColumns),
    Effect.orDie,
    Effect.map((rows) => rows[0] === undefined ? undefined : decodeRow(TasksTable, rows[0].row))
  )

const decodeWithCalendar = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ row: RowObject, version: Schema.String, ...CalendarColumns.fields }))
)

/**
 * A task the user can see with its owner's calendar columns, in one statement (a write's
 * anchors and periods are on the owner's calendar, whoever acts on the task), and the version
 * of the row read (`xmin`, the transaction that wrote it). Locked with `lock`; without, for a
 * write that reads before its transaction and whose UPDATE then requires that version
 * (`UpdateOptions.seen`).
 */
export const taskWithCalendar = (sql: SqlClient.SqlClient, userId: UserId, id: TaskId, lock: boolean) =>
  sql`
        SELECT ${sql.literal(taskRowJson)} AS row, t.xmin::text AS version, ${calendarColumns(sql, "u")}
        FROM tasks t JOIN users u ON u.id = t.user_id
        WHERE t.id = ${id} AND ${visibleTo(sql, userId)} ${lock ? sql`FOR UPDATE OF t` : sql``}`.pipe(
    Effect.flatMap(decodeWithCalendar),
    Effect.orDie,
    Effect.map(([found]) =>
      found === undefined ? undefined : {
        row: decodeRow(TasksTable, found.row),
        calendar: { timezone: found.timezone, week_start: found.week_start },
        version: found.version
      }
    )
  )

/** The visible rows among `ids`, locked, in id order. */
export const lockVisibleAmong = (sql: SqlClient.SqlClient, userId: UserId, ids: ReadonlyArray<number>) =>
  sql`
        SELECT ${sql.literal(taskRowJson)} AS row FROM tasks t
        WHERE t.id IN ${sql.in([...ids])} AND ${visibleTo(sql, userId)}
        ORDER BY t.id FOR UPDATE OF t`.pipe(
    Effect.flatMap(decodeRowColumns),
    Effect.map((rows) => rows.map((r) => decodeRow(TasksTable, r.row))),
    Effect.orDie
  )

/** The user's overdue tasks (`overdueOf`), locked, in id order. */
export const lockOverdue = (sql: SqlClient.SqlClient, userId: UserId, now: Date) =>
  Effect.orDie(Effect.flatMap(
    sql`
            SELECT ${sql.literal(taskRowJson)} AS row FROM tasks t WHERE ${overdueOf(sql, userId, now)}
            ORDER BY t.id FOR UPDATE OF t`,
    decodeRowColumns
  )).pipe(Effect.map((rows) => rows.map((r) => decodeRow(TasksTable, r.row))))

const decodeVisible = Schema.decodeUnknown(Schema.Array(Schema.Struct({ visible: Schema.Boolean })))

/** Whether the task is visible to the user now; undefined when it is gone. */
export const isVisibleTo = (sql: SqlClient.SqlClient, userId: UserId, taskId: number) =>
  sql`SELECT ${visibleTo(sql, userId)} AS visible FROM tasks t WHERE t.id = ${taskId}`.pipe(
    Effect.flatMap(decodeVisible),
    Effect.map((rows) => rows[0]?.visible),
    Effect.orDie
  )

const decodeOwner = Schema.decodeUnknown(Schema.Array(Schema.Struct({ user_id: UserId })))

/** The task's owner; undefined when it is gone. */
export const ownerOf = (sql: SqlClient.SqlClient, taskId: TaskId) =>
  Effect.orDie(Effect.flatMap(sql`SELECT user_id FROM tasks WHERE id = ${taskId}`, decodeOwner)).pipe(
    Effect.map((rows) => rows[0]?.user_id)
  )

const decodeQuotas = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ id: TaskId, rrule: Schema.NullOr(Schema.String), progress_target: Schema.Int }))
)

/** Which of `ids` are the user's quotas, not in the trash, with what their prompts are checked against. */
export const quotasAmong = (sql: SqlClient.SqlClient, userId: UserId, ids: ReadonlyArray<number>) =>
  Effect.orDie(Effect.flatMap(
    sql`
          SELECT id, rrule, progress_target FROM tasks WHERE id IN ${sql.in(ids)} AND user_id = ${userId}
            AND ${isQuota(sql, "")} AND deleted_at IS NULL`,
    decodeQuotas
  ))

const decodeReminders = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ id: TaskId, due_at: Schema.NullOr(IsoText), anchor_time: Schema.NullOr(Schema.String) }))
)

/** The user's open reminders, locked, with what their time of day is read from. */
export const lockOpenReminders = (sql: SqlClient.SqlClient, userId: UserId) =>
  Effect.orDie(Effect.flatMap(
    sql`
          SELECT id, steady_iso(due_at) AS due_at, anchor_time FROM tasks
          WHERE user_id = ${userId} AND is_reminder AND ${isOpen(sql, "")} AND ${isNotQuota(sql, "")}
          ORDER BY id FOR UPDATE`,
    decodeReminders
  ))

const decodePrompting = Schema.decodeUnknown(Schema.Array(TaskRow.pick("id", "quota_prompt_config")))

/** The user's quotas whose prompts start in the slot (configured, or by the user's default), locked. */
export const lockQuotasPromptingIn = (sql: SqlClient.SqlClient, userId: UserId, slotId: number, isDefault: boolean) =>
  sql`
        SELECT id, quota_prompt_config FROM tasks
        WHERE user_id = ${userId} AND ${isQuota(sql, "")} AND NOT done AND deleted_at IS NULL
          AND ((quota_prompt_config->>'slot_id')::int = ${slotId}
               ${isDefault ? sql`OR quota_prompt_config IS NULL OR quota_prompt_config->'slot_id' IS NULL OR quota_prompt_config->'slot_id' = 'null'::jsonb` : sql``})
        ORDER BY id FOR UPDATE`.pipe(Effect.flatMap(decodePrompting), Effect.orDie)

const decodeCount = Schema.decodeUnknown(Schema.Tuple(CountRow))

/** How many tasks not in the trash are filed in the project. */
export const liveTasksIn = (sql: SqlClient.SqlClient, projectId: number) =>
  Effect.orDie(
    Effect.flatMap(
      sql`SELECT count(*)::int AS n FROM tasks WHERE project_id = ${projectId} AND deleted_at IS NULL`,
      decodeCount
    )
  ).pipe(Effect.map(([row]) => row.n))

const decodeWithInbox = Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: TaskId, inbox: ProjectId })))

/**
 * Every task filed in the project (in the trash or not), locked, with its owner's Inbox
 * it moves to when the project goes.
 */
export const lockWithInbox = (sql: SqlClient.SqlClient, projectId: number) =>
  Effect.orDie(Effect.flatMap(
    sql`
            SELECT t.id, p.id AS inbox FROM tasks t JOIN projects p ON p.owner_id = t.user_id AND p.is_inbox
            WHERE t.project_id = ${projectId} ORDER BY t.id FOR UPDATE OF t`,
    decodeWithInbox
  ))

/**
 * Tasks locked in id order, the order every write that locks several takes them in. With
 * "nowait" a task another transaction holds fails the statement (lock_not_available, a
 * conflict the transaction is run again for) instead of waiting.
 */
export const lockTasksInOrder = (sql: SqlClient.SqlClient, ids: ReadonlyArray<number>, mode: "wait" | "nowait" = "wait") =>
  ids.length === 0 ? Effect.void : sql`SELECT id FROM tasks WHERE id IN ${sql.in([...ids])} ORDER BY id FOR UPDATE ${
    mode === "nowait" ? sql`NOWAIT` : sql``
  }`.pipe(
    Effect.asVoid,
    Effect.orDie
  )

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
