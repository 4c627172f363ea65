import { Either } from "effect"
import { ValidationError } from "../kernel/Errors.js"
import type { TaskRow, Writes } from "../pipeline/Rows.js"
import { advance } from "../recurrence/Occurrences.js"
import { isQuota, isRecurring, pastDeadline } from "../tasks/TaskRules.js"

/**
 * The state transitions of spec §3 as pure functions from a task row (as the undo log
 * normalises it: timestamps are ISO strings) to the writes they make.
 */

/** The fields of a task row the transitions read. */
export type TaskState = Pick<
  TaskRow,
  | "done"
  | "deleted_at"
  | "archived_at"
  | "due_at"
  | "original_due_at"
  | "rrule"
  | "recurrence_mode"
  | "anchor_time"
  | "is_reminder"
  | "is_tracked"
  | "progress_target"
  | "completion_count"
  | "skip_count"
  | "snooze_count"
  | "first_completed_at"
  | "last_completed_at"
  | "title"
  | "deadline_at"
  | "series_start_at"
>

const refuse = (message: string) => Either.left(ValidationError.of(message))

/**
 * The next due date of a recurring task, undefined when its series has ended, or a 400 when
 * its stored rule is refused (a rule saved before today's validation).
 */
export const nextDue = (t: TaskState, zone: string, at: Date): Either.Either<Date | undefined, ValidationError> =>
  Either.mapLeft(
    advance(
      { rule: t.rrule!, zone, anchorTime: t.anchor_time, mode: t.recurrence_mode },
      t.due_at === null ? null : new Date(t.due_at),
      at,
      t.series_start_at === null ? null : new Date(t.series_start_at)
    ),
    (reason) => ValidationError.field("rrule", `rrule ${reason}`)
  )

const openCheck = (t: TaskState, verb: string): Either.Either<void, ValidationError> => {
  if (t.deleted_at !== null) return refuse(`Cannot ${verb} a task in the trash; restore it first`)
  if (t.done) return refuse(`Cannot ${verb} a task that is already done`)
  return Either.void
}

/**
 * A recurring task moved on to its next occurrence (done and skip alike): the writes, or
 * undefined when it does not recur or its series has ended (COUNT, UNTIL).
 */
const advanceSeries = (
  t: TaskState,
  zone: string,
  now: Date
): Either.Either<{ readonly writes: Writes<TaskRow>; readonly nextDueAt: string } | undefined, ValidationError> => {
  if (!isRecurring(t)) return Either.right(undefined)
  return Either.map(nextDue(t, zone, now), (next) => {
    if (next === undefined) return undefined
    const nextDueAt = next.toISOString()
    return {
      writes: { due_at: nextDueAt, original_due_at: nextDueAt, previous_due_at: t.due_at, occurrence_at: t.due_at },
      nextDueAt
    }
  })
}

export interface DonePlan {
  readonly writes: Writes<TaskRow>
  readonly wasRecurring: boolean
  readonly nextDueAt: string | null
  /** The completion record's due dates. */
  readonly dueAtWas: string | null
  readonly dueAtNext: string | null
}

/** POST /api/tasks/{id}/done for a task that is not a quota. */
export const planDone = (t: TaskState, zone: string, now: Date): Either.Either<DonePlan, ValidationError> => {
  if (isQuota(t)) return refuse("A quota is done per period: send close_period: true to close the current period early")
  const open = openCheck(t, "complete")
  if (Either.isLeft(open)) return Either.left(open.left)
  const at = now.toISOString()
  const counts: Writes<TaskRow> = {
    completion_count: t.completion_count + 1,
    first_completed_at: t.first_completed_at ?? at,
    last_completed_at: at,
    ...(t.is_reminder ? { last_considered_at: at } : {})
  }
  const advanced = advanceSeries(t, zone, now)
  if (Either.isLeft(advanced)) return Either.left(advanced.left)
  if (advanced.right !== undefined) {
    const { writes, nextDueAt } = advanced.right
    return Either.right({ writes: { ...counts, ...writes }, wasRecurring: true, nextDueAt, dueAtWas: t.due_at, dueAtNext: nextDueAt })
  }
  // Not recurring, or the series has ended (COUNT or UNTIL): the last occurrence completes the task.
  return Either.right({
    writes: { ...counts, done: true, done_at: at, archived_at: at, occurrence_at: t.due_at },
    wasRecurring: isRecurring(t),
    nextDueAt: null,
    dueAtWas: t.due_at,
    dueAtNext: null
  })
}

export interface LastCompletion {
  readonly id: number
  readonly completed_at: string
  readonly due_at_was: string | null
  readonly due_at_next: string | null
}

/**
 * POST /api/tasks/{id}/undone: a done one-off reopens; a recurring task puts back its last
 * completion while its due date is still the one that completion set.
 */
export const planUndone = (
  t: TaskState,
  last: LastCompletion | undefined,
  previousCompletionAt: string | null
): Either.Either<Writes<TaskRow>, ValidationError> => {
  if (isQuota(t)) return refuse("A quota's completions are its met periods; there is nothing to undo")
  if (t.deleted_at !== null) return refuse("Cannot reopen a task in the trash; restore it first")
  const rollback: Writes<TaskRow> = {
    completion_count: Math.max(0, t.completion_count - 1),
    last_completed_at: previousCompletionAt,
    first_completed_at: t.completion_count <= 1 ? null : t.first_completed_at,
    // Completing a reminder is what marks it considered; taking the completion back does too.
    ...(t.is_reminder ? { last_considered_at: previousCompletionAt } : {})
  }
  if (t.done) {
    return Either.right({
      ...rollback,
      done: false,
      done_at: null,
      archived_at: null,
      ...(last !== undefined && isRecurring(t) ? { due_at: last.due_at_was, original_due_at: last.due_at_was } : {})
    })
  }
  if (!isRecurring(t)) return refuse("The task is not done; there is nothing to put back")
  if (last === undefined) return refuse("The task has no completion to put back")
  if (last.due_at_next !== t.due_at) {
    return refuse("The due date changed since the last completion; it cannot be put back")
  }
  return Either.right({ ...rollback, due_at: last.due_at_was, original_due_at: last.due_at_was })
}

export interface SkipPlan {
  readonly writes: Writes<TaskRow>
  readonly wasRecurring: boolean
  readonly nextDueAt: string | null
}

/** POST /api/tasks/{id}/skip-occurrence. */
export const planSkip = (t: TaskState, zone: string, now: Date): Either.Either<SkipPlan, ValidationError> => {
  if (t.is_reminder) return refuse("A reminder has no occurrence to skip")
  if (isQuota(t)) return refuse("A quota has no occurrence to skip")
  const open = openCheck(t, "skip")
  if (Either.isLeft(open)) return Either.left(open.left)
  const at = now.toISOString()
  const advanced = advanceSeries(t, zone, now)
  if (Either.isLeft(advanced)) return Either.left(advanced.left)
  if (advanced.right !== undefined) {
    const { writes, nextDueAt } = advanced.right
    return Either.right({ writes: { skip_count: t.skip_count + 1, ...writes }, wasRecurring: true, nextDueAt })
  }
  return Either.right({
    writes: { skip_count: t.skip_count + 1, archived_at: at, occurrence_at: t.due_at },
    wasRecurring: isRecurring(t),
    nextDueAt: null
  })
}

/** POST /api/tasks/{id}/snooze: due_at becomes exactly `until`; the original is kept. */
export const planSnooze = (
  t: TaskState,
  until: Date,
  options: { readonly allowPastDeadline: boolean; readonly capAtDeadline: boolean }
): Either.Either<Writes<TaskRow>, ValidationError> => {
  if (isQuota(t)) return refuse("A quota has no due date and cannot be snoozed")
  const open = openCheck(t, "snooze")
  if (Either.isLeft(open)) return Either.left(open.left)
  let due = until.toISOString()
  const deadline = t.deadline_at
  if (deadline !== null && due > deadline) {
    if (options.capAtDeadline) due = deadline
    else if (!options.allowPastDeadline) {
      return Either.left(pastDeadline("until"))
    }
  }
  return Either.right({
    due_at: due,
    previous_due_at: t.due_at,
    original_due_at: t.original_due_at ?? t.due_at,
    snooze_count: t.snooze_count + 1
  })
}
