import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { Forbidden, NotFound, ValidationError } from "../kernel/Errors.js"
import type { ProjectRow, Writes } from "../pipeline/Rows.js"
import type { ProjectCreate, ProjectPatch } from "./Project.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { Mutations } from "../pipeline/Mutations.js"
import type { Tx } from "../pipeline/Tx.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { ProjectsTable, TasksTable } from "../pipeline/Tables.js"
import { lockProject, nextSortOrder, projectsVisibleTo, projectVisibleTo } from "./ProjectsTable.js"
import { lockWithInbox } from "../tasks/TasksTable.js"
import type { ProjectId } from "../kernel/Ids.js"

/** Project writes go through the mutation pipeline; reads build JSON in the database. */
export class Projects extends Effect.Service<Projects>()("steady/Projects", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const mutations = yield* Mutations

    const list = (user: CurrentUserShape) =>
      Effect.gen(function*() {
        const now = yield* clockNow
        const projects = yield* projectsVisibleTo(sql, user.id, now)
        return { projects, count: projects.length }
      }).pipe(Effect.orDie)

    const read = Effect.fnUntraced(function*(user: CurrentUserShape, id: ProjectId) {
      const now = yield* clockNow
      const project = yield* projectVisibleTo(sql, user.id, id, now)
      if (project === undefined) return yield* Effect.fail(NotFound.of("Project"))
      return project
    })

    /** 404 for a project the caller cannot see, 403 for a shared one they do not own. */
    const lockOwned = Effect.fnUntraced(function*(user: CurrentUserShape, id: ProjectId) {
      const project = yield* lockProject(sql, id)
      if (project === undefined || (project.owner_id !== user.id && !project.shared)) {
        return yield* Effect.fail(NotFound.of("Project"))
      }
      if (project.owner_id !== user.id) {
        return yield* Effect.fail(new Forbidden({ message: "Only the owner can change a shared project" }))
      }
      return project
    })

    const create = (user: CurrentUserShape, input: ProjectCreate) =>
      mutations.run({ user, action: "project_create" }, (tx) => createBody(tx, user, input))
    const createBody = Effect.fnUntraced(function*(tx: Tx, user: CurrentUserShape, input: ProjectCreate) {
      const next = yield* nextSortOrder(sql, user.id)
      const at = tx.now.toISOString()
      const row = yield* tx.insert(ProjectsTable, {
        owner_id: user.id,
        name: input.name.trim(),
        shared: input.shared ?? false,
        sort_order: input.sort_order ?? next,
        color: input.color ?? "",
        description: input.description ?? "",
        created_at: at,
        updated_at: at
      })
      tx.describe(`Created project '${input.name.trim()}'`)
      return yield* read(user, row.id)
    })

    const update = (user: CurrentUserShape, id: ProjectId, patch: ProjectPatch) =>
      mutations.run({ user, action: "project_edit" }, (tx) => updateBody(tx, user, id, patch))
    const updateBody = Effect.fnUntraced(function*(tx: Tx, user: CurrentUserShape, id: ProjectId, patch: ProjectPatch) {
      const project = yield* lockOwned(user, id)
      if (project.is_inbox && patch.name !== undefined && patch.name.trim() !== project.name) {
        return yield* Effect.fail(ValidationError.field("name", "The Inbox cannot be renamed"))
      }
      const writes: Writes<ProjectRow> = {}
      if (patch.name !== undefined) writes.name = patch.name.trim()
      if (patch.shared !== undefined) writes.shared = patch.shared
      if (patch.sort_order !== undefined) writes.sort_order = patch.sort_order
      if (patch.color !== undefined) writes.color = patch.color
      if (patch.description !== undefined) writes.description = patch.description
      yield* tx.update(ProjectsTable, id, writes)
      tx.describe(`Edited project '${writes.name ?? project.name}'`)
      return yield* read(user, id)
    })

    /** Each task goes to its own owner's Inbox, then the project goes. */
    const remove = (user: CurrentUserShape, id: ProjectId) =>
      mutations.run({ user, action: "project_delete" }, (tx) => removeBody(tx, user, id))
    const removeBody = Effect.fnUntraced(function*(tx: Tx, user: CurrentUserShape, id: ProjectId) {
      const project = yield* lockOwned(user, id)
      if (project.is_inbox) return yield* Effect.fail(ValidationError.field("id", "The Inbox cannot be deleted"))
      const tasks = yield* lockWithInbox(sql, id)
      for (const task of tasks) yield* tx.update(TasksTable, task.id, { project_id: task.inbox })
      yield* tx.remove(ProjectsTable, id)
      tx.describe(`Deleted project '${project.name}'`)
      return { deleted: true as const, tasks_moved_to_inbox: tasks.length }
    })

    const reorder = (user: CurrentUserShape, ids: ReadonlyArray<ProjectId>) =>
      mutations.run({ user, action: "project_reorder" }, (tx) => reorderBody(tx, user, ids))
    const reorderBody = Effect.fnUntraced(function*(tx: Tx, user: CurrentUserShape, ids: ReadonlyArray<ProjectId>) {
      if (new Set(ids).size !== ids.length) {
        return yield* Effect.fail(ValidationError.field("project_ids", "must not repeat an id"))
      }
      for (const id of ids) yield* lockOwned(user, id)
      for (const [index, id] of ids.entries()) yield* tx.update(ProjectsTable, id, { sort_order: index })
      tx.describe(`Reordered ${ids.length} projects`)
      return { reordered: ids.length }
    })

    return { list, read, create, update, remove, reorder } as const
  })
}) {}
