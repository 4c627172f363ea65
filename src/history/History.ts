import { Schema } from "effect"
import { DateTimeInput, Timestamp } from "../tasks/Task.js"
import { parseCalendarDate } from "../kernel/LocalTime.js"
import { MAX_INT, PageParams } from "../kernel/QueryParams.js"

export const Completion = Schema.Struct({
  id: Schema.Int,
  task_id: Schema.Int,
  user_id: Schema.Int,
  completed_at: Timestamp,
  due_at_was: Schema.NullOr(Timestamp),
  due_at_next: Schema.NullOr(Timestamp),
  task_title: Schema.String,
  project_id: Schema.Int,
  is_reminder: Schema.Boolean,
  is_tracked: Schema.Boolean,
  progress_target: Schema.Int
}).annotations({ identifier: "Completion" })

/** `YYYY-MM-DD`, a real calendar date from year 100 on (two-digit years are refused). */
export const CalendarDate = Schema.String.pipe(
  Schema.filter((s) => parseCalendarDate(s) !== undefined || "must be a date YYYY-MM-DD", {
    jsonSchema: { format: "date", pattern: "^(0[1-9][0-9]{2}|[1-9][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$" }
  })
)

const IdParam = Schema.String.pipe(
  Schema.pattern(/^\d{1,10}$/, { message: () => "must be a positive integer id" }),
  Schema.compose(Schema.NumberFromString),
  Schema.compose(Schema.Int.pipe(Schema.between(1, MAX_INT)))
).annotations({ jsonSchema: { type: "integer", minimum: 1, maximum: MAX_INT } })

export const CompletionsQuery = Schema.Struct({
  task_id: Schema.optional(IdParam),
  date: Schema.optional(CalendarDate),
  since: Schema.optional(DateTimeInput),
  until: Schema.optional(DateTimeInput),
  ...PageParams
}).pipe(
  Schema.filter((q) => {
    if ((q.since === undefined) !== (q.until === undefined)) {
      const missing = q.since === undefined ? "since" : "until"
      return { path: [missing], message: "since and until must be given together" }
    }
    return undefined
  })
)
export type CompletionsQuery = typeof CompletionsQuery.Type

export const DailyStats = Schema.Struct({
  id: Schema.NullOr(Schema.Int),
  user_id: Schema.Int,
  date: Schema.String,
  completions: Schema.Int,
  tasks_created: Schema.Int,
  snoozes: Schema.Int
}).annotations({ identifier: "DailyStats" })

export const StatTotals = Schema.Struct({
  completions: Schema.Int,
  tasks_created: Schema.Int,
  snoozes: Schema.Int
})

export const StatsSummary = Schema.Struct({
  today: DailyStats,
  week: StatTotals,
  month: StatTotals,
  all_time: StatTotals
})
export const StatsRange = Schema.Struct({ stats: Schema.Array(DailyStats) })

export const StatsQuery = Schema.Struct({
  start: Schema.optional(CalendarDate),
  end: Schema.optional(CalendarDate)
}).pipe(
  Schema.filter((q) => {
    if ((q.start === undefined) !== (q.end === undefined)) {
      return { path: [q.start === undefined ? "start" : "end"], message: "start and end must be given together" }
    }
    if (q.start !== undefined && q.end !== undefined && q.start > q.end) {
      return { path: ["start"], message: "start must not be after end" }
    }
    return undefined
  })
)
export type StatsQuery = typeof StatsQuery.Type

