import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Task } from "../tasks/Task.js"
import { History } from "../history/HistoryService.js"
import { TaskLifecycle } from "./TaskLifecycle.js"
import { answerData, answerJsonText } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { whole } from "../http/Envelope.js"
import { keyedData } from "../http/IdempotentWrites.js"
import { CompletionPage, DoneResult, SkipResult, SnoozeResult, Stats } from "./LifecycleApi.js"
import { onlyServices } from "../http/OnlyServices.js"
import { Authentication } from "../http/Security.js"
import { Idempotency } from "../pipeline/Idempotency.js"

export const LifecycleHttpLive = HttpApiBuilder.group(Api, "lifecycle", (handlers) =>
  Effect.gen(function*() {
    const lifecycle = yield* TaskLifecycle
    const history = yield* History
    return handlers
      .handle("done", ({ path, payload }) => {
        const options = { closePeriod: payload?.close_period === true }
        return keyedData(DoneResult)(
          (user) => lifecycle.done(user, path.id, options),
          (user, keyed) => lifecycle.doneKeyed(user, path.id, options, keyed)
        )
      }, whole)
      .handle("undone", ({ path }) => answerData(Task)((user) => lifecycle.undone(user, path.id)), whole)
      .handle("skip", ({ path }) => answerData(SkipResult)((user) => lifecycle.skip(user, path.id)), whole)
      .handle("snooze", ({ path, payload }) =>
        answerData(SnoozeResult)((user) =>
          lifecycle.snooze(user, path.id, payload.until, {
            allowPastDeadline: payload.allow_past_deadline ?? false,
            capAtDeadline: payload.cap_at_deadline ?? false
          })
        ), whole)
      .handle("completions", ({ urlParams }) =>
        answerJsonText(CompletionPage)((user) => history.completionsJson(user, urlParams)), whole)
      .handle("stats", ({ urlParams }) => answerData(Stats)((user) => history.stats(user, urlParams)), whole)
  })).pipe(onlyServices(TaskLifecycle, History, Authentication, Idempotency))
