import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Either } from "effect"
import { type BulkCounts, type BulkEditPayload, emptyCounts, HIGH, URGENT } from "./Bulk.js"
import { ValidationError } from "../kernel/Errors.js"
import type { JsonValue } from "../kernel/Json.js"
import type { TaskRow } from "../pipeline/Rows.js"
import { canSeeProject, PROJECT_NOT_FOUND, projectRefusal } from "../projects/Project.js"
import type { TaskPatch } from "../tasks/Task.js"
import { isPastDeadline, isQuota, patchTaskRow, QUOTA_NEEDS_PERIOD, visibleFields } from "../tasks/TaskRules.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { DatabaseMaintenance } from "../system/DatabaseMaintenance.js"
import { Mutations } from "../pipeline/Mutations.js"
import { type Tx } from "../pipeline/Tx.js"
import { Quotas } from "../quotas/Quotas.js"
import { TasksTable } from "../pipeline/Tables.js"
import { lockOverdue, lockVisibleAmong } from "../tasks/TasksTable.js"
import { TaskLifecycle } from "../lifecycle/TaskLifecycle.js"
import { TaskQueries } from "../tasks/TaskQueries.js"
import { UserCalendar } from "../accounts/UserCalendar.js"

const quota = (row: TaskRow) => isQuota(row)

/**
 * Bulk done, snooze, snooze-overdue and edit (spec §4.3). Each is one transaction and one
 * undo entry, built from the same steps as the single-task actions. Ids the caller cannot
 * see are counted as skipped and never touched or revealed.
 */
export class BulkActions extends Effect.Service<BulkActions>()("steady/BulkActions", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const mutations = yield* Mutations
    const queries = yield* TaskQueries
    const lifecycle = yield* TaskLifecycle
    const quotas = yield* Quotas
    const calendars = yield* UserCalendar
    const maintenance = yield* DatabaseMaintenance

    /** The visible rows among `ids`, locked, in id order. */
    const lockMany = (user: CurrentUserShape, ids: ReadonlyArray<number>) => lockVisibleAmong(sql, user.id, ids)

    const unique = (ids: ReadonlyArray<number>) => [...new Set(ids)]

    /** Runs a step; a refusal (400) counts the task as skipped instead of failing the batch. */
    const attempt = <A>(step: Effect.Effect<A, ValidationError>) => Effect.either(step)

    const done = Effect.fnUntraced(function*(user: CurrentUserShape, ids: ReadonlyArray<number>, closePeriod: boolean) {
      const wanted = unique(ids)
      const preview = yield* lockMany(user, wanted)
      if (!closePeriod && preview.length > 0 && preview.every(quota)) {
        return yield* Effect.fail(
          ValidationError.field("ids", "Every task in the batch is a quota; send close_period: true to close their periods")
        )
      }
      if (closePeriod) for (const row of preview.filter(quota)) yield* quotas.rollover(row.id)
      return yield* mutations.run({ user, action: "bulk_done" }, (tx) =>
        Effect.gen(function*() {
          const counts = { ...emptyCounts(), quota_skipped: 0 }
          const rows = yield* lockMany(user, wanted)
          counts.tasks_skipped += wanted.length - rows.length
          for (const row of rows) {
            if (quota(row)) {
              if (!closePeriod) {
                counts.quota_skipped++
                continue
              }
              // With close_period a quota is acted on like any task, so one in the trash is
              // skipped as trashed tasks are.
              const closed = yield* attempt(lifecycle.closePeriodStep(tx, row))
              if (Either.isLeft(closed)) counts.tasks_skipped++
              else counts.tasks_affected++
              continue
            }
            const result = yield* attempt(lifecycle.doneStep(tx, row))
            if (Either.isLeft(result)) counts.tasks_skipped++
            else counts.tasks_affected++
          }
          tx.describe(`Marked ${counts.tasks_affected} task(s) done`)
          return counts
        }))
    })

    const snoozeRows = Effect.fnUntraced(function*(tx: Tx, rows: ReadonlyArray<TaskRow>, until: Date, counts: BulkCounts) {
      for (const row of rows) {
        if (row.is_reminder) {
          counts.skipped_reminders++
          continue
        }
        if (quota(row) || row.done || row.deleted_at !== null) {
          counts.tasks_skipped++
          continue
        }
        const result = yield* attempt(lifecycle.snoozeStep(tx, row, until, { allowPastDeadline: false, capAtDeadline: false }))
        if (Either.isLeft(result)) {
          if (row.deadline_at !== null && until.toISOString() > row.deadline_at) counts.skipped_deadline++
          else counts.tasks_skipped++
          continue
        }
        counts.tasks_affected++
        if (row.priority === HIGH) counts.snoozed_high++
      }
    })

    const snooze = (user: CurrentUserShape, ids: ReadonlyArray<number>, until: Date) =>
      mutations.run({ user, action: "bulk_snooze" }, (tx) => snoozeBody(tx, user, ids, until))
    const snoozeBody = Effect.fnUntraced(function*(tx: Tx, user: CurrentUserShape, ids: ReadonlyArray<number>, until: Date) {
      const counts = emptyCounts()
      const wanted = unique(ids)
      const rows = yield* lockMany(user, wanted)
      counts.tasks_skipped += wanted.length - rows.length
      yield* snoozeRows(tx, rows, until, counts)
      tx.describe(`Snoozed ${counts.tasks_affected} task(s) until ${until.toISOString()}`)
      return counts
    })

    /** Every overdue task (the one overdue definition) except P4, which is always left. */
    const snoozeOverdue = (user: CurrentUserShape, until: Date) =>
      mutations.run({ user, action: "bulk_snooze" }, (tx) => snoozeOverdueBody(tx, user, until))
    const snoozeOverdueBody = Effect.fnUntraced(function*(tx: Tx, user: CurrentUserShape, until: Date) {
      const counts = emptyCounts()
      const rows = yield* lockOverdue(sql, user.id, tx.now)
      const urgent = rows.filter((r) => r.priority >= URGENT)
      counts.skipped_urgent = urgent.length
      yield* snoozeRows(tx, rows.filter((r) => r.priority < URGENT), until, counts)
      tx.describe(`Snoozed ${counts.tasks_affected} overdue task(s) until ${until.toISOString()}`)
      return counts
    })

    const edit = (user: CurrentUserShape, payload: BulkEditPayload) =>
      mutations.run({ user, action: "bulk_edit" }, (tx) => editBody(tx, user, payload))
    const editBody = Effect.fnUntraced(function*(tx: Tx, user: CurrentUserShape, payload: BulkEditPayload) {
      const counts = emptyCounts()
      const wanted = unique([...payload.ids, ...(payload.include_task_ids ?? [])])
      const changes = payload.changes ?? {}
      const target = changes.project_id === undefined ? undefined : yield* queries.projectAccess(changes.project_id)
      if (changes.project_id !== undefined && (target === undefined || !canSeeProject(target, user.id))) {
        return yield* Effect.fail(ValidationError.field("changes.project_id", PROJECT_NOT_FOUND))
      }
      const rows = yield* lockMany(user, wanted)
      counts.tasks_skipped += wanted.length - rows.length
      const dated = new Set(payload.date_task_ids ?? [])
      const allowPast = new Set(payload.allow_past_deadline_ids ?? [])
      const cap = new Set(payload.cap_at_deadline_ids ?? [])
      for (const row of rows) {
        const id = row.id
        const settings = yield* calendars.ofTask(row)
        // Done and trashed tasks are skipped, as in every bulk action (README: bulk actions).
        if (row.done || row.deleted_at !== null) {
          counts.tasks_skipped++
          continue
        }
        if (changes.project_id !== undefined && changes.project_id !== row.project_id) {
          // One task its owner could no longer see refuses the whole batch, as an unknown project does.
          const refusal = projectRefusal(target, user.id, row.user_id)
          if (refusal !== undefined) return yield* Effect.fail(ValidationError.field("changes.project_id", refusal))
        }
        const patch: { -readonly [K in keyof TaskPatch]: TaskPatch[K] } = {}
        for (const [key, value] of Object.entries(changes)) {
          if (value !== undefined) (patch as Record<string, unknown>)[key] = value
        }
        const perTask = payload.per_task?.[String(id)]
        if (perTask !== undefined) patch.rrule = perTask.rrule
        if (dated.has(id) && payload.delta_minutes !== undefined && payload.delta_minutes !== 0) {
          if (row.due_at === null || quota(row)) {
            counts.skipped_no_due_date++
            continue
          }
          patch.due_at = new Date(new Date(row.due_at).getTime() + payload.delta_minutes * 60_000)
        }
        if (allowPast.has(id)) patch.allow_past_deadline = true
        if (cap.has(id)) patch.cap_at_deadline = true
        const planned = patchTaskRow(row, patch, { now: tx.now, zone: settings.zone })
        if (Either.isLeft(planned)) {
          const error = planned.left
          // Quota rule 3: one quota left without a period refuses the whole batch.
          if (Object.values(error.details).includes(QUOTA_NEEDS_PERIOD)) return yield* Effect.fail(error)
          if (isPastDeadline(error)) counts.skipped_deadline++
          else counts.tasks_skipped++
          continue
        }
        const writes = { ...planned.right }
        if (patch.cap_at_deadline === true) {
          // The date the edit asked for (or kept): a written date that differs was clamped,
          // whether the date itself moved or a new deadline came before it.
          const wanted = (field: "due_at" | "target_at") => {
            const value = patch[field]
            return value === undefined ? row[field] : value === null ? null : value.toISOString()
          }
          const deadline = writes.deadline_at !== undefined ? writes.deadline_at : row.deadline_at
          const clamped = (field: "due_at" | "target_at") =>
            field in writes && deadline !== null && writes[field] === deadline && wanted(field) !== deadline
          const capped = clamped("due_at") || (writes.target_auto !== true && clamped("target_at"))
          if (capped) counts.capped_deadline++
        }
        // A quota whose period rule changes starts the period of its new rule, as in a single edit.
        if (quota(row) && "rrule" in writes && writes.rrule !== row.rrule) {
          const period = quotas.initialPeriod(writes.rrule ?? null, settings, tx.now)
          writes.progress_period_start = period === undefined ? null : period.start.toISOString()
          writes.progress_period_end = period === undefined ? null : period.end.toISOString()
        }
        const fields = visibleFields(yield* tx.update(TasksTable, id, writes))
        if (fields.length > 0) {
          const task = yield* queries.wire(id)
          tx.emit({ event: "task.updated", taskId: id, data: { task: task as JsonValue, fields_changed: [...fields] } })
        }
        counts.tasks_affected++
      }
      tx.describe(`Edited ${counts.tasks_affected} task(s)`)
      return counts
    })

    /** Review's skip action: one undo entry over several skips. */
    const skip = (user: CurrentUserShape, ids: ReadonlyArray<number>) =>
      mutations.run({ user, action: "skip" }, (tx) => skipBody(tx, user, ids))
    const skipBody = Effect.fnUntraced(function*(tx: Tx, user: CurrentUserShape, ids: ReadonlyArray<number>) {
      const counts = emptyCounts()
      const wanted = unique(ids)
      const rows = yield* lockMany(user, wanted)
      counts.tasks_skipped += wanted.length - rows.length
      for (const row of rows) {
        const result = yield* attempt(lifecycle.skipStep(tx, row))
        if (Either.isLeft(result)) counts.tasks_skipped++
        else counts.tasks_affected++
      }
      tx.describe(`Skipped ${counts.tasks_affected} occurrence(s)`)
      return counts
    })

    /** A batch can change many rows at once: the embedded database's statistics are checked right after it. */
    const thenMaintain = <Args extends ReadonlyArray<any>, A, E, R>(f: (...args: Args) => Effect.Effect<A, E, R>) =>
      (...args: Args) => Effect.ensuring(f(...args), maintenance.request)

    return {
      done: thenMaintain(done),
      snooze: thenMaintain(snooze),
      snoozeOverdue: thenMaintain(snoozeOverdue),
      edit: thenMaintain(edit),
      skip: thenMaintain(skip)
    } as const
  }),
  // The same layer value the maintenance fiber is built with: layers are shared by
  // reference within one build, so the request reaches that fiber.
  dependencies: [DatabaseMaintenance.Default]
}) {}
