import { Schema } from "effect"
import { ProjectId, TaskId, TimeSlotId, UserId } from "../kernel/Ids.js"
import type { JsonValue } from "../kernel/Json.js"
import { Horizon, QuotaDayState, QuotaPromptConfig, RecurrenceMode } from "../tasks/Task.js"

/**
 * The rows of the tables the mutation pipeline writes, as it reads them (`tx.lock`) and as
 * the undo log keeps them: the columns as stored, timestamps as ISO-8601 text in UTC with
 * milliseconds (`Date#toISOString`), so a field's before and after compare equal exactly
 * when the database holds the same value. Each table's `TableSpec` (pipeline/Tables.ts) is
 * checked against its row type when compiled; tests decode real rows with these schemas.
 */

/** A timestamp column's value: what `Date#toISOString` gives. */
export const RowInstant = Schema.String.pipe(Schema.pattern(/^[+-]?\d{4,6}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/))

const Id = Schema.Int
const Json: Schema.Schema<JsonValue> = Schema.Union(
  Schema.Null,
  Schema.Boolean,
  Schema.Number,
  Schema.String,
  Schema.Array(Schema.suspend(() => Json)),
  Schema.Record({ key: Schema.String, value: Schema.suspend(() => Json) })
)
const NullableInstant = Schema.NullOr(RowInstant)

export const TaskRow = Schema.Struct({
  id: TaskId,
  user_id: UserId,
  project_id: ProjectId,
  title: Schema.String,
  original_title: Schema.String,
  short_title: Schema.String,
  done: Schema.Boolean,
  done_at: NullableInstant,
  priority: Schema.Int,
  due_at: NullableInstant,
  rrule: Schema.NullOr(Schema.String),
  recurrence_mode: RecurrenceMode,
  anchor_time: Schema.NullOr(Schema.String),
  anchor_dow: Schema.Int,
  anchor_dom: Schema.Int,
  original_due_at: NullableInstant,
  previous_due_at: NullableInstant,
  target_at: NullableInstant,
  deadline_at: NullableInstant,
  horizon: Schema.NullOr(Horizon),
  horizon_set_at: NullableInstant,
  last_considered_at: NullableInstant,
  segment_deferred_at: NullableInstant,
  segment_targeted_at: NullableInstant,
  target_set_at: NullableInstant,
  target_auto: Schema.Boolean,
  occurrence_at: NullableInstant,
  deadline_nag_off: Schema.Boolean,
  auto_snooze_minutes: Schema.Int,
  deleted_at: NullableInstant,
  archived_at: NullableInstant,
  labels: Schema.Array(Schema.String),
  notes: Schema.String,
  is_reminder: Schema.Boolean,
  is_tracked: Schema.Boolean,
  progress_target: Schema.Int,
  progress_current: Schema.Int,
  progress_period_start: NullableInstant,
  progress_period_end: NullableInstant,
  series_start_at: NullableInstant,
  quota_prompt_config: Schema.NullOr(QuotaPromptConfig),
  quota_day_state: QuotaDayState,
  completion_count: Schema.Int,
  skip_count: Schema.Int,
  snooze_count: Schema.Int,
  first_completed_at: NullableInstant,
  last_completed_at: NullableInstant,
  enrichment_requested_at: NullableInstant,
  enrichment_status: Schema.NullOr(Schema.Literal("pending", "done", "failed")),
  /** The enrichable fields as the request saw them (migration 0023); free-form JSON. */
  enrichment_baseline: Schema.NullOr(Json),
  /**
   * When the missed-reminder sweep found nothing to roll this recurring reminder to (its
   * series ended or its rule is refused; migration 0031); null while it rolls. Internal.
   */
  roll_stopped_at: NullableInstant,
  created_at: RowInstant,
  updated_at: RowInstant
})
export type TaskRow = typeof TaskRow.Type

export const ProjectRow = Schema.Struct({
  id: ProjectId,
  owner_id: UserId,
  name: Schema.String,
  shared: Schema.Boolean,
  sort_order: Schema.Int,
  color: Schema.String,
  description: Schema.String,
  is_inbox: Schema.Boolean,
  created_at: RowInstant,
  updated_at: RowInstant
})
export type ProjectRow = typeof ProjectRow.Type

export const TimeSlotRow = Schema.Struct({
  id: TimeSlotId,
  user_id: UserId,
  label: Schema.String,
  start_time: Schema.String,
  sort_order: Schema.Int,
  created_at: RowInstant
})
export type TimeSlotRow = typeof TimeSlotRow.Type

export const CompletionRow = Schema.Struct({
  id: Id,
  task_id: TaskId,
  user_id: UserId,
  completed_at: RowInstant,
  due_at_was: NullableInstant,
  due_at_next: NullableInstant,
  task_title: Schema.String,
  project_id: ProjectId,
  is_reminder: Schema.Boolean,
  is_tracked: Schema.Boolean,
  progress_target: Schema.Int
})
export type CompletionRow = typeof CompletionRow.Type

export const QuotaPeriodRow = Schema.Struct({
  id: Id,
  task_id: TaskId,
  user_id: UserId,
  period_start: RowInstant,
  period_end: RowInstant,
  count: Schema.Int,
  target: Schema.Int,
  met: Schema.Boolean,
  closed_at: RowInstant,
  closed_early: Schema.Boolean
})
export type QuotaPeriodRow = typeof QuotaPeriodRow.Type

/** What a write may set on a row of type `R`: any of its columns but the id. */
export type Writes<R> = { -readonly [K in Exclude<keyof R, "id">]?: R[K] }
