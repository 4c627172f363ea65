import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { AiAssist } from "../services/AiAssist.js"
import { AiInsights } from "../services/AiInsights.js"
import { CurrentUser } from "../services/CurrentUser.js"
import { Api } from "./Api.js"
import { sendData, whole } from "./Envelope.js"

export const AiHttpLive = HttpApiBuilder.group(Api, "ai", (handlers) =>
  Effect.gen(function*() {
    const assist = yield* AiAssist
    const insights = yield* AiInsights
    return handlers
      .handle("test", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => assist.modelTest(user, payload.feature)).pipe(Effect.map((r) => sendData(r))))
      .handle("quickTake", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => assist.quickTake(user, payload)).pipe(Effect.map((r) => sendData(r))))
      .handle("whatsNext", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, (user) => assist.whatsNext(user, urlParams.refresh === true)).pipe(
          Effect.map((r) => sendData(r))
        ), whole)
      .handle("insightsGenerate", () =>
        Effect.flatMap(CurrentUser, insights.generate).pipe(Effect.map((r) => sendData(r))), whole)
      .handle("insightsStatus", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, (user) => insights.status(user, urlParams.session_id)).pipe(Effect.map((r) => sendData(r))))
      .handle("insightsResults", () => Effect.flatMap(CurrentUser, insights.results).pipe(Effect.map((r) => sendData(r))))
      .handle("status", () => Effect.flatMap(CurrentUser, assist.status).pipe(Effect.map((r) => sendData(r))))
  }))
