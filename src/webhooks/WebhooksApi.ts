import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import { Schema } from "effect"
import { WebhookIdParam } from "../kernel/Ids.js"
import { DeliveryLog, Webhook, WebhookCreate, WebhookPatch, WebhookWithSecret } from "./Webhook.js"
import { Data } from "../http/Envelope.js"
import { Authentication } from "../http/Security.js"

export const WebhookList = Schema.Struct({ webhooks: Schema.Array(Webhook) })
export const WebhookDeleted = Schema.Struct({ deleted: Schema.Literal(true) })
export const DeliveryList = Schema.Struct({ deliveries: Schema.Array(DeliveryLog) })

/** Signed outgoing webhooks (spec §4.8, CONTRACT §8–§9). */
export class WebhooksApi extends HttpApiGroup.make("webhooks")
  .add(HttpApiEndpoint.get("list", "/api/webhooks").addSuccess(Data(WebhookList)))
  .add(
    HttpApiEndpoint.post("create", "/api/webhooks").setPayload(WebhookCreate).addSuccess(Data(WebhookWithSecret), {
      status: 201
    })
  )
  .add(HttpApiEndpoint.patch("update", "/api/webhooks/:id").setPath(WebhookIdParam).setPayload(WebhookPatch).addSuccess(Data(Webhook)))
  .add(
    HttpApiEndpoint.del("delete", "/api/webhooks/:id").setPath(WebhookIdParam).addSuccess(
      Data(WebhookDeleted)
    )
  )
  .add(
    HttpApiEndpoint.get("deliveries", "/api/webhooks/:id/deliveries").setPath(WebhookIdParam).addSuccess(
      Data(DeliveryList)
    )
  )
  .middleware(Authentication)
{}
