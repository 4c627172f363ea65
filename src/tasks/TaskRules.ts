import { Either } from "effect"
import { ValidationError } from "../kernel/Errors.js"
import type { TaskRow, Writes } from "../pipeline/Rows.js"
import { localParts, localTimeOfDay } from "../kernel/LocalTime.js"
import { firstOccurrenceAt, nextOccurrence } from "../recurrence/Occurrences.js"
import { isBarePeriodRule, parseRule } from "../recurrence/Recurrence.js"
import type { TaskCreate, TaskPatch } from "./Task.js"
import type { ProjectId, UserId } from "../kernel/Ids.js"

export const QUOTA_NEEDS_PERIOD = "A quota needs a period"

const pastDeadlineMessage = (field: string) => `${field} is after the deadline; send allow_past_deadline or cap_at_deadline`

/** The refusal of a date after the task's deadline without allow_past_deadline or cap_at_deadline (CONTRACT §7). */
export const pastDeadline = (field: "due_at" | "target_at" | "until") => ValidationError.field(field, pastDeadlineMessage(field))

/** Whether a refusal is `pastDeadline`'s: bulk edit counts those apart (skipped_deadline). */
export const isPastDeadline = (error: ValidationError) =>
  Object.entries(error.details).some(([field, message]) => message === pastDeadlineMessage(field))

/*
 * Rules that are also written in SQL, where queries filter by them (pipeline/WireSql.ts) or the
 * wire shows them (migrations/functions/steady_task_wire_of.sql). These are their twins, on a
 * row as `Rows.TaskRow` carries it (timestamps as `Date#toISOString` text); a property test
 * evaluates both on random rows (test/sql-rules.test.ts, test/wire-fields.test.ts). A SQL
 * condition that is NULL (no due date) does not hold: these say false.
 */

/** A task is a quota when its target is above 1 or it is tracked (spec §1). */
export const isQuota = (t: { readonly progress_target: number; readonly is_tracked: boolean }) =>
  t.progress_target > 1 || t.is_tracked

/** Neither done, in the trash nor archived. */
export const isOpen = (t: Pick<TaskRow, "done" | "deleted_at" | "archived_at">) =>
  !t.done && t.deleted_at === null && t.archived_at === null

/** Open and due before `now`; reminders and quotas are never overdue (spec §4.2). */
export const isOverdue = (
  t: Pick<TaskRow, "done" | "deleted_at" | "archived_at" | "is_reminder" | "is_tracked" | "progress_target" | "due_at">,
  now: Date
) => isOpen(t) && !t.is_reminder && !isQuota(t) && t.due_at !== null && Date.parse(t.due_at) < now.getTime()

/** A quota whose current period runs: it has one, and it is neither done nor in the trash. */
export const hasRunningPeriod = (t: Pick<TaskRow, "progress_period_end" | "done" | "deleted_at">) =>
  t.progress_period_end !== null && !t.done && t.deleted_at === null

/** A rule that repeats the task itself; a quota's rule names its period instead (the wire's `is_recurring`). */
export const isRecurring = (t: Pick<TaskRow, "rrule" | "is_tracked" | "progress_target">) => t.rrule !== null && !isQuota(t)

/**
 * The wire's `is_snoozed`: an open task that was snoozed and is not back on its original due
 * date. A plain edit of the due date is a reschedule, not a snooze.
 */
export const isSnoozed = (t: Pick<TaskRow, "done" | "snooze_count" | "due_at" | "original_due_at">) =>
  !t.done && t.snooze_count > 0 && t.due_at !== t.original_due_at

const iso = (d: Date | null | undefined): string | null => (d === null || d === undefined ? null : d.toISOString())

/** anchor_time/dow/dom: where the due date sits on the user's local calendar. */
export const anchorsOf = (due: string | null, zone: string): Pick<TaskRow, "anchor_time" | "anchor_dow" | "anchor_dom"> => {
  if (due === null) return { anchor_time: null, anchor_dow: 0, anchor_dom: 0 }
  const at = new Date(due)
  const p = localParts(at, zone)
  return { anchor_time: localTimeOfDay(at, zone), anchor_dow: p.weekday, anchor_dom: p.day }
}

/** The fields of a task that the rules below look at. */
export interface RuleView {
  readonly due_at: string | null
  readonly target_at: string | null
  readonly deadline_at: string | null
  readonly rrule: string | null
  readonly is_reminder: boolean
  readonly is_tracked: boolean
  readonly progress_target: number
}

interface DeadlineOptions {
  readonly allowPastDeadline: boolean
  readonly capAtDeadline: boolean
}

/**
 * Quota rules 1, 2 and 4, the bare-period rule, rule syntax, and the deadline rule
 * (CONTRACT §7). `ruleTouched` is false for an edit that leaves a legacy quota's missing
 * rule alone (quota rule 5). Returns the dates after capping.
 */
export const checkRules = (
  view: RuleView,
  options: DeadlineOptions & { readonly ruleTouched: boolean; readonly dateTouched: boolean }
): Either.Either<RuleView, ValidationError> => {
  const quota = isQuota(view)
  if (quota) {
    if (view.is_reminder) return Either.left(ValidationError.field("is_reminder", "A quota cannot be a reminder"))
    if (view.due_at !== null && options.dateTouched) {
      return Either.left(ValidationError.field("due_at", "A quota has no due date"))
    }
    if (view.rrule === null && options.ruleTouched) return Either.left(ValidationError.field("rrule", QUOTA_NEEDS_PERIOD))
    if (view.rrule !== null && !isBarePeriodRule(view.rrule)) {
      return Either.left(
        ValidationError.field("rrule", "A quota's rule names its period: FREQ=DAILY, WEEKLY, MONTHLY or YEARLY with an optional INTERVAL")
      )
    }
  } else if (view.rrule !== null) {
    if (isBarePeriodRule(view.rrule) && view.due_at === null && options.ruleTouched) {
      return Either.left(
        ValidationError.field("rrule", "A bare period rule is valid only on a quota (set progress_target or is_tracked)")
      )
    }
    const parsed = parseRule(view.rrule)
    if (Either.isLeft(parsed)) return Either.left(ValidationError.field("rrule", `rrule ${parsed.left}`))
  }
  if (view.deadline_at !== null) {
    const deadline = view.deadline_at
    let due = view.due_at
    let target = view.target_at
    for (const [field, value] of [["due_at", due], ["target_at", target]] as const) {
      if (value !== null && value > deadline) {
        if (options.capAtDeadline) {
          if (field === "due_at") due = deadline
          else target = deadline
        } else if (!options.allowPastDeadline) {
          return Either.left(pastDeadline(field))
        }
      }
    }
    return Either.right({ ...view, due_at: due, target_at: target })
  }
  return Either.right(view)
}

/**
 * The due date a recurring task starts with: the given one, else the rule's first
 * occurrence from now. A rule with no occurrence left (UNTIL passed, COUNT spent, an
 * impossible date) is refused.
 */
export const firstDue = (
  view: RuleView,
  zone: string,
  now: Date
): Either.Either<FirstDue, ValidationError> => {
  if (view.rrule === null || isQuota(view)) return Either.right({ due_at: view.due_at, anchor_time: undefined })
  const from = view.due_at === null ? now : new Date(view.due_at)
  const anchorTime = view.due_at === null ? null : localTimeOfDay(from, zone)
  const first = firstOccurrenceAt({ rule: view.rrule, zone, anchorTime }, from)
  if (Either.isLeft(first)) return Either.left(ValidationError.field("rrule", `rrule ${first.left}`))
  if (first.right === undefined) return Either.left(ValidationError.field("rrule", "rrule never matches a future date"))
  if (view.due_at !== null) return Either.right({ due_at: view.due_at, anchor_time: undefined })
  return Either.right({ due_at: first.right.at.toISOString(), anchor_time: first.right.wallTime })
}

/**
 * A new recurring reminder must have an occurrence at or after `now`. The sweep rolls a missed
 * one forward to its next occurrence after now (spec §3, quota reminders 6); a series with none
 * left (`FREQ=DAILY;COUNT=1` due yesterday, an UNTIL already passed) would be a reminder that
 * is over before it starts, so it is refused instead of stored. Ordinary recurring tasks may
 * start overdue: they wait to be completed.
 */
export const checkReminderSeries = (
  view: RuleView,
  first: FirstDue,
  zone: string,
  now: Date
): Either.Either<void, ValidationError> => {
  if (!view.is_reminder || view.rrule === null || isQuota(view) || first.due_at === null) return Either.void
  const start = new Date(first.due_at)
  if (start.getTime() >= now.getTime()) return Either.void
  const anchorTime = first.anchor_time ?? localTimeOfDay(start, zone)
  const next = nextOccurrence({ rule: view.rrule, zone, anchorTime }, start, now)
  if (Either.isLeft(next)) return Either.left(ValidationError.field("rrule", `rrule ${next.left}`))
  if (next.right === undefined) {
    return Either.left(ValidationError.field("rrule", "rrule has no occurrence left: the reminder's series has already ended"))
  }
  return Either.void
}

/**
 * A recurring task's first due date; with `anchor_time` when the rule chose it: the wall
 * time the series keeps, which differs from the due date's clock reading when a DST gap
 * moved that first occurrence (Lord Howe's 02:00 shown as 02:30).
 */
export interface FirstDue {
  readonly due_at: string | null
  readonly anchor_time: string | undefined
}

/**
 * The stored row of a new task (CONTRACT §7 meanings), or why it is refused. Without a
 * `projectId` the row has none: the task goes to the user's Inbox, which the insert looks up.
 */
export const newTaskRow = (
  input: TaskCreate,
  context: { readonly now: Date; readonly zone: string; readonly projectId: ProjectId | undefined; readonly userId: UserId }
) => {
  const now = context.now.toISOString()
  const view: RuleView = {
    due_at: iso(input.due_at),
    target_at: iso(input.target_at),
    deadline_at: iso(input.deadline_at),
    rrule: input.rrule?.trim() ?? null,
    is_reminder: input.is_reminder ?? false,
    is_tracked: input.is_tracked ?? false,
    progress_target: input.progress_target ?? 1
  }
  return Either.map(
    Either.flatMap(
      checkRules(view, {
        allowPastDeadline: input.allow_past_deadline ?? false,
        capAtDeadline: input.cap_at_deadline ?? false,
        ruleTouched: true,
        dateTouched: true
      }),
      (checked) =>
        Either.flatMap(firstDue(checked, context.zone, context.now), (first) =>
          Either.map(checkReminderSeries(checked, first, context.zone, context.now), () => ({ ...checked, first })))
    ),
    ({ first, ...checked }) => {
      const title = input.title.trim()
      const autoTarget = checked.target_at === null && checked.deadline_at !== null
      return {
        user_id: context.userId,
        ...(context.projectId === undefined ? {} : { project_id: context.projectId }),
        title,
        original_title: input.title,
        short_title: input.short_title?.trim() ?? title,
        priority: input.priority ?? 0,
        due_at: first.due_at,
        original_due_at: first.due_at,
        series_start_at: checked.rrule !== null && !isQuota(checked) ? first.due_at : null,
        rrule: checked.rrule,
        recurrence_mode: input.recurrence_mode ?? "from_due",
        ...anchorsOf(first.due_at, context.zone),
        ...(first.anchor_time === undefined ? {} : { anchor_time: first.anchor_time }),
        target_at: autoTarget ? checked.deadline_at : checked.target_at,
        target_set_at: checked.target_at !== null ? now : null,
        segment_targeted_at: checked.target_at,
        target_auto: autoTarget,
        deadline_at: checked.deadline_at,
        horizon: input.horizon ?? null,
        horizon_set_at: input.horizon !== undefined && input.horizon !== null ? now : null,
        deadline_nag_off: input.deadline_nag_off ?? false,
        auto_snooze_minutes: input.auto_snooze_minutes ?? 0,
        labels: dedupe(input.labels ?? []),
        notes: input.notes ?? "",
        is_reminder: checked.is_reminder,
        is_tracked: checked.is_tracked,
        progress_target: checked.progress_target,
        progress_period_start: null,
        quota_prompt_config: input.quota_prompt_config ?? null,
        created_at: now,
        updated_at: now
      }
    }
  )
}

const dedupe = (labels: ReadonlyArray<string>): ReadonlyArray<string> => [...new Set(labels.map((l) => l.trim()))]

/** Columns that are bookkeeping, not something the user changed; left out of `fields_changed`. */
const INTERNAL_COLUMNS = new Set(["previous_due_at", "enrichment_requested_at", "updated_at"])
export const visibleFields = (fields: ReadonlyArray<string>) => fields.filter((f) => !INTERNAL_COLUMNS.has(f))

/**
 * The writes a PATCH makes to `current`, or why it is refused. Only fields present in the
 * patch (and what they imply: anchors, set-at stamps) are written.
 */
export const patchTaskRow = (
  current: TaskRow,
  patch: TaskPatch,
  context: {
    readonly now: Date
    readonly zone: string
  }
): Either.Either<Writes<TaskRow>, ValidationError> => {
  const now = context.now.toISOString()
  const has = <K extends keyof TaskPatch>(k: K) => patch[k] !== undefined
  // An automatic target is derived from the deadline, so the deadline rule never refuses it:
  // it follows a moved deadline (below) instead.
  const autoFollows = current.target_auto && !has("target_at")
  const view: RuleView = {
    due_at: has("due_at") ? iso(patch.due_at) : current.due_at,
    target_at: has("target_at") ? iso(patch.target_at) : autoFollows ? null : current.target_at,
    deadline_at: has("deadline_at") ? iso(patch.deadline_at) : current.deadline_at,
    rrule: has("rrule") ? (patch.rrule?.trim() ?? null) : current.rrule,
    is_reminder: current.is_reminder,
    is_tracked: has("is_tracked") ? patch.is_tracked! : current.is_tracked,
    progress_target: has("progress_target") ? patch.progress_target! : current.progress_target
  }
  const becameQuota = isQuota(view) && !isQuota(current)
  const options = {
    allowPastDeadline: patch.allow_past_deadline ?? false,
    capAtDeadline: patch.cap_at_deadline ?? false,
    ruleTouched: has("rrule") || becameQuota
  }
  let checked = checkRules(view, { ...options, dateTouched: has("due_at") || becameQuota })
  if (Either.isLeft(checked)) return Either.left(checked.left)
  // The series' wall time when the rule chose the due date (see FirstDue).
  let anchorTime: string | undefined
  if (has("rrule") && checked.right.rrule !== null) {
    const due = firstDue(checked.right, context.zone, context.now)
    if (Either.isLeft(due)) return Either.left(due.left)
    if (checked.right.due_at === null && due.right.due_at !== null) {
      // A rule added to a task without a due date schedules its first occurrence: the
      // rules (the deadline's above all) judge that date as if it had been sent.
      checked = checkRules({ ...view, due_at: due.right.due_at }, { ...options, dateTouched: true })
      if (Either.isLeft(checked)) return Either.left(checked.left)
      anchorTime = due.right.anchor_time
    }
  }
  const v = checked.right
  const out: Writes<TaskRow> = {}
  if (has("title")) {
    out.title = patch.title!.trim()
    // A short title never set apart from the title (it defaults to it) follows a rename.
    if (!has("short_title") && current.short_title === current.title) out.short_title = out.title
  }
  if (has("short_title")) out.short_title = patch.short_title!.trim()
  if (has("priority")) out.priority = patch.priority!
  if (has("notes")) out.notes = patch.notes!
  if (has("labels")) out.labels = dedupe(patch.labels!)
  if (has("project_id")) out.project_id = patch.project_id!
  if (has("recurrence_mode")) out.recurrence_mode = patch.recurrence_mode!
  if (has("auto_snooze_minutes")) out.auto_snooze_minutes = patch.auto_snooze_minutes!
  if (has("deadline_nag_off")) out.deadline_nag_off = patch.deadline_nag_off!
  if (has("progress_target")) out.progress_target = patch.progress_target!
  if (has("progress_current")) out.progress_current = patch.progress_current!
  if (has("is_tracked")) out.is_tracked = patch.is_tracked!
  if (has("quota_prompt_config")) out.quota_prompt_config = patch.quota_prompt_config ?? null
  if (has("rrule")) out.rrule = v.rrule
  if (has("due_at") || v.due_at !== current.due_at) {
    out.due_at = v.due_at
    Object.assign(out, anchorsOf(v.due_at, context.zone))
    if (anchorTime !== undefined) out.anchor_time = anchorTime
    if (current.original_due_at === null || patch.reset_original_due_at === true) out.original_due_at = v.due_at
  } else if (patch.reset_original_due_at === true) {
    out.original_due_at = v.due_at
  }
  // A new rule or a rescheduled due date starts the series afresh.
  const recurring = v.rrule !== null && !isQuota(v)
  if ((has("rrule") || has("due_at")) && (recurring || current.series_start_at != null)) {
    out.series_start_at = recurring ? v.due_at : null
  }
  if (has("deadline_at")) out.deadline_at = v.deadline_at
  if (has("target_at") || (!autoFollows && v.target_at !== current.target_at)) {
    if (v.target_at === null && v.deadline_at !== null) {
      // Null on a deadline task means "back to automatic" (spec §4.3).
      out.target_at = v.deadline_at
      out.target_auto = true
    } else {
      out.target_at = v.target_at
      out.target_auto = false
      if (v.target_at !== null && (current.target_set_at === null || patch.retarget === true)) {
        out.target_set_at = now
        // The first target date: stale-target age counts from it, so moving the target does not reset it.
        out.segment_targeted_at = v.target_at
      }
    }
  } else if (has("deadline_at") && (current.target_auto || current.target_at === null)) {
    // A deadline on a task without an explicit target gives it an automatic one (CONTRACT §7).
    out.target_at = v.deadline_at
    out.target_auto = v.deadline_at !== null
  }
  if (patch.retarget === true && v.target_at !== null) {
    out.target_set_at = now
    out.segment_targeted_at = v.target_at
  }
  if (has("horizon")) {
    out.horizon = patch.horizon ?? null
    if (patch.horizon !== current.horizon) out.horizon_set_at = patch.horizon === null ? null : now
  }
  if (patch.affirm_horizon === true) out.horizon_set_at = now
  return Either.right(out)
}
