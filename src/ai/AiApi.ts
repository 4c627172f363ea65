import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { TooManyRequestsWire } from "../kernel/Errors.js"
import { BooleanParam } from "../kernel/QueryParams.js"
import { Timestamp, Title } from "../tasks/Task.js"
import { StoredString } from "../kernel/Text.js"
import { Data } from "../http/Envelope.js"
import { Authentication } from "../http/Security.js"

const oneOf = (text: string) => ({ message: () => ({ message: text, override: true }) })

export const FeatureName = Schema.Literal("enrichment", "quick_take", "whats_next", "insights").annotations(
  oneOf("must be enrichment, quick_take, whats_next or insights")
)

export const ModelTestResult = Schema.Struct({
  success: Schema.Boolean,
  duration_ms: Schema.Int,
  provider: Schema.String,
  provider_display: Schema.String,
  model: Schema.String,
  model_display: Schema.String,
  error: Schema.NullOr(Schema.String)
}).annotations({ identifier: "AiModelTest" })

export const WhatsNext = Schema.NullOr(
  Schema.Struct({
    tasks: Schema.Array(Schema.Struct({ task_id: Schema.Int, reason: Schema.String })),
    summary: Schema.String,
    generated_at: Timestamp,
    duration_ms: Schema.Int
  }).annotations({ identifier: "AiWhatsNext" })
)

export const AiStatus = Schema.Struct({
  enabled: Schema.Boolean,
  provider: Schema.String,
  provider_display: Schema.String,
  models: Schema.Struct({ enrichment: Schema.String, quick_take: Schema.String, whats_next: Schema.String, insights: Schema.String }),
  pending_enrichments: Schema.Int,
  recent_calls: Schema.Array(Schema.Struct({
    feature: Schema.String,
    status: Schema.Literal("ok", "error"),
    duration_ms: Schema.Int,
    model: Schema.String,
    error: Schema.NullOr(Schema.String),
    created_at: Timestamp
  }))
}).annotations({ identifier: "AiStatus" })

export const InsightSession = Schema.Struct({
  session_id: Schema.String,
  status: Schema.Literal("running", "complete", "failed"),
  total_tasks: Schema.Int,
  completed: Schema.Int,
  progress_pct: Schema.Int,
  started_at: Timestamp,
  finished_at: Schema.NullOr(Timestamp),
  error: Schema.NullOr(Schema.String)
}).annotations({ identifier: "AiInsightSession" })

export const InsightResults = Schema.Struct({
  session_id: Schema.NullOr(Schema.String),
  generated_at: Schema.NullOr(Timestamp),
  results: Schema.Array(Schema.Struct({
    task_id: Schema.Int,
    title: Schema.String,
    score: Schema.Int,
    commentary: Schema.String,
    signals: Schema.Array(Schema.Literal("review", "stale", "act_soon", "quick_win", "vague", "misprioritized"))
  })),
  count: Schema.Int
}).annotations({ identifier: "AiInsightResults" })

export const QuickTake = Schema.Struct({ text: Schema.String })
export const InsightsStarted = Schema.Struct({ session_id: Schema.String, total_tasks: Schema.Int, started_at: Timestamp })

/**
 * The AI helpers (spec §4.9, CONTRACT §8). With AI off every operation answers 503 except
 * the insights status (a stored read) and the model test (which reports it in its body).
 */
export class AiApi extends HttpApiGroup.make("ai")
  .add(
    HttpApiEndpoint.post("test", "/api/ai/test").setPayload(Schema.Struct({ feature: FeatureName })).addSuccess(Data(ModelTestResult))
      .annotate(OpenApi.Description, "A minimal prompt through the feature's provider and model (15 s timeout). A provider failure, or AI off, is success false with error, never an HTTP error.")
  )
  .add(
    HttpApiEndpoint.post("quickTake", "/api/ai/quick-take")
      .setPayload(Schema.Struct({ title: Title, has_due_date: Schema.optional(Schema.Boolean) }))
      .addSuccess(Data(QuickTake))
      .addError(TooManyRequestsWire)
      .annotate(OpenApi.Description, "One line (at most 200 characters) on a new title, in the context of the user's list. 503 when AI is off or the provider fails (reason in details); 429 with Retry-After past 10 a minute per user.")
  )
  .add(
    HttpApiEndpoint.get("whatsNext", "/api/ai/whats-next")
      .setUrlParams(Schema.Struct({ refresh: Schema.optional(BooleanParam) }))
      .addSuccess(Data(WhatsNext))
      .annotate(OpenApi.Description, "Without refresh: today's (UTC) stored answer or null, never a model call. With refresh=true: runs the model (60 s timeout), stores and returns the answer.")
  )
  .add(
    HttpApiEndpoint.post("insightsGenerate", "/api/ai/insights/generate").addSuccess(
      Data(InsightsStarted)
    ).annotate(OpenApi.Description, "Starts scoring the user's open tasks in the background, in chunks. 409 while a session runs.")
  )
  .add(
    HttpApiEndpoint.get("insightsStatus", "/api/ai/insights/status")
      .setUrlParams(Schema.Struct({ session_id: StoredString.pipe(Schema.minLength(1), Schema.maxLength(100)) }))
      .addSuccess(Data(InsightSession))
      .annotate(OpenApi.Description, "A stored session's progress; answers whether or not AI is on. 404 for an unknown or another user's session.")
  )
  .add(HttpApiEndpoint.get("insightsResults", "/api/ai/insights/results").addSuccess(Data(InsightResults)))
  .add(HttpApiEndpoint.get("status", "/api/ai/status").addSuccess(Data(AiStatus)))
  .middleware(Authentication)
{}
