import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Notifications } from "../services/Notifications.js"
import { PushKeys } from "../services/PushKeys.js"
import { Api } from "./Api.js"
import { sendData, whole } from "./Envelope.js"

export const PublicHttpLive = HttpApiBuilder.group(Api, "public", (handlers) =>
  Effect.gen(function*() {
    const keys = yield* PushKeys
    const notifications = yield* Notifications
    return handlers
      .handle("vapidKey", () => Effect.map(keys.publicKey, (public_key) => sendData({ public_key, configured: true })), whole)
      .handle("notificationAction", ({ payload }) =>
        notifications.act(payload.token, payload.action, payload.task_id).pipe(Effect.map((r) => sendData(r))), whole)
  }))
