import type * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Option, Schema } from "effect"
import { CountRow, IdRow } from "../kernel/Columns.js"
import { UserId, WebhookId } from "../kernel/Ids.js"
import { Webhook } from "./Webhook.js"

/**
 * Every statement on `webhooks`: the registrations' reads and writes, where
 * a delivery goes, and whether a user has an active webhook at all (the commit statement's
 * condition for writing deliveries). `steady_deliver` (migrations/functions/steady_deliver.sql)
 * matches deliveries to webhooks in the database.
 */

/** A registration as the wire shows it (spec §4.8), for a webhook aliased `w`; the secret is never shown again. */
const webhookJson = (sql: SqlClient.SqlClient) =>
  sql`json_build_object('id', w.id, 'user_id', w.user_id, 'url', w.url, 'events', w.events, 'active', w.active,
    'created_at', steady_iso(w.created_at), 'updated_at', steady_iso(w.updated_at))`

/** A row of `webhookJson` (both drivers parse the JSON). */
const WebhookJsonRow = Schema.Struct({ webhook: Webhook })

/** One of the user's webhooks; undefined when it is not theirs or gone. */
export const webhookOf = (sql: SqlClient.SqlClient, userId: UserId, id: WebhookId) =>
  SqlSchema.findOne({
    Request: Schema.Struct({ userId: UserId, id: WebhookId }),
    Result: WebhookJsonRow,
    execute: ({ id, userId }) =>
      sql`SELECT ${webhookJson(sql)} AS webhook FROM webhooks w WHERE w.id = ${id} AND w.user_id = ${userId}`
  })({ userId, id }).pipe(Effect.map(Option.match({ onNone: () => undefined, onSome: (row) => row.webhook })), Effect.orDie)

/** The user's webhooks, oldest first. */
export const webhooksOf = (sql: SqlClient.SqlClient, userId: UserId) =>
  SqlSchema.findAll({
    Request: UserId,
    Result: WebhookJsonRow,
    execute: (userId) => sql`SELECT ${webhookJson(sql)} AS webhook FROM webhooks w WHERE w.user_id = ${userId} ORDER BY w.id`
  })(userId).pipe(Effect.map((rows) => rows.map((r) => r.webhook)), Effect.orDie)

export const webhookCount = (sql: SqlClient.SqlClient, userId: UserId) =>
  SqlSchema.single({
    Request: UserId,
    Result: CountRow,
    execute: (userId) => sql`SELECT count(*)::int AS n FROM webhooks WHERE user_id = ${userId}`
  })(userId).pipe(Effect.map((row) => row.n), Effect.catchTags({ ParseError: Effect.die, NoSuchElementException: Effect.die }))

export interface NewWebhook {
  readonly userId: UserId
  readonly url: string
  readonly events: ReadonlyArray<string>
  readonly secret: string
  readonly at: string
}

/** Registers a webhook; returns its id. */
export const insertWebhook = (sql: SqlClient.SqlClient, hook: NewWebhook) =>
  SqlSchema.single({
    Request: Schema.Struct({ userId: UserId, url: Schema.String, events: Schema.String, secret: Schema.String, at: Schema.String }),
    Result: Schema.Struct({ id: WebhookId }),
    execute: (hook) =>
      sql`INSERT INTO webhooks (user_id, url, events, secret, created_at, updated_at)
            VALUES (${hook.userId}, ${hook.url}, ${hook.events}::jsonb, ${hook.secret}, ${hook.at}::timestamptz, ${hook.at}::timestamptz)
            RETURNING id`
  })({ ...hook, events: JSON.stringify(hook.events) }).pipe(
    Effect.map((row) => row.id),
    Effect.catchTags({ ParseError: Effect.die, NoSuchElementException: Effect.die })
  )

export interface WebhookPatch {
  readonly url?: string | undefined
  readonly events?: ReadonlyArray<string> | undefined
  readonly active?: boolean | undefined
}

/** Sets what the patch gives (one statement whatever it gives), on one of the user's webhooks. */
export const updateWebhook = (sql: SqlClient.SqlClient, userId: UserId, id: WebhookId, patch: WebhookPatch, at: string) =>
  sql`UPDATE webhooks SET
            url = COALESCE(${patch.url ?? null}::text, url),
            events = COALESCE(${patch.events === undefined ? null : JSON.stringify(patch.events)}::jsonb, events),
            active = COALESCE(${patch.active ?? null}::boolean, active),
            updated_at = ${at}::timestamptz
          WHERE id = ${id} AND user_id = ${userId}`.pipe(Effect.asVoid, Effect.orDie)

/** Deletes one of the user's webhooks (its deliveries and log go with it); whether there was one. */
export const deleteWebhook = (sql: SqlClient.SqlClient, userId: UserId, id: WebhookId) =>
  SqlSchema.findAll({
    Request: Schema.Struct({ userId: UserId, id: WebhookId }),
    Result: IdRow,
    execute: ({ id, userId }) => sql`DELETE FROM webhooks WHERE id = ${id} AND user_id = ${userId} RETURNING id`
  })({ userId, id }).pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

/** Where a webhook's deliveries go, read at each attempt. */
export const DeliveryTarget = Schema.Struct({ url: Schema.String, secret: Schema.String, active: Schema.Boolean })
export type DeliveryTarget = typeof DeliveryTarget.Type

/** Where a webhook's deliveries go now; undefined once it is deleted. */
export const deliveryTarget = (sql: SqlClient.SqlClient, id: number) =>
  SqlSchema.findOne({
    Request: Schema.Int,
    Result: DeliveryTarget,
    execute: (id) => sql`SELECT url, secret, active FROM webhooks WHERE id = ${id}`
  })(id).pipe(Effect.map(Option.getOrUndefined), Effect.orDie)

/** Whether the user has an active webhook, as a condition. */
export const hasActiveWebhook = (sql: SqlClient.SqlClient, userId: UserId): Fragment =>
  sql`EXISTS (SELECT 1 FROM webhooks w WHERE w.user_id = ${userId} AND w.active)`
