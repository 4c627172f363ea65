import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Notifications } from "../services/Notifications.js"
import { PushKeys } from "../services/PushKeys.js"
import { dataResponse } from "./Answer.js"
import { Api } from "./Api.js"
import { whole } from "./Envelope.js"
import { NotificationActed, VapidKey } from "./PublicApi.js"

export const PublicHttpLive = HttpApiBuilder.group(Api, "public", (handlers) =>
  Effect.gen(function*() {
    const keys = yield* PushKeys
    const notifications = yield* Notifications
    return handlers
      .handle("vapidKey", () => Effect.map(keys.publicKey, (public_key) => dataResponse(VapidKey, { public_key, configured: true })), whole)
      .handle("notificationAction", ({ payload }) =>
        Effect.map(notifications.act(payload.token, payload.action, payload.task_id), (r) => dataResponse(NotificationActed, r)), whole)
  }))
