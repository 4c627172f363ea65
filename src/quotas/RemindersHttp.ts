import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Reminders } from "./Reminders.js"
import { answerData } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { whole } from "../http/Envelope.js"
import { PromptResult, PromptsRestored, TodaysReminders } from "./RemindersApi.js"
import { onlyServices } from "../http/OnlyServices.js"
import { Authentication } from "../http/Security.js"
import { Idempotency } from "../pipeline/Idempotency.js"

export const RemindersHttpLive = HttpApiBuilder.group(Api, "reminders", (handlers) =>
  Effect.gen(function*() {
    const reminders = yield* Reminders
    return handlers
      .handle("list", () => answerData(TodaysReminders)(reminders.list), whole)
      .handle("did", ({ payload }) => answerData(PromptResult)((user) => reminders.did(user, payload.keys)), whole)
      .handle("consider", ({ payload }) => answerData(PromptResult)((user) => reminders.consider(user, payload.keys)), whole)
      .handle("restore", ({ payload }) => answerData(PromptsRestored)((user) => reminders.restore(user, payload.keys)), whole)
  })).pipe(onlyServices(Reminders, Authentication, Idempotency))
