import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Notifications } from "../quotas/Notifications.js"
import { PushKeys } from "../quotas/PushKeys.js"
import { dataResponse } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { whole } from "../http/Envelope.js"
import { NotificationActed, VapidKey } from "./PublicApi.js"
import { onlyServices } from "../http/OnlyServices.js"

export const PublicHttpLive = HttpApiBuilder.group(Api, "public", (handlers) =>
  Effect.gen(function*() {
    const keys = yield* PushKeys
    const notifications = yield* Notifications
    return handlers
      .handle("vapidKey", () => Effect.map(keys.publicKey, (public_key) => dataResponse(VapidKey, { public_key, configured: true })), whole)
      .handle("notificationAction", ({ payload }) =>
        Effect.map(notifications.act(payload.token, payload.action, payload.task_id), (r) => dataResponse(NotificationActed, r)), whole)
  })).pipe(onlyServices(Notifications, PushKeys))
