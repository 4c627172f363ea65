import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CurrentUser } from "../services/CurrentUser.js"
import { Reminders } from "../services/Reminders.js"
import { Api } from "./Api.js"
import { sendData, whole } from "./Envelope.js"

export const RemindersHttpLive = HttpApiBuilder.group(Api, "reminders", (handlers) =>
  Effect.gen(function*() {
    const reminders = yield* Reminders
    return handlers
      .handle("list", () => Effect.flatMap(CurrentUser, reminders.list).pipe(Effect.map((r) => sendData(r))), whole)
      .handle("did", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => reminders.did(user, payload.keys)).pipe(Effect.map((r) => sendData(r))), whole)
      .handle("consider", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => reminders.consider(user, payload.keys)).pipe(Effect.map((r) => sendData(r))), whole)
      .handle("restore", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => reminders.restore(user, payload.keys)).pipe(Effect.map((r) => sendData(r))), whole)
  }))
