import { Schema } from "effect"
import { EVENT_NAMES } from "../changes/Changes.js"
import { Timestamp } from "../tasks/Task.js"
import { StoredString } from "../kernel/Text.js"

export const Webhook = Schema.Struct({
  id: Schema.Int,
  user_id: Schema.Int,
  url: Schema.String,
  events: Schema.Array(Schema.String),
  active: Schema.Boolean,
  created_at: Timestamp,
  updated_at: Timestamp
}).annotations({ identifier: "Webhook" })

/**
 * The create answer: the secret (its UTF-8 bytes are the HMAC key of both signatures), and
 * the same key in the Standard Webhooks form (`whsec_` + base64 of those bytes), which the
 * Standard Webhooks libraries take as it is to verify `webhook-signature`. Both shown once.
 */
export const WebhookWithSecret = Schema.extend(
  Webhook,
  Schema.Struct({ secret: Schema.String, standard_secret: Schema.String })
)

/** The Standard Webhooks spelling of a secret: `whsec_` + base64 of its UTF-8 bytes. */
export const standardSecret = (secret: string) => `whsec_${Buffer.from(secret, "utf8").toString("base64")}`

/** http or https, a host, no credentials in the URL, at most 2000 characters. */
export const WebhookUrl = StoredString.pipe(
  Schema.maxLength(2000, { message: () => "must be at most 2000 characters" }),
  Schema.filter((text) => {
    let url: URL
    try {
      url = new URL(text)
    } catch {
      return "must be an absolute http or https URL"
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") return "must use http or https"
    if (url.hostname === "") return "must name a host"
    if (url.username !== "" || url.password !== "") return "must not carry credentials"
    return undefined
  }, { jsonSchema: { minLength: 1, pattern: "^[Hh][Tt][Tt][Pp][Ss]?://[^@/?#]+([/?#]|$)" } })
)

export const EventName = Schema.Literal(...EVENT_NAMES).annotations({
  message: () => ({ message: `must be one of ${EVENT_NAMES.join(", ")}`, override: true })
})

const Events = Schema.Array(EventName).pipe(
  Schema.minItems(1, { message: () => "at least one event is required" }),
  Schema.maxItems(7)
)

export const WebhookCreate = Schema.Struct({ url: WebhookUrl, events: Events })
export const WebhookPatch = Schema.Struct({
  url: Schema.optional(WebhookUrl),
  events: Schema.optional(Events),
  active: Schema.optional(Schema.Boolean)
})

export const DeliveryLog = Schema.Struct({
  id: Schema.Int,
  webhook_id: Schema.Int,
  delivery_id: Schema.String,
  event: Schema.String,
  payload: Schema.Unknown,
  status_code: Schema.NullOr(Schema.Int),
  error: Schema.NullOr(Schema.String),
  attempt: Schema.Int,
  success: Schema.Boolean,
  duration_ms: Schema.Int,
  created_at: Timestamp
}).annotations({ identifier: "WebhookDelivery" })
