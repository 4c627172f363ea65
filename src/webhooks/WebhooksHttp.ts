import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Webhook, WebhookWithSecret } from "./Webhook.js"
import { Webhooks } from "./Webhooks.js"
import { answerData } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { whole } from "../http/Envelope.js"
import { DeliveryList, WebhookDeleted, WebhookList } from "./WebhooksApi.js"
import { onlyServices } from "../http/OnlyServices.js"
import { Authentication } from "../http/Security.js"
import { Idempotency } from "../pipeline/Idempotency.js"

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
  })).pipe(onlyServices(Webhooks, Authentication, Idempotency))
