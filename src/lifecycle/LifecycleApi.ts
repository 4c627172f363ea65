import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import { Schema } from "effect"
import { Completion, CompletionsQuery, StatsQuery, StatsRange, StatsSummary } from "../history/History.js"
import { TaskIdParam } from "../kernel/Ids.js"
import { DateTimeInput, Task, Timestamp } from "../tasks/Task.js"
import { Data } from "../http/Envelope.js"
import { Authentication } from "../http/Security.js"

/** An optional body: absent or empty arrives as null. */
const Optional = <S extends Schema.Schema.Any>(schema: S) => Schema.NullOr(schema)

export const DonePayload = Optional(Schema.Struct({ close_period: Schema.optional(Schema.Boolean) }))
export const SnoozePayload = Schema.Struct({
  until: DateTimeInput,
  allow_past_deadline: Schema.optional(Schema.Boolean),
  cap_at_deadline: Schema.optional(Schema.Boolean)
})

export const DoneResult = Schema.extend(
  Task,
  Schema.Struct({ was_recurring: Schema.Boolean, next_due_at: Schema.NullOr(Timestamp) })
)
export const SkipResult = Schema.extend(Task, Schema.Struct({ was_recurring: Schema.Boolean, description: Schema.String }))
export const SnoozeResult = Schema.extend(
  Task,
  Schema.Struct({ previous_due_at: Schema.NullOr(Timestamp), description: Schema.String })
)

export const CompletionPage = Schema.Struct({ completions: Schema.Array(Completion), count: Schema.Int })
export const Stats = Schema.Union(StatsSummary, StatsRange)

/** The state transitions of spec §3, the completion history and statistics (§4.5). */
export class LifecycleApi extends HttpApiGroup.make("lifecycle")
  .add(HttpApiEndpoint.post("done", "/api/tasks/:id/done").setPath(TaskIdParam).setPayload(DonePayload).addSuccess(Data(DoneResult)))
  .add(HttpApiEndpoint.post("undone", "/api/tasks/:id/undone").setPath(TaskIdParam).addSuccess(Data(Task)))
  .add(
    HttpApiEndpoint.post("skip", "/api/tasks/:id/skip-occurrence").setPath(TaskIdParam).addSuccess(Data(SkipResult))
  )
  .add(
    HttpApiEndpoint.post("snooze", "/api/tasks/:id/snooze").setPath(TaskIdParam).setPayload(SnoozePayload).addSuccess(
      Data(SnoozeResult)
    )
  )
  .add(
    HttpApiEndpoint.get("completions", "/api/completions").setUrlParams(CompletionsQuery).addSuccess(
      Data(CompletionPage)
    )
  )
  .add(
    HttpApiEndpoint.get("stats", "/api/stats").setUrlParams(StatsQuery).addSuccess(
      Data(Stats)
    )
  )
  .middleware(Authentication)
{}
