import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Webhook, WebhookWithSecret } from "../domain/Webhook.js"
import { Webhooks } from "../services/Webhooks.js"
import { answerData } from "./Answer.js"
import { Api } from "./Api.js"
import { whole } from "./Envelope.js"
import { DeliveryList, WebhookDeleted, WebhookList } from "./WebhooksApi.js"

export const WebhooksHttpLive = HttpApiBuilder.group(Api, "webhooks", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* Webhooks
    return handlers
      .handle("list", () => answerData(WebhookList)(webhooks.list), whole)
      .handle("create", ({ payload }) =>
        answerData(WebhookWithSecret, 201)((user) => webhooks.create(user, payload.url, payload.events)), whole)
      .handle("update", ({ path, payload }) => answerData(Webhook)((user) => webhooks.update(user, path.id, payload)), whole)
      .handle("delete", ({ path }) => answerData(WebhookDeleted)((user) => webhooks.remove(user, path.id)), whole)
      .handle("deliveries", ({ path }) => answerData(DeliveryList)((user) => webhooks.deliveries(user, path.id)), whole)
  }))
