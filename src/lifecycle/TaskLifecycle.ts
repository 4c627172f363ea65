import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { ValidationError } from "../kernel/Errors.js"
import type { JsonValue } from "../kernel/Json.js"
import type { CompletionRow, TaskRow, Writes } from "../pipeline/Rows.js"
import { isQuota } from "../tasks/TaskRules.js"
import { planDone, planSkip, planSnooze, planUndone } from "./Lifecycle.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { Mutations } from "../pipeline/Mutations.js"
import { insertion, type Runner, type Tx } from "../pipeline/Tx.js"
import type { KeyedAnswer } from "../pipeline/IdempotencyRecord.js"
import { Quotas } from "../quotas/Quotas.js"
import { CompletionsTable, TasksTable } from "../pipeline/Tables.js"
import { TaskQueries } from "../tasks/TaskQueries.js"
import { UserCalendar } from "../accounts/UserCalendar.js"
import type { TaskId } from "../kernel/Ids.js"
import { latestCompletions } from "./CompletionsTable.js"

const quoted = (title: string) => `'${title}'`

export interface DoneOptions {
  readonly closePeriod: boolean
}

export interface SnoozeOptions {
  readonly allowPastDeadline: boolean
  readonly capAtDeadline: boolean
}

/** done, undone, skip-occurrence and snooze (spec §3), each one pass through the pipeline. */
export class TaskLifecycle extends Effect.Service<TaskLifecycle>()("steady/TaskLifecycle", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const mutations = yield* Mutations
    const queries = yield* TaskQueries
    const quotas = yield* Quotas
    const calendars = yield* UserCalendar

    const completions = (taskId: TaskId) => latestCompletions(sql, taskId, 2)

    const completionRow = (
      tx: Tx,
      task: TaskRow,
      dueAtWas: string | null,
      dueAtNext: string | null
    ): Writes<CompletionRow> => ({
      task_id: task.id,
      user_id: task.user_id,
      completed_at: tx.now.toISOString(),
      due_at_was: dueAtWas,
      due_at_next: dueAtNext,
      task_title: task.title,
      project_id: task.project_id,
      is_reminder: task.is_reminder,
      is_tracked: task.is_tracked,
      progress_target: task.progress_target
    })

    /**
     * Closes a locked quota's current period early (done with close_period, spec §3), on its
     * owner's calendar, for bulk done. Refused for a quota in the trash.
     */
    const closePeriodStep = Effect.fnUntraced(function*(tx: Tx, current: TaskRow) {
      if (current.deleted_at !== null) {
        return yield* Effect.fail(ValidationError.of("Cannot close the period of a quota in the trash; restore it first"))
      }
      const last = yield* quotas.closeEarly(tx, current, yield* calendars.ofTask(current))
      yield* tx.update(TasksTable, current.id, last.writes, { current: last.current })
    })

    /**
     * Marks a locked task done inside a bulk transaction. The next occurrence is on the
     * owner's calendar, whoever completes it (README: whose calendar).
     */
    const doneStep = Effect.fnUntraced(function*(tx: Tx, current: TaskRow) {
      const id = current.id
      const { zone } = yield* calendars.ofTask(current)
      const plan = yield* planDone(current, zone, tx.now)
      // The completion record is inserted by the UPDATE's statement.
      const write = { current, alsoInsert: insertion(CompletionsTable, completionRow(tx, current, plan.dueAtWas, plan.dueAtNext)) }
      const { wire: task } = yield* tx.updateWire(TasksTable, id, plan.writes, write)
      tx.count("completions")
      tx.emit({ event: "task.completed", taskId: id, data: { task: task as JsonValue } })
      return { ...task, was_recurring: plan.wasRecurring, next_due_at: plan.nextDueAt }
    })

    /**
     * done, one transaction that locks the task once, with its owner's calendar. A plain
     * done's UPDATE and completion record go out with the commit statement
     * (`Tx.updateAtCommit`). With close_period on a quota, its ended periods are rolled over
     * first (`Quotas.rolloverStep`), then its current period closes early (spec §3), its
     * last write going out with the commit statement too.
     */
    const doneWith = <X>(run: Runner<X>, user: CurrentUserShape, id: TaskId, options: DoneOptions) =>
      run({ user, action: "done" }, (tx) => doneBody(tx, user, id, options))

    // Made once (see docs/architecture.md, "Generators on the request path").
    const doneBody = Effect.fnUntraced(function*(tx: Tx, user: CurrentUserShape, id: TaskId, options: DoneOptions) {
      const { calendar, current } = yield* queries.lockForWrite(user, id)
      if (options.closePeriod && isQuota(current)) {
        const row = yield* quotas.rolloverStep(tx, current, calendar)
        if (row.deleted_at !== null) {
          return yield* Effect.fail(ValidationError.of("Cannot close the period of a quota in the trash; restore it first"))
        }
        const last = yield* quotas.closeEarly(tx, row, calendar)
        const { wire } = yield* tx.updateAtCommit(TasksTable, id, last.writes, { current: last.current })
        tx.describe(`Closed the current period of ${quoted(current.title)} early`)
        return wire.with({ was_recurring: false, next_due_at: null })
      }
      const plan = yield* planDone(current, calendar.zone, tx.now)
      // The completion record is inserted by the UPDATE's statement.
      const write = { current, alsoInsert: insertion(CompletionsTable, completionRow(tx, current, plan.dueAtWas, plan.dueAtNext)) }
      const { wire } = yield* tx.updateAtCommit(TasksTable, id, plan.writes, write)
      tx.count("completions")
      tx.emit({ event: "task.completed", taskId: id, data: { task: wire } })
      tx.describe(`Marked ${quoted(current.title)} done`)
      return wire.with({ was_recurring: plan.wasRecurring, next_due_at: plan.nextDueAt })
    })

    const undoneBody = Effect.fnUntraced(function*(tx: Tx, user: CurrentUserShape, id: TaskId) {
      const current = yield* queries.lockVisible(user, id)
      const [last, previous] = yield* completions(id)
      const writes = yield* planUndone(current, last, previous?.completed_at ?? null)
      const fields = yield* tx.update(TasksTable, id, writes)
      if (last !== undefined) {
        yield* tx.remove(CompletionsTable, last.id)
        tx.count("completions", -1, new Date(last.completed_at))
      }
      const task = yield* queries.wire(id)
      tx.emit({ event: "task.updated", taskId: id, data: { task: task as JsonValue, fields_changed: [...fields] } })
      tx.describe(`Marked ${quoted(current.title)} not done`)
      return task
    })
    const undone = (user: CurrentUserShape, id: TaskId) =>
      mutations.run({ user, action: "undone" }, (tx) => undoneBody(tx, user, id))

    /** Skips a locked task's occurrence inside a transaction, on the owner's calendar. */
    const skipStep = Effect.fnUntraced(function*(tx: Tx, current: TaskRow) {
      const id = current.id
      const { zone } = yield* calendars.ofTask(current)
      const plan = yield* planSkip(current, zone, tx.now)
      yield* tx.update(TasksTable, id, plan.writes)
      const task = yield* queries.wire(id)
      tx.emit({ event: "task.skipped", taskId: id, data: { task: task as JsonValue } })
      const description = plan.nextDueAt !== null
        ? `Skipped ${quoted(current.title)}; next occurrence ${plan.nextDueAt}`
        : `Skipped ${quoted(current.title)}`
      return { ...task, was_recurring: plan.wasRecurring, description }
    })

    const skipBody = Effect.fnUntraced(function*(tx: Tx, user: CurrentUserShape, id: TaskId) {
      const current = yield* queries.lockVisible(user, id)
      const result = yield* skipStep(tx, current)
      tx.describe(result.description)
      return result
    })
    const skip = (user: CurrentUserShape, id: TaskId) =>
      mutations.run({ user, action: "skip" }, (tx) => skipBody(tx, user, id))

    /** Snoozes a locked task inside a transaction. */
    const snoozeStep = Effect.fnUntraced(function*(tx: Tx, current: TaskRow, until: Date, options: SnoozeOptions) {
      const id = current.id
      const writes = yield* planSnooze(current, until, options)
      yield* tx.update(TasksTable, id, writes)
      tx.count("snoozes")
      const task = yield* queries.wire(id)
      const previous = current.due_at
      tx.emit({ event: "task.snoozed", taskId: id, data: { task: task as JsonValue, previous_due_at: previous } })
      const description = `Snoozed ${quoted(current.title)} until ${task.due_at}`
      return { ...task, previous_due_at: previous, description }
    })

    const snoozeBody = Effect.fnUntraced(
      function*(tx: Tx, user: CurrentUserShape, id: TaskId, until: Date, options: SnoozeOptions) {
        const current = yield* queries.lockVisible(user, id)
        const result = yield* snoozeStep(tx, current, until, options)
        tx.describe(result.description)
        return result
      }
    )
    const snooze = (user: CurrentUserShape, id: TaskId, until: Date, options: SnoozeOptions) =>
      mutations.run({ user, action: "snooze" }, (tx) => snoozeBody(tx, user, id, until, options))

    const done = (user: CurrentUserShape, id: TaskId, options: DoneOptions = { closePeriod: false }) =>
      doneWith(mutations.run, user, id, options)
    /** `done` under an Idempotency-Key: the answer is recorded with the key by the same statement. */
    const doneKeyed = (user: CurrentUserShape, id: TaskId, options: DoneOptions, keyed: KeyedAnswer) =>
      doneWith(mutations.keyed(keyed), user, id, options)

    return { done, doneKeyed, undone, skip, snooze, doneStep, closePeriodStep, skipStep, snoozeStep } as const
  })
}) {}
