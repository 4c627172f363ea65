import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { BulkActions } from "../services/BulkActions.js"
import { CurrentUser } from "../services/CurrentUser.js"
import { Api } from "./Api.js"
import { sendBare, whole } from "./Envelope.js"

export const BulkHttpLive = HttpApiBuilder.group(Api, "bulk", (handlers) =>
  Effect.gen(function*() {
    const bulk = yield* BulkActions
    return handlers
      .handle("done", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => bulk.done(user, payload.ids, payload.close_period === true)).pipe(
          Effect.map((r) => sendBare(r))
        ), whole)
      .handle("snooze", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => bulk.snooze(user, payload.task_ids ?? payload.ids ?? [], payload.until)).pipe(
          Effect.map((r) => sendBare(r))
        ), whole)
      .handle("snoozeOverdue", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => bulk.snoozeOverdue(user, payload.until)).pipe(Effect.map((r) => sendBare(r))), whole)
      .handle("edit", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => bulk.edit(user, payload)).pipe(Effect.map((r) => sendBare(r))), whole)
  }))
