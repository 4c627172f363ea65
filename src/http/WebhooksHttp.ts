import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CurrentUser } from "../services/CurrentUser.js"
import { Webhooks } from "../services/Webhooks.js"
import { Api } from "./Api.js"
import { sendData, whole } from "./Envelope.js"

export const WebhooksHttpLive = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* Webhooks
    return handlers
      .handle("list", () => Effect.flatMap(CurrentUser, webhooks.list).pipe(Effect.map((r) => sendData(r))), whole)
      .handle("create", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => webhooks.create(user, payload.url, payload.events)).pipe(
          Effect.map((r) => sendData(r, 201))
        ), whole)
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(CurrentUser, (user) => webhooks.update(user, path.id, payload)).pipe(Effect.map((r) => sendData(r))), whole)
      .handle("delete", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => webhooks.remove(user, path.id)).pipe(Effect.map((r) => sendData(r))), whole)
      .handle("deliveries", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => webhooks.deliveries(user, path.id)).pipe(Effect.map((r) => sendData(r))), whole)
  }))
