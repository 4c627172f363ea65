import { ParseResult, Schema } from "effect"
import { ProjectId } from "../kernel/Ids.js"
import { BooleanParam, IntParam, MAX_INT, PageParams } from "../kernel/QueryParams.js"
import { isStorable, nonBlank, StoredString, UNSTORABLE_MESSAGE } from "../kernel/Text.js"

/** Wire timestamps: ISO 8601 in UTC with milliseconds and `Z`. */
export const Timestamp = Schema.String.annotations({ format: "date-time", examples: ["2026-11-21T08:00:00.000Z"] })
const NullableTimestamp = Schema.NullOr(Timestamp)

export const QuotaPromptConfig = Schema.Struct({
  enabled: Schema.optional(Schema.Boolean),
  slot_id: Schema.optional(Schema.NullOr(Schema.Int)),
  numbers: Schema.optional(
    Schema.Record({ key: Schema.String, value: Schema.Int }).pipe(
      Schema.filter((m) => Object.keys(m).every(isStorable) || `keys ${UNSTORABLE_MESSAGE}`, {
        jsonSchema: { propertyNames: { pattern: "^[^\\u0000]*$" } }
      })
    )
  )
})

export const QuotaDayState = Schema.Struct({
  date: Schema.NullOr(Schema.String),
  logged: Schema.Int,
  did: Schema.Array(Schema.String),
  considered: Schema.Array(Schema.String),
  did_applied: Schema.Record({ key: Schema.String, value: Schema.Int })
})

/** Spec §2.1, as the service sends it. */
export const Task = Schema.Struct({
  id: Schema.Int,
  user_id: Schema.Int,
  project_id: Schema.Int,
  title: Schema.String,
  original_title: Schema.String,
  short_title: Schema.String,
  done: Schema.Boolean,
  done_at: NullableTimestamp,
  priority: Schema.Int,
  due_at: NullableTimestamp,
  rrule: Schema.NullOr(Schema.String),
  recurrence_mode: Schema.String,
  anchor_time: Schema.NullOr(Schema.String),
  anchor_dow: Schema.Int,
  anchor_dom: Schema.Int,
  original_due_at: NullableTimestamp,
  target_at: NullableTimestamp,
  deadline_at: NullableTimestamp,
  horizon: Schema.NullOr(Schema.String),
  horizon_set_at: NullableTimestamp,
  last_considered_at: NullableTimestamp,
  segment_deferred_at: NullableTimestamp,
  segment_targeted_at: NullableTimestamp,
  target_set_at: NullableTimestamp,
  target_auto: Schema.Boolean,
  occurrence_at: NullableTimestamp,
  deadline_nag_off: Schema.Boolean,
  auto_snooze_minutes: Schema.Int,
  deleted_at: NullableTimestamp,
  archived_at: NullableTimestamp,
  labels: Schema.Array(Schema.String),
  notes: Schema.String,
  progress_target: Schema.Int,
  progress_current: Schema.Int,
  progress_period_start: NullableTimestamp,
  quota_prompt_config: Schema.NullOr(QuotaPromptConfig),
  quota_day_state: QuotaDayState,
  completion_count: Schema.Int,
  skip_count: Schema.Int,
  first_completed_at: NullableTimestamp,
  last_completed_at: NullableTimestamp,
  created_at: Timestamp,
  updated_at: Timestamp,
  is_recurring: Schema.Boolean,
  is_reminder: Schema.Boolean,
  is_tracked: Schema.Boolean,
  snooze_count: Schema.Int,
  is_snoozed: Schema.Boolean,
  /** AI enrichment of the title: null when never requested. */
  enrichment_status: Schema.NullOr(Schema.Literal("pending", "done", "failed"))
}).annotations({ identifier: "Task" })
export type Task = typeof Task.Type

// ---- inputs ----

const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?$/i

/** The date part names a real calendar day (`Date` would roll 2026-02-30 over to March 2). */
const realCalendarDay = (text: string): boolean => {
  const [year, month, day] = text.slice(0, 10).split("-").map(Number) as [number, number, number]
  return month >= 1 && month <= 12 && day >= 1 && day <= new Date(Date.UTC(year, month, 0)).getUTCDate()
}

/** An ISO 8601 date-time with any offset (none means UTC), decoded to a Date. */
export const DateTimeInput = Schema.transformOrFail(
  // Documented as RFC 3339 from 1970 on (what every client should send); the parser also
  // takes a space for T, no seconds and no offset (UTC), which the document leaves out.
  Schema.String.annotations({
    jsonSchema: {
      type: "string",
      format: "date-time",
      pattern: "^(19[7-9][0-9]|[2-9][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
    }
  }),
  Schema.DateFromSelf,
  {
    strict: true,
    decode: (text, _, ast) => {
      const trimmed = text.trim()
      const hasOffset = /(Z|[+-]\d{2}(:?\d{2})?)$/i.test(trimmed.slice(10))
      const date = new Date(hasOffset ? trimmed : `${trimmed}Z`)
      const year = date.getUTCFullYear()
      return ISO_DATE_TIME.test(trimmed) && realCalendarDay(trimmed) && !Number.isNaN(date.getTime()) && year >= 1970 && year <= 9999
        ? ParseResult.succeed(date)
        : ParseResult.fail(new ParseResult.Type(ast, text, "must be an ISO 8601 date-time"))
    },
    encode: (date) => ParseResult.succeed(date.toISOString())
  }
).annotations({ identifier: "DateTime", message: () => "must be an ISO 8601 date-time" })

export const Title = StoredString.pipe(
  nonBlank(),
  Schema.maxLength(10_000, { message: () => "must be at most 10000 characters" })
)
export const Notes = StoredString.pipe(Schema.maxLength(10_000, { message: () => "must be at most 10000 characters" }))
export const Labels = Schema.Array(
  StoredString.pipe(
    nonBlank("a label must not be empty"),
    Schema.maxLength(100, { message: () => "a label must be at most 100 characters" })
  )
).pipe(Schema.maxItems(50, { message: () => "at most 50 labels" }))
export const Priority = Schema.Int.pipe(Schema.between(0, 4, { message: () => "must be an integer from 0 (P0) to 4 (P4)" }))
/** `override`: the one message for the whole set, not "Expected \"day\"" from its first member. */
const oneOf = (text: string) => ({ message: () => ({ message: text, override: true }) })
export const Horizon = Schema.Literal("day", "week", "month", "someday").annotations(oneOf("must be day, week, month or someday"))
export const RecurrenceMode = Schema.Literal("from_due", "from_completion").annotations(
  oneOf("must be from_due or from_completion")
)
export const ProgressTarget = Schema.Int.pipe(Schema.between(1, 1000, { message: () => "must be an integer from 1 to 1000" }))
export const AutoSnoozeMinutes = Schema.Int.pipe(Schema.between(0, 525_600, { message: () => "must be 0-525600 minutes" }))
export const RRuleText = Schema.String.pipe(
  Schema.minLength(1, { message: () => "must not be empty" }),
  Schema.maxLength(1000, { message: () => "must be at most 1000 characters" })
)

/** POST /api/tasks (spec §4.2). */
export const TaskCreate = Schema.Struct({
  title: Title,
  short_title: Schema.optional(Title),
  due_at: Schema.optional(Schema.NullOr(DateTimeInput)),
  target_at: Schema.optional(Schema.NullOr(DateTimeInput)),
  deadline_at: Schema.optional(Schema.NullOr(DateTimeInput)),
  horizon: Schema.optional(Schema.NullOr(Horizon)),
  priority: Schema.optional(Priority),
  rrule: Schema.optional(Schema.NullOr(RRuleText)),
  recurrence_mode: Schema.optional(RecurrenceMode),
  labels: Schema.optional(Labels),
  notes: Schema.optional(Notes),
  project_id: Schema.optional(ProjectId),
  is_reminder: Schema.optional(Schema.Boolean),
  auto_snooze_minutes: Schema.optional(AutoSnoozeMinutes),
  progress_target: Schema.optional(ProgressTarget),
  is_tracked: Schema.optional(Schema.Boolean),
  create_label: Schema.optional(Schema.Boolean),
  ai_proposed: Schema.optional(Schema.Boolean),
  ai_added: Schema.optional(Schema.Boolean),
  enrich: Schema.optional(Schema.Boolean),
  deadline_nag_off: Schema.optional(Schema.Boolean),
  allow_past_deadline: Schema.optional(Schema.Boolean),
  cap_at_deadline: Schema.optional(Schema.Boolean),
  quota_prompt_config: Schema.optional(Schema.NullOr(QuotaPromptConfig))
}).annotations({ identifier: "TaskCreate" })
export type TaskCreate = typeof TaskCreate.Type

/** PATCH /api/tasks/{id}: only the fields present are updated. */
export const TaskPatch = Schema.Struct({
  title: Schema.optional(Title),
  short_title: Schema.optional(Title),
  due_at: Schema.optional(Schema.NullOr(DateTimeInput)),
  target_at: Schema.optional(Schema.NullOr(DateTimeInput)),
  deadline_at: Schema.optional(Schema.NullOr(DateTimeInput)),
  horizon: Schema.optional(Schema.NullOr(Horizon)),
  retarget: Schema.optional(Schema.Boolean),
  deadline_nag_off: Schema.optional(Schema.Boolean),
  affirm_horizon: Schema.optional(Schema.Boolean),
  allow_past_deadline: Schema.optional(Schema.Boolean),
  cap_at_deadline: Schema.optional(Schema.Boolean),
  reset_original_due_at: Schema.optional(Schema.Boolean),
  priority: Schema.optional(Priority),
  rrule: Schema.optional(Schema.NullOr(RRuleText)),
  recurrence_mode: Schema.optional(RecurrenceMode),
  labels: Schema.optional(Labels),
  notes: Schema.optional(Notes),
  project_id: Schema.optional(ProjectId),
  auto_snooze_minutes: Schema.optional(AutoSnoozeMinutes),
  progress_target: Schema.optional(ProgressTarget),
  progress_current: Schema.optional(Schema.Int.pipe(Schema.between(0, 1_000_000, { message: () => "must be 0 or more" }))),
  create_label: Schema.optional(Schema.Boolean),
  is_tracked: Schema.optional(Schema.Boolean),
  quota_prompt_config: Schema.optional(Schema.NullOr(QuotaPromptConfig))
}).annotations({ identifier: "TaskPatch" })
export type TaskPatch = typeof TaskPatch.Type

export const TaskKind = Schema.Literal("task", "reminder", "quota")
export type TaskKind = typeof TaskKind.Type

/** GET /api/tasks query (spec §4.2); `project` is an alias of `project_id`. */
export const TaskListQuery = Schema.Struct({
  done: Schema.optional(BooleanParam),
  project_id: Schema.optional(IntParam(1, MAX_INT)),
  project: Schema.optional(IntParam(1, MAX_INT)),
  label: Schema.optional(StoredString),
  search: Schema.optional(StoredString),
  trashed: Schema.optional(BooleanParam),
  archived: Schema.optional(BooleanParam),
  overdue: Schema.optional(BooleanParam),
  kind: Schema.optional(TaskKind.annotations(oneOf("must be task, reminder or quota"))),
  recurring: Schema.optional(BooleanParam),
  one_off: Schema.optional(BooleanParam),
  ...PageParams
})
export type TaskListQuery = typeof TaskListQuery.Type

/** GET /api/trash: pages like the task list. */
export const TrashQuery = Schema.Struct(PageParams)

export const TaskList = Schema.Struct({ tasks: Schema.Array(Task), count: Schema.Int })
export const TaskCounts = Schema.Struct({ total: Schema.Int, overdue: Schema.Int, today: Schema.Int })

export const TaskWithChanges = Schema.extend(
  Task,
  Schema.Struct({ fields_changed: Schema.Array(Schema.String), description: Schema.String })
)
export const TaskWithMessage = Schema.extend(Task, Schema.Struct({ message: Schema.String }))
