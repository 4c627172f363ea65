import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import * as Net from "node:net"
import { Conflict, NotFound, ValidationError } from "../kernel/Errors.js"
import { standardSecret } from "./Webhook.js"
import { AppConfig } from "../kernel/AppConfig.js"
import { generateSecret } from "../accounts/Credentials.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { refusedAddress } from "./WebhookNetwork.js"
import type { WebhookId } from "../kernel/Ids.js"
import { attemptLog } from "./WebhookDeliveries.js"
import { lockUser } from "../accounts/UsersTable.js"
import { deleteWebhook, insertWebhook, updateWebhook, webhookCount, webhookOf, webhooksOf } from "./WebhooksTable.js"

export const MAX_WEBHOOKS_PER_USER = 20

/** Webhook registrations and their delivery log (spec §4.8, CONTRACT §8). */
export class Webhooks extends Effect.Service<Webhooks>()("steady/Webhooks", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig

    /** A literal address that can never be delivered to is refused when registered. */
    const checkUrl = (url: string) => {
      const host = new URL(url).hostname.replace(/^\[|\]$/g, "")
      const reason = Net.isIP(host) !== 0 ? refusedAddress(host, config.webhookAllowPrivate) : undefined
      return reason === undefined ? Effect.void : Effect.fail(ValidationError.field("url", `not allowed: ${reason}`))
    }

    const read = Effect.fnUntraced(function*(user: CurrentUserShape, id: WebhookId) {
      const webhook = yield* webhookOf(sql, user.id, id)
      if (webhook === undefined) return yield* Effect.fail(NotFound.of("Webhook"))
      return webhook
    })

    const create = Effect.fnUntraced(function*(user: CurrentUserShape, url: string, events: ReadonlyArray<string>) {
      yield* checkUrl(url)
      const secret = generateSecret()
      const at = (yield* clockNow).toISOString()
      // The user row is locked while counting, so concurrent requests cannot both take the last place.
      const id = yield* Effect.gen(function*() {
        yield* lockUser(sql, user.id)
        if ((yield* webhookCount(sql, user.id)) >= MAX_WEBHOOKS_PER_USER) {
          return yield* Effect.fail(
            new Conflict({ message: `At most ${MAX_WEBHOOKS_PER_USER} webhooks per user; delete one first` })
          )
        }
        return yield* insertWebhook(sql, { userId: user.id, url, events: [...new Set(events)], secret, at })
      }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
      return { ...(yield* read(user, id)), secret, standard_secret: standardSecret(secret) }
    })

    const list = (user: CurrentUserShape) =>
      Effect.map(webhooksOf(sql, user.id), (webhooks) => ({ webhooks }))

    const update = (
      user: CurrentUserShape,
      id: WebhookId,
      patch: { readonly url?: string | undefined; readonly events?: ReadonlyArray<string> | undefined; readonly active?: boolean | undefined }
    ) =>
      Effect.gen(function*() {
        yield* read(user, id)
        if (patch.url !== undefined) yield* checkUrl(patch.url)
        const at = (yield* clockNow).toISOString()
        yield* updateWebhook(sql, user.id, id, {
          url: patch.url,
          events: patch.events === undefined ? undefined : [...new Set(patch.events)],
          active: patch.active
        }, at)
        return yield* read(user, id)
      })

    /** Deleting a webhook drops its pending deliveries and its log with it. */
    const remove = (user: CurrentUserShape, id: WebhookId) =>
      Effect.flatMap(deleteWebhook(sql, user.id, id), (deleted) =>
        deleted ? Effect.succeed({ deleted: true as const }) : Effect.fail(NotFound.of("Webhook")))

    /** Newest attempt first by time (concurrent deliveries may insert out of clock order). */
    const deliveries = Effect.fnUntraced(function*(user: CurrentUserShape, id: WebhookId) {
      yield* read(user, id)
      return { deliveries: yield* attemptLog(sql, id, 50) }
    })

    return { create, list, update, remove, deliveries } as const
  })
}) {}
