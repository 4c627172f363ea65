import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { NotFound } from "../kernel/Errors.js"
import { startOfLocalDay, startOfNextLocalDay } from "../kernel/LocalTime.js"
import type { Page } from "../kernel/QueryParams.js"
import type { TaskListQuery } from "./Task.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { calendarFrom } from "../accounts/UserCalendar.js"
import { inboxId, projectAccess as projectAccessOf, usableProject } from "../projects/ProjectsTable.js"
import { lockOwned as lockOwnedRow, lockVisible as lockVisibleRow, taskJson, taskWire, taskWithCalendar } from "./TasksTable.js"
import { countsOf, taskPageJson, trashPageJson } from "./TaskListSql.js"
import type { ProjectId, TaskId, UserId } from "../kernel/Ids.js"

/**
 * Reads of tasks. Lists and single tasks come back as JSON text built by the database from
 * the tasks' stored wire texts (`tasks.wire_text`), so the hot paths neither decode rows nor
 * re-encode them. The statements are `TasksTable`'s and `TaskListSql`'s.
 */
export class TaskQueries extends Effect.Service<TaskQueries>()("steady/TaskQueries", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** A page of the caller's tasks as of `now`, as `{data: TaskList}` JSON text. */
    const listJsonAt = (user: CurrentUserShape, query: TaskListQuery, now: Date) => taskPageJson(sql, user.id, query, now)

    /**
     * `{data: Task}` as JSON text (the stored wire text in a compact envelope, never parsed
     * again), or 404 when the caller cannot see it.
     */
    const getJson = (user: CurrentUserShape, id: TaskId) =>
      Effect.flatMap(taskJson(sql, user.id, id), (body) => body === undefined ? Effect.fail(NotFound.of("Task")) : Effect.succeed(body))

    /** The wire object of one task, read inside the current transaction. */
    const wire = (id: number) => taskWire(sql, id)

    /** Locks a task the caller can see, for a mutation; 404 otherwise. */
    const lockVisible = (user: CurrentUserShape, id: TaskId) =>
      Effect.flatMap(lockVisibleRow(sql, user.id, id), (row) => row === undefined ? Effect.fail(NotFound.of("Task")) : Effect.succeed(row))

    /**
     * Locks one of the caller's own tasks; 404 otherwise, the same answer as for another
     * user's private task, for what only the owner may do (reprocess).
     */
    const lockOwned = (user: CurrentUserShape, id: TaskId) =>
      Effect.flatMap(lockOwnedRow(sql, user.id, id), (row) => row === undefined ? Effect.fail(NotFound.of("Task")) : Effect.succeed(row))

    /**
     * A task the caller can see with its owner's calendar (zone, week start), read in the same
     * statement: a write's anchors and periods are on the owner's calendar, whoever acts on the
     * task; 404 otherwise. Locked when `lock`; else read before a `readFirst` write's
     * transaction with the row's version, which the write then requires (none when locked).
     */
    const forWrite = (user: CurrentUserShape, id: TaskId, lock: boolean) =>
      Effect.flatMap(taskWithCalendar(sql, user.id, id, lock), (found) =>
        found === undefined
          ? Effect.fail(NotFound.of("Task"))
          : Effect.succeed({ current: found.row, calendar: calendarFrom(found.calendar), version: lock ? undefined : found.version }))

    /** `forWrite`, locked. */
    const lockForWrite = (user: CurrentUserShape, id: TaskId) => forWrite(user, id, true)

    /** GET /api/tasks/counts: the user's active tasks, overdue ones, and those due today locally. */
    const countsAt = (user: CurrentUserShape, now: Date) => {
      const dayStart = startOfLocalDay(now, user.timezone).toISOString()
      const dayEnd = startOfNextLocalDay(now, user.timezone).toISOString()
      return countsOf(sql, user.id, now, dayStart, dayEnd)
    }

    /** The caller's trash, most recently trashed first, one page of it. */
    const trashJson = (user: CurrentUserShape, page: Page) => trashPageJson(sql, user.id, page)

    /** A project the caller may file tasks in: their own or a shared one. */
    const projectUsable = (user: CurrentUserShape, projectId: ProjectId) =>
      Effect.map(usableProject(sql, user.id, projectId), Option.fromNullable)

    const projectAccess = (projectId: number) => projectAccessOf(sql, projectId)
    const inboxOf = (userId: UserId) => inboxId(sql, userId)

    const listJson = (user: CurrentUserShape, query: TaskListQuery) => Effect.flatMap(clockNow, (now) => listJsonAt(user, query, now))
    const counts = (user: CurrentUserShape) => Effect.flatMap(clockNow, (now) => countsAt(user, now))

    return {
      listJson,
      listJsonAt,
      countsAt,
      getJson,
      wire,
      lockVisible,
      lockOwned,
      lockForWrite,
      forWrite,
      counts,
      trashJson,
      projectUsable,
      projectAccess,
      inboxOf
    } as const
  })
}) {}
