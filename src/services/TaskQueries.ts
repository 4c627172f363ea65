import * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Option } from "effect"
import { NotFound } from "../domain/Errors.js"
import { startOfLocalDay, startOfNextLocalDay } from "../domain/LocalTime.js"
import { type Page, pageOf } from "../domain/QueryParams.js"
import type { Task, TaskListQuery } from "../domain/Task.js"
import type { CurrentUserShape } from "./CurrentUser.js"
import { now as clockNow } from "./ServiceClock.js"
import { calendarFrom } from "./UserCalendar.js"
import { type CalendarColumns, calendarColumns } from "./UsersTable.js"
import { decodeRow, taskRowJson, TasksTable } from "./Tables.js"
import { isOpen, isOverdue, isQuota, wireArray } from "./WireSql.js"
import { inboxId, inSharedProject, projectAccess as projectAccessOf, usableProject } from "./ProjectsTable.js"
import type { ProjectId, TaskId, UserId } from "../domain/Ids.js"

/**
 * Reads of tasks. Lists and single tasks come back as JSON text built by the database from
 * the tasks' stored wire texts (`tasks.wire_text`), so the hot paths neither decode rows nor
 * re-encode them.
 */
export class TaskQueries extends Effect.Service<TaskQueries>()("steady/TaskQueries", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * The one overdue definition (spec §4.2): the user's own open tasks whose current due
     * date has passed; reminders and quotas are never overdue.
     */
    const overdue = (userId: UserId, now: Date): Fragment =>
      sql`t.user_id = ${userId} AND ${isOverdue(sql, now)}`

    /** Tasks a user may see: their own, and those in projects shared with everyone. */
    const visible = (userId: UserId): Fragment => sql`(t.user_id = ${userId} OR ${inSharedProject(sql, "t.project_id")})`

    /**
     * `{data: {tasks, count}}` for a page of stored wire texts, as the text json_build_object
     * wrote before; `tasks` is the page's array text (`wireArray`).
     */
    const pageBody = (tasks: Fragment): Fragment =>
      sql`'{"data" : {"tasks" : ' || ${tasks} || ', "count" : ' || count(*) || '}}'`

    const filters = (query: TaskListQuery, userId: UserId, now: Date): Array<Fragment> => {
      const out: Array<Fragment> = []
      const trashed = query.trashed ?? false
      out.push(trashed ? sql`t.deleted_at IS NOT NULL` : sql`t.deleted_at IS NULL`)
      // done defaults to false and archived to "not archived", unless the caller asks
      // for the trash, the archive or done tasks.
      const done = query.done ?? (query.archived === true || trashed ? undefined : false)
      if (done !== undefined) out.push(done ? sql`t.done` : sql`NOT t.done`)
      const archived = query.archived ?? (done === true || trashed ? undefined : false)
      if (archived !== undefined) out.push(archived ? sql`t.archived_at IS NOT NULL` : sql`t.archived_at IS NULL`)
      const project = query.project_id ?? query.project
      if (project !== undefined) out.push(sql`t.project_id = ${project}`)
      if (query.label !== undefined) out.push(sql`t.labels @> jsonb_build_array(${query.label}::text)`)
      if (query.search !== undefined && query.search.trim() !== "") {
        const pattern = `%${query.search.trim().replace(/[\\%_]/g, (c) => `\\${c}`)}%`
        out.push(sql`(t.title ILIKE ${pattern} OR t.notes ILIKE ${pattern})`)
      }
      const quota = isQuota(sql)
      if (query.kind === "quota") out.push(quota)
      if (query.kind === "reminder") out.push(sql`t.is_reminder AND NOT ${quota}`)
      if (query.kind === "task") out.push(sql`NOT t.is_reminder AND NOT ${quota}`)
      if (query.recurring !== undefined) {
        out.push(query.recurring ? sql`(t.rrule IS NOT NULL AND NOT ${quota})` : sql`(t.rrule IS NULL OR ${quota})`)
      }
      if (query.one_off !== undefined) {
        out.push(query.one_off ? sql`(t.rrule IS NULL AND NOT ${quota})` : sql`(t.rrule IS NOT NULL OR ${quota})`)
      }
      if (query.overdue === true) out.push(overdue(userId, now))
      // IS NOT TRUE, not NOT: the predicate is NULL for a task without a due date.
      if (query.overdue === false) out.push(sql`(${overdue(userId, now)}) IS NOT TRUE`)
      return out
    }

    /**
     * `{data: {tasks, count}}` as JSON text. Own tasks and shared-project tasks are read
     * by two index-ordered branches, each limited, then merged; a single OR would make
     * PostgreSQL sort every open task of the user on each request. The shared branch is
     * driven from the shared projects, one index walk per project (`LATERAL ... LIMIT`), so
     * it reads nothing when no project is shared and never walks other users' tasks in
     * due order looking for shared ones — the plan an unanalyzed database picked for a
     * plain `project_id IN (...)`. The rows carry their stored wire text: joining the page
     * back to `tasks` by id instead lets the planner pick a hash join over the whole table
     * for pages of a few hundred.
     */
    /** A page of the caller's tasks as of `now`, as `{data: TaskList}` JSON text. */
    const listJsonAt = (user: CurrentUserShape, query: TaskListQuery, now: Date) => {
      const { limit, offset } = pageOf(query)
      const where = sql.and(filters(query, user.id, now))
      const window = limit + offset
      const shared = query.overdue === true
        ? sql``
        : sql`UNION ALL (SELECT s.task, s.due_at, s.id FROM projects p CROSS JOIN LATERAL (
               SELECT t.wire_text AS task, t.due_at, t.id FROM tasks t
               WHERE t.project_id = p.id AND t.user_id <> ${user.id} AND ${where}
               ORDER BY t.due_at, t.id LIMIT ${window}) s
             WHERE p.shared
             ORDER BY s.due_at, s.id LIMIT ${window})`
      return sql<{ body: string }>`
        WITH page AS (
          SELECT * FROM (
            (SELECT t.wire_text AS task, t.due_at, t.id FROM tasks t WHERE t.user_id = ${user.id} AND ${where}
             ORDER BY t.due_at, t.id LIMIT ${window})
            ${shared}
          ) merged ORDER BY due_at, id LIMIT ${limit} OFFSET ${offset}
        )
        SELECT ${pageBody(wireArray(sql, "page.task", "page.due_at, page.id"))} AS body FROM page`.pipe(Effect.map((rows) => rows[0]!.body), Effect.orDie)
    }

    /**
     * `{data: Task}` as JSON text (the stored wire text in the envelope json_build_object
     * wrote, without parsing it again), or 404 when the caller cannot see it.
     */
    const getJson = (user: CurrentUserShape, id: TaskId) =>
      sql<{ body: string }>`
        SELECT '{"data" : ' || t.wire_text || '}' AS body FROM tasks t
        WHERE t.id = ${id} AND ${visible(user.id)}`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => rows[0] === undefined ? Effect.fail(NotFound.of("Task")) : Effect.succeed(rows[0].body))
      )

    /** The wire object of one task, read inside the current transaction. */
    const wire = (id: number) =>
      sql<{ task: Task }>`SELECT steady_task_json(t) AS task FROM tasks t WHERE t.id = ${id}`.pipe(
        Effect.map((rows) => rows[0]!.task),
        Effect.orDie
      )

    /** Locks a task the caller can see, for a mutation; 404 otherwise. */
    const lockVisible = (user: CurrentUserShape, id: TaskId) =>
      sql<{ row: Record<string, unknown> }>`
        SELECT ${sql.literal(taskRowJson)} AS row FROM tasks t WHERE t.id = ${id} AND ${visible(user.id)} FOR UPDATE OF t`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) =>
          rows[0] === undefined ? Effect.fail(NotFound.of("Task")) : Effect.succeed(decodeRow(TasksTable, rows[0].row))
        )
      )

    /**
     * `lockVisible`, with the owner's calendar (zone, week start) read in the same statement:
     * a write's anchors and periods are on the owner's calendar, whoever acts on the task.
     */
    const lockForWrite = (user: CurrentUserShape, id: TaskId) =>
      sql<{ row: Record<string, unknown> } & CalendarColumns>`
        SELECT ${sql.literal(taskRowJson)} AS row, ${calendarColumns(sql, "u")}
        FROM tasks t JOIN users u ON u.id = t.user_id
        WHERE t.id = ${id} AND ${visible(user.id)} FOR UPDATE OF t`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) =>
          rows[0] === undefined
            ? Effect.fail(NotFound.of("Task"))
            : Effect.succeed({
              current: decodeRow(TasksTable, rows[0].row),
              calendar: calendarFrom(rows[0])
            })
        )
      )

    /** GET /api/tasks/counts: the user's active tasks, overdue ones, and those due today locally. */
    const countsAt = (user: CurrentUserShape, now: Date) => {
      const dayStart = startOfLocalDay(now, user.timezone).toISOString()
      const dayEnd = startOfNextLocalDay(now, user.timezone).toISOString()
      // The caller's open tasks in due order: the one plan that needs no sort is the user's
      // range of tasks_open_by_due. Unordered, a never-analyzed database ties every open-task
      // index at "empty" and may count through tasks_open_by_project, whose user_id is not
      // leading: a walk of every user's open tasks (issue 17).
      return sql<{ total: number; overdue: number; today: number }>`
        SELECT count(*)::int AS total,
               (count(*) FILTER (WHERE ${overdue(user.id, now)}))::int AS overdue,
               (count(*) FILTER (WHERE t.due_at >= ${dayStart}::timestamptz AND t.due_at < ${dayEnd}::timestamptz))::int AS today
        FROM (SELECT * FROM tasks t WHERE t.user_id = ${user.id} AND ${isOpen(sql)} ORDER BY t.due_at) t`.pipe(
        Effect.map((rows) => rows[0]!),
        Effect.orDie
      )
    }

    /** The caller's trash, most recently trashed first, one page of it. */
    const trashJson = (user: CurrentUserShape, page: Page) =>
      sql<{ body: string }>`
        WITH trash AS (
          SELECT t.wire_text AS task, t.deleted_at, t.id FROM tasks t
          WHERE t.user_id = ${user.id} AND t.deleted_at IS NOT NULL
          ORDER BY t.deleted_at DESC, t.id DESC LIMIT ${page.limit} OFFSET ${page.offset}
        )
        SELECT ${pageBody(wireArray(sql, "trash.task", "trash.deleted_at DESC, trash.id DESC"))} AS body FROM trash`.pipe(Effect.map((rows) => rows[0]!.body), Effect.orDie)

    /** A project the caller may file tasks in: their own or a shared one. */
    const projectUsable = (user: CurrentUserShape, projectId: ProjectId) =>
      Effect.map(usableProject(sql, user.id, projectId), Option.fromNullable)

    const projectAccess = (projectId: number) => projectAccessOf(sql, projectId)
    const inboxOf = (userId: UserId) => inboxId(sql, userId)

    const listJson = (user: CurrentUserShape, query: TaskListQuery) => Effect.flatMap(clockNow, (now) => listJsonAt(user, query, now))
    const counts = (user: CurrentUserShape) => Effect.flatMap(clockNow, (now) => countsAt(user, now))

    return {
      overdue,
      visible,
      listJson,
      listJsonAt,
      countsAt,
      getJson,
      wire,
      lockVisible,
      lockForWrite,
      counts,
      trashJson,
      projectUsable,
      projectAccess,
      inboxOf
    } as const
  })
}) {}
