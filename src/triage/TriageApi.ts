import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { Completion } from "../history/History.js"
import { Project } from "../projects/Project.js"
import { DateTimeInput, Task, Timestamp } from "../tasks/Task.js"
import { StoredString } from "../kernel/Text.js"
import { Data } from "../http/Envelope.js"
import { Authentication } from "../http/Security.js"

const GrowthItem = Schema.Struct({
  task: Task,
  from: Schema.NullOr(Schema.String),
  to: Schema.String,
  days_on_horizon: Schema.Int,
  can_act: Schema.Boolean
})
const StaleItem = Schema.Struct({ task: Task, age_days: Schema.Int })

const ReviewTask = Schema.Struct({
  seq: Schema.Int,
  id: Schema.Int,
  title: Schema.String,
  due_at: Schema.NullOr(Timestamp),
  priority: Schema.Int,
  rrule: Schema.NullOr(Schema.String),
  labels: Schema.Array(Schema.String)
})

export const ReviewExecutePayload = Schema.Struct({
  session_id: StoredString.pipe(Schema.minLength(1), Schema.maxLength(100)),
  actions: Schema.Array(
    Schema.Struct({
      type: Schema.Literal("done", "snooze", "skip"),
      targets: Schema.Array(StoredString.pipe(Schema.minLength(1), Schema.maxLength(20))).pipe(Schema.minItems(1), Schema.maxItems(500)),
      until: Schema.optional(DateTimeInput)
    })
  ).pipe(Schema.minItems(1), Schema.maxItems(50))
})

export const ExportQuery = Schema.Struct({
  format: Schema.optional(Schema.Literal("json", "csv").annotations({ message: () => ({ message: "must be json or csv", override: true }) })),
  type: Schema.optional(Schema.Literal("tasks", "projects").annotations({ message: () => ({ message: "must be tasks or projects", override: true }) }))
}).pipe(
  Schema.filter((q) =>
    q.format === "csv" && q.type === undefined ? { path: ["type"], message: "type (tasks or projects) is required for csv" } : undefined
  )
)

/** HttpApi documents one content type per status; export's 200 is also CSV text. */
const withCsvSuccess = (operation: Record<string, any>) => {
  const ok = operation.responses?.["200"]
  if (ok !== undefined) {
    ok.content = { ...ok.content, "text/csv": { schema: { type: "string", description: "RFC 4180 CSV with a header row" } } }
  }
  return operation
}

export const ProcessLists = Schema.Struct({
  inbox_project_id: Schema.Int,
  inbox: Schema.Array(Task),
  growth: Schema.Array(GrowthItem),
  stale_targets: Schema.Array(StaleItem),
  stale_targets_with_deadline: Schema.Array(StaleItem)
})
export const ReviewSession = Schema.Struct({
  session_id: Schema.String,
  groups: Schema.Array(Schema.Struct({ label: Schema.String, tasks: Schema.Array(ReviewTask) })),
  total_tasks: Schema.Int
})
export const ReviewExecuted = Schema.Struct({
  executed: Schema.Literal(true),
  results: Schema.Array(Schema.Struct({ type: Schema.String, task_ids: Schema.Array(Schema.Int), count: Schema.Int })),
  total_affected: Schema.Int
})

/** Rule-based triage, review sessions and export (spec §4.4, §4.5; CONTRACT §8). */
export class TriageApi extends HttpApiGroup.make("triage")
  .add(
    HttpApiEndpoint.get("process", "/api/process").addSuccess(
      Data(ProcessLists)
    )
  )
  .add(
    HttpApiEndpoint.get("review", "/api/review").addSuccess(
      Data(ReviewSession)
    )
  )
  .add(
    HttpApiEndpoint.post("executeReview", "/api/review/execute").setPayload(ReviewExecutePayload).addSuccess(
      Data(ReviewExecuted)
    )
  )
  .add(
    HttpApiEndpoint.get("export", "/api/export").setUrlParams(ExportQuery)
      .addSuccess(
        Data(Schema.Struct({
          tasks: Schema.Array(Task),
          projects: Schema.Array(Project),
          completions: Schema.Array(Completion),
          exported_at: Timestamp
        }))
      )
      .annotate(OpenApi.Description, "JSON by default; format=csv with type=tasks or projects answers text/csv")
      .annotate(OpenApi.Transform, withCsvSuccess)
  )
  .middleware(Authentication)
{}
