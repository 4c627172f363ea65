import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { type NotFound, ValidationError } from "../kernel/Errors.js"
import type { JsonValue } from "../kernel/Json.js"
import type { TaskRow, Writes } from "../pipeline/Rows.js"
import type { Task, TaskCreate, TaskPatch } from "./Task.js"
import type { PeriodSettings } from "../quotas/QuotaPeriods.js"
import { shouldEnrich } from "../ai/AiEnrichment.js"
import { projectRefusal } from "../projects/Project.js"
import { isQuota, newTaskRow, patchTaskRow, visibleFields } from "./TaskRules.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { AiRateLimits } from "../ai/AiRateLimits.js"
import { EnrichmentQueue } from "../ai/EnrichmentQueue.js"
import { Mutations } from "../pipeline/Mutations.js"
import { type ReadFirstRunner, type Runner, type Tx } from "../pipeline/Tx.js"
import type { KeyedAnswer } from "../pipeline/IdempotencyRecord.js"
import type { Pending } from "../pipeline/Pending.js"
import { Quotas } from "../quotas/Quotas.js"
import { TasksTable } from "../pipeline/Tables.js"
import { TaskQueries } from "./TaskQueries.js"
import { calendarStill, UserCalendar } from "../accounts/UserCalendar.js"
import { RecentRows } from "../pipeline/RecentRows.js"
import { inboxOf } from "../projects/ProjectsTable.js"
import type { ProjectId, TaskId } from "../kernel/Ids.js"

const quoted = (title: string) => `'${title}'`

/** What an edit starts from: the task, its owner's calendar, its version; `kept` when from `RecentRows`. */
interface ReadForEdit {
  readonly current: TaskRow
  readonly calendar: PeriodSettings
  readonly version: string | undefined
  readonly kept?: boolean
}

/** Task writes. Each one is a single pass through the mutation pipeline. */
export class Tasks extends Effect.Service<Tasks>()("steady/Tasks", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const mutations = yield* Mutations
    const queries = yield* TaskQueries
    const quotas = yield* Quotas
    const calendars = yield* UserCalendar
    const enrichment = yield* EnrichmentQueue
    const rateLimits = yield* AiRateLimits
    const recentRows = yield* RecentRows

    /**
     * A quota's current period: set when it becomes a quota or its period rule changes. The
     * owner's calendar is read only then.
     */
    const periodWrites = Effect.fnUntraced(function*(
      owner: Effect.Effect<PeriodSettings>,
      before: TaskRow | undefined,
      after: Pick<TaskRow, "progress_target" | "is_tracked" | "rrule">,
      now: Date
    ) {
      const none: Writes<TaskRow> = {}
      const quota = isQuota(after)
      const wasQuota = before !== undefined && isQuota(before)
      if (!quota) return wasQuota ? { progress_period_start: null, progress_period_end: null } : none
      if (wasQuota && before.rrule === after.rrule) return none
      const period = quotas.initialPeriod(after.rrule, yield* owner, now)
      return {
        progress_period_start: period === undefined ? null : period.start.toISOString(),
        progress_period_end: period === undefined ? null : period.end.toISOString()
      }
    })

    const usableProject = (user: CurrentUserShape, projectId: ProjectId) =>
      Effect.flatMap(queries.projectUsable(user, projectId), (found) =>
        Option.match(found, {
          onNone: () => Effect.fail(ValidationError.field("project_id", "Project not found")),
          onSome: Effect.succeed
        }))

    /** `task` may be pending (the commit statement renders it): the id comes separately. */
    const emitUpdated = (tx: Tx, id: number, task: JsonValue | Pending<Task>, fields: ReadonlyArray<string>) =>
      tx.emit({ event: "task.updated", taskId: id, data: { task, fields_changed: [...fields] } })

    /**
     * One statement: the INSERT (which looks up the Inbox itself, renders the new task as wire
     * JSON and carries an enrichment request) and the pipeline's own writes all go out as the
     * commit statement (`Tx.insertAtCommit`).
     */
    const createWith = <X>(run: Runner<X>, user: CurrentUserShape, input: TaskCreate) => {
      // Requested on the task row itself, in the same statement (durable); queued and enriched
      // in the background.
      const enrich = enrichment.enabled && shouldEnrich(input)
      const queued = { wake: false }
      return run({ user, action: "create" }, (tx) => createBody(tx, user, input, enrich, queued))
        .pipe(Effect.tap(() => (queued.wake ? enrichment.wake : Effect.void)))
    }

    // The bodies below are made once (see docs/architecture.md, "Generators on the request path").
    const createBody = Effect.fnUntraced(
      function*(tx: Tx, user: CurrentUserShape, input: TaskCreate, enrich: boolean, queued: { wake: boolean }) {
        const projectId = input.project_id === undefined ? undefined : yield* usableProject(user, input.project_id)
        const base = yield* newTaskRow(input, { now: tx.now, zone: user.timezone, projectId, userId: user.id })
        // The creator owns the task: its calendar is theirs.
        const row = {
          ...base,
          ...(yield* periodWrites(calendars.of(user.id), undefined, base, tx.now)),
          ...(enrich ? { enrichment_status: "pending" as const } : {})
        }
        // The request is the row's pending status: until the task changes, the row is the
        // request's baseline too, and its first update keeps it (migration 0023).
        const inserted = yield* tx.insertAtCommit(
          TasksTable,
          row,
          projectId === undefined ? { project_id: inboxOf(sql, sql`${user.id}`) } : {}
        )
        if (enrich) queued.wake = yield* enrichment.noteQueued
        tx.emit({ event: "task.created", taskId: inserted.id, data: { task: inserted.wire } })
        tx.count("tasks_created")
        tx.describe(`Created ${quoted(base.title)}`)
        return inserted.wire
      }
    )

    /**
     * The task is read with its owner's calendar before the transaction (`readFirst`: locked
     * and run again if another write changes it meanwhile); the UPDATE goes out with the commit
     * statement, and the task comes back from it as wire JSON.
     */
    const updateWith = <X>(run: ReadFirstRunner<X>, user: CurrentUserShape, id: TaskId, patch: TaskPatch) =>
      run({ user, action: "edit" }, (lock) => lock ? queries.forWrite(user, id, true) : readForEdit(user, id), (tx, read) =>
        updateBody(tx, read, user, id, patch))

    /**
     * The task as this process last wrote it, when the caller owns it (`RecentRows`): the
     * UPDATE then also requires the owner's calendar to be the one kept with it. Another
     * user's edit through a shared project always reads, since the project's sharing decides
     * whether they see the task at all.
     */
    const readForEdit = (user: CurrentUserShape, id: TaskId): Effect.Effect<ReadForEdit, NotFound> => {
      const kept = recentRows.get<TaskRow, PeriodSettings>(TasksTable, id)
      return kept !== undefined && kept.row.user_id === user.id
        ? Effect.succeed({ current: kept.row, calendar: kept.extra, version: kept.version, kept: true })
        : queries.forWrite(user, id, false)
    }

    const updateBody = Effect.fnUntraced(
      function*(
        tx: Tx,
        { calendar, current, version, kept }: ReadForEdit,
        user: CurrentUserShape,
        id: TaskId,
        patch: TaskPatch
      ) {
        if (patch.project_id !== undefined && patch.project_id !== current.project_id) {
          const refusal = projectRefusal(yield* queries.projectAccess(patch.project_id), user.id, current.user_id)
          if (refusal !== undefined) return yield* Effect.fail(ValidationError.field("project_id", refusal))
        }
        // Anchors and periods on the owner's calendar, whoever edits (README: whose calendar).
        const edits = yield* patchTaskRow(current, patch, { now: tx.now, zone: calendar.zone })
        const writes = { ...edits, ...(yield* periodWrites(Effect.succeed(calendar), current, { ...current, ...edits }, tx.now)) }
        const written = yield* tx.updateAtCommit(TasksTable, id, writes, {
          current,
          seen: version,
          stillHolds: kept === true ? calendarStill(sql, "tasks.user_id", calendar) : undefined,
          keep: { extra: calendar }
        })
        const fields = visibleFields(written.fields)
        const task = written.wire
        const title = "title" in writes ? writes.title : current.title
        const description = fields.length === 0
          ? `No changes to ${quoted(title)}`
          : `Edited ${quoted(title)} (${fields.join(", ")})`
        if (fields.length > 0) emitUpdated(tx, id, task, fields)
        tx.describe(description)
        return task.with({ fields_changed: fields, description })
      }
    )

    /** DELETE moves to the trash; deleting what is already there changes nothing. */
    const trash = (user: CurrentUserShape, id: TaskId) =>
      mutations.run({ user, action: "delete" }, (tx) => trashBody(tx, user, id))
    const trashBody = Effect.fnUntraced(function*(tx: Tx, user: CurrentUserShape, id: TaskId) {
      const current = yield* queries.lockVisible(user, id)
      if (current.deleted_at === null) {
        yield* tx.update(TasksTable, id, { deleted_at: tx.now.toISOString() })
        tx.emit({ event: "task.deleted", taskId: id, data: { task_id: id, title: current.title } })
      }
      const task = yield* queries.wire(id)
      tx.describe(`Moved ${quoted(task.title)} to the trash`)
      return { ...task, message: `Task ${quoted(task.title)} moved to the trash` }
    })

    const restore = (user: CurrentUserShape, id: TaskId) =>
      mutations.run({ user, action: "restore" }, (tx) => restoreBody(tx, user, id))
    const restoreBody = Effect.fnUntraced(function*(tx: Tx, user: CurrentUserShape, id: TaskId) {
      const current = yield* queries.lockVisible(user, id)
      if (current.deleted_at === null) {
        return yield* Effect.fail(ValidationError.field("id", "Task is not in the trash"))
      }
      const fields = yield* tx.update(TasksTable, id, { deleted_at: null })
      const task = yield* queries.wire(id)
      emitUpdated(tx, id, task as JsonValue, fields)
      tx.describe(`Restored ${quoted(task.title)} from the trash`)
      return task
    })

    /**
     * Re-queues enrichment from `original_title`; the AI worker picks it up. With AI off
     * only the request time is recorded. The owner's alone: enrichment runs with the
     * owner's account, and another user who sees the task through a shared project gets the
     * same 404 as for a private task (README, AI helpers). Each call takes a token from the
     * caller's reprocess limit first, whatever it then answers.
     */
    const reprocess = (user: CurrentUserShape, id: TaskId) =>
      Effect.zipRight(
        rateLimits.take("reprocess", user.id),
        mutations.run({ user, action: "reprocess", undoable: false }, (tx) =>
          Effect.gen(function*() {
            const current = yield* queries.lockOwned(user, id)
            if (current.deleted_at !== null) return yield* Effect.fail(ValidationError.field("id", "Task is in the trash"))
            yield* tx.update(TasksTable, id, { enrichment_requested_at: tx.now.toISOString() })
            if (enrichment.enabled) yield* enrichment.requeue(current.id, current.original_title, tx.now)
            tx.describe(`Queued ${quoted(current.title)} for enrichment`)
            return yield* queries.wire(id)
          }))
      ).pipe(Effect.tap(() => (enrichment.enabled ? enrichment.wake : Effect.void)))

    const create = (user: CurrentUserShape, input: TaskCreate) => createWith(mutations.run, user, input)
    /** `create` under an Idempotency-Key: the answer is recorded with the key by the same statement. */
    const createKeyed = (user: CurrentUserShape, input: TaskCreate, keyed: KeyedAnswer) =>
      createWith(mutations.keyed(keyed), user, input)
    const update = (user: CurrentUserShape, id: TaskId, patch: TaskPatch) => updateWith(mutations.readFirst, user, id, patch)
    const updateKeyed = (user: CurrentUserShape, id: TaskId, patch: TaskPatch, keyed: KeyedAnswer) =>
      updateWith(mutations.readFirstKeyed(keyed), user, id, patch)

    return { create, createKeyed, update, updateKeyed, trash, restore, reprocess } as const
  })
}) {}
