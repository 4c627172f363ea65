import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import * as Net from "node:net"
import { Conflict, NotFound, ValidationError } from "../domain/Errors.js"
import type { Webhook } from "../domain/Webhook.js"
import { AppConfig } from "./AppConfig.js"
import { generateSecret } from "./Credentials.js"
import type { CurrentUserShape } from "./CurrentUser.js"
import { now as clockNow } from "./ServiceClock.js"
import { refusedAddress } from "./WebhookNetwork.js"
import type { WebhookId } from "../domain/Ids.js"
import { attemptLog } from "./WebhookDeliveries.js"

export const MAX_WEBHOOKS_PER_USER = 20

const webhookJson = (sql: SqlClient.SqlClient) =>
  sql`json_build_object('id', w.id, 'user_id', w.user_id, 'url', w.url, 'events', w.events, 'active', w.active,
    'created_at', steady_iso(w.created_at), 'updated_at', steady_iso(w.updated_at))`

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

    const read = (user: CurrentUserShape, id: WebhookId) =>
      Effect.gen(function*() {
        const [row] = yield* Effect.orDie(sql<{ webhook: typeof Webhook.Encoded }>`
          SELECT ${webhookJson(sql)} AS webhook FROM webhooks w WHERE w.id = ${id} AND w.user_id = ${user.id}`)
        if (row === undefined) return yield* Effect.fail(NotFound.of("Webhook"))
        return row.webhook
      })

    const create = (user: CurrentUserShape, url: string, events: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        yield* checkUrl(url)
        const secret = generateSecret()
        const at = (yield* clockNow).toISOString()
        // The user row is locked while counting, so concurrent requests cannot both take the last place.
        const id = yield* Effect.gen(function*() {
          yield* sql`SELECT id FROM users WHERE id = ${user.id} FOR UPDATE`
          const [count] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM webhooks WHERE user_id = ${user.id}`
          if (count!.n >= MAX_WEBHOOKS_PER_USER) {
            return yield* Effect.fail(
              new Conflict({ message: `At most ${MAX_WEBHOOKS_PER_USER} webhooks per user; delete one first` })
            )
          }
          const [row] = yield* sql<{ id: WebhookId }>`
            INSERT INTO webhooks (user_id, url, events, secret, created_at, updated_at)
            VALUES (${user.id}, ${url}, ${JSON.stringify([...new Set(events)])}::jsonb, ${secret}, ${at}::timestamptz, ${at}::timestamptz)
            RETURNING id`
          return row!.id
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
        return { ...(yield* read(user, id)), secret }
      })

    const list = (user: CurrentUserShape) =>
      sql<{ webhook: typeof Webhook.Encoded }>`SELECT ${webhookJson(sql)} AS webhook FROM webhooks w WHERE w.user_id = ${user.id} ORDER BY w.id`
        .pipe(Effect.map((rows) => ({ webhooks: rows.map((r) => r.webhook) })), Effect.orDie)

    const update = (
      user: CurrentUserShape,
      id: WebhookId,
      patch: { readonly url?: string | undefined; readonly events?: ReadonlyArray<string> | undefined; readonly active?: boolean | undefined }
    ) =>
      Effect.gen(function*() {
        yield* read(user, id)
        if (patch.url !== undefined) yield* checkUrl(patch.url)
        const at = (yield* clockNow).toISOString()
        yield* Effect.orDie(sql`UPDATE webhooks SET
            url = COALESCE(${patch.url ?? null}::text, url),
            events = COALESCE(${patch.events === undefined ? null : JSON.stringify([...new Set(patch.events)])}::jsonb, events),
            active = COALESCE(${patch.active ?? null}::boolean, active),
            updated_at = ${at}::timestamptz
          WHERE id = ${id} AND user_id = ${user.id}`)
        return yield* read(user, id)
      })

    /** Deleting a webhook drops its pending deliveries and its log with it. */
    const remove = (user: CurrentUserShape, id: WebhookId) =>
      sql<{ id: number }>`DELETE FROM webhooks WHERE id = ${id} AND user_id = ${user.id} RETURNING id`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => rows.length === 0 ? Effect.fail(NotFound.of("Webhook")) : Effect.succeed({ deleted: true as const }))
      )

    /** Newest attempt first by time (concurrent deliveries may insert out of clock order). */
    const deliveries = (user: CurrentUserShape, id: WebhookId) =>
      Effect.gen(function*() {
        yield* read(user, id)
        return { deliveries: yield* attemptLog(sql, id, 50) }
      })

    return { create, list, update, remove, deliveries } as const
  })
}) {}
