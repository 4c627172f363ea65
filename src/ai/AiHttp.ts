import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { AiAssist } from "./AiAssist.js"
import { AiInsights } from "./AiInsights.js"
import { AiStatus, InsightResults, InsightSession, InsightsStarted, ModelTestResult, QuickTake, WhatsNext } from "./AiApi.js"
import { answerData } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { whole } from "../http/Envelope.js"
import { onlyServices } from "../http/OnlyServices.js"
import { Authentication } from "../http/Security.js"
import { Idempotency } from "../pipeline/Idempotency.js"

export const AiHttpLive = HttpApiBuilder.group(Api, "ai", (handlers) =>
  Effect.gen(function*() {
    const assist = yield* AiAssist
    const insights = yield* AiInsights
    return handlers
      .handle("test", ({ payload }) => answerData(ModelTestResult)((user) => assist.modelTest(user, payload.feature)))
      .handle("quickTake", ({ payload }) => answerData(QuickTake)((user) => assist.quickTake(user, payload)))
      .handle("whatsNext", ({ urlParams }) =>
        answerData(WhatsNext)((user) => assist.whatsNext(user, urlParams.refresh === true)), whole)
      .handle("insightsGenerate", () => answerData(InsightsStarted)(insights.generate), whole)
      .handle("insightsStatus", ({ urlParams }) => answerData(InsightSession)((user) => insights.status(user, urlParams.session_id)))
      .handle("insightsResults", () => answerData(InsightResults)(insights.results))
      .handle("status", () => answerData(AiStatus)(assist.status))
  })).pipe(onlyServices(AiAssist, AiInsights, Authentication, Idempotency))
