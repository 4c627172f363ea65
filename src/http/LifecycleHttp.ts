import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CurrentUser } from "../services/CurrentUser.js"
import { History } from "../services/History.js"
import { TaskLifecycle } from "../services/TaskLifecycle.js"
import { Api } from "./Api.js"
import { sendData, sendJsonText, whole } from "./Envelope.js"

export const LifecycleHttpLive = HttpApiBuilder.group(Api, "lifecycle", (handlers) =>
  Effect.gen(function*() {
    const lifecycle = yield* TaskLifecycle
    const history = yield* History
    return handlers
      .handle("done", ({ path, payload }) =>
        Effect.flatMap(CurrentUser, (user) =>
          lifecycle.done(user, path.id, { closePeriod: payload?.close_period === true })).pipe(
            Effect.map((t) => sendData(t))
          ), whole)
      .handle("undone", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => lifecycle.undone(user, path.id)).pipe(Effect.map((t) => sendData(t))), whole)
      .handle("skip", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => lifecycle.skip(user, path.id)).pipe(Effect.map((t) => sendData(t))), whole)
      .handle("snooze", ({ path, payload }) =>
        Effect.flatMap(CurrentUser, (user) =>
          lifecycle.snooze(user, path.id, payload.until, {
            allowPastDeadline: payload.allow_past_deadline ?? false,
            capAtDeadline: payload.cap_at_deadline ?? false
          })).pipe(Effect.map((t) => sendData(t))), whole)
      .handle("completions", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, (user) => history.completionsJson(user, urlParams)).pipe(
          Effect.map((body) => sendJsonText(body))
        ), whole)
      .handle("stats", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, (user) => history.stats(user, urlParams)).pipe(Effect.map((s) => sendData(s))), whole)
  }))
