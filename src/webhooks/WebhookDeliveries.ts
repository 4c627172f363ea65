import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Duration, Effect, Schema } from "effect"
import { Int8 } from "../kernel/Columns.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import type { AttemptResult } from "./WebhookSender.js"
import { type UserId, WebhookId } from "../kernel/Ids.js"
import { DeliveryLog } from "./Webhook.js"
import { deliveryTarget, hasActiveWebhook } from "./WebhooksTable.js"
import { type SqlText, sqlText } from "../sql/SqlText.js"

/**
 * A claimed delivery is leased for longer than all its remaining attempts can take
 * (3 × 10 s + 6 s), so no other dispatcher takes it while it is in flight; a crashed
 * instance's lease runs out and another instance carries on.
 */
export const WEBHOOK_LEASE = Duration.seconds(60)
/**
 * Slots one user's deliveries may hold at once (counted from live leases, so across
 * instances too): a user whose receivers hang cannot starve everyone else's.
 */
export const MAX_IN_FLIGHT_PER_USER = 4
/** Spec §6: delivery logs are kept for 7 days; finished outbox rows go with them. */
export const WEBHOOK_LOG_RETENTION_DAYS = 7
/** Rows one purging statement deletes at most, so it never holds the connection for long. */
const OUTBOX_BATCH = 1000

/** A delivery leased for sending; its `bigint` id as text, as the statements that end it take it back. */
export const ClaimedDelivery = Schema.Struct({
  id: Schema.String,
  webhook_id: Schema.Int,
  delivery_id: Schema.String,
  event: Schema.String,
  body: Schema.String,
  attempts: Schema.Int
})
export type ClaimedDelivery = typeof ClaimedDelivery.Type

/**
 * Deliveries waiting per webhook. A receiver that is down while its user keeps working
 * would otherwise grow the outbox without end; past this the oldest waiting ones are
 * dropped (status `dropped`, never sent), the newest kept.
 */
export const MAX_PENDING_PER_WEBHOOK = 1000

/**
 * The CTE of the mutation pipeline's commit statement that turns its events (a CTE `events`
 * with `n` and `event`; `body`, SQL over `e`, each one's frozen body) into one delivery per matching active webhook,
 * and drops what the user's webhooks then have waiting beyond the cap; `delivered.n` is the
 * number of rows written (none: no row). The new deliveries are the newest, so they are kept
 * first: only past the cap within one statement are some of them written as dropped.
 * Deliveries in flight (leased) count but are left alone, and rows another transaction holds
 * are skipped. At a full backlog, finding the newest row to drop walks the webhook's ~1,000
 * waiting entries of its index (and their heap pages): most of such a write's database time.
 *
 * The writes are `steady_deliver` (migrations/functions/steady_deliver.sql; its rule reads as
 * `deliver` in DeliveryOverflow.ts), called only when the user has an active webhook: as CTEs
 * they cost every write about a tenth of its database time, webhooks or not. The bodies are
 * rendered here, not in `events`, for the same reason: a body holding a task's wire text cost
 * every write ~10 % of its database CPU, read or not.
 */
export const deliveryWrites = (sql: SqlClient.SqlClient, userId: UserId, at: string, body: SqlText): SqlText =>
  sqlText`delivered AS (
      SELECT steady_deliver(${userId}, ${at}::timestamptz,
        (SELECT jsonb_agg(jsonb_build_object('n', e.n, 'event', e.event, 'body', ${body})) FROM events e),
        ${MAX_PENDING_PER_WEBHOOK}) AS n
      WHERE ${hasActiveWebhook(sql, userId)})`

/**
 * The CTE of the commit statement that keeps the events (a CTE `events` with `n`, `event`,
 * `task_id` and `payload`, its JSON text) in the outbox, in order. The payload is stored as
 * text, never parsed (migration 0038).
 */
export const outboxWrites = (userId: UserId, at: string): SqlText =>
  sqlText`outbox AS (
          INSERT INTO outbox_events (user_id, event, task_id, payload, occurred_at)
          SELECT ${userId}, e.event, e.task_id, e.payload, ${at}::timestamptz FROM events e ORDER BY e.n)`

/** A webhook's newest attempts, newest first by time (concurrent deliveries may insert out of clock order). */
export const attemptLog = (sql: SqlClient.SqlClient, webhookId: WebhookId, limit: number) =>
  SqlSchema.findAll({
    Request: Schema.Struct({ webhookId: WebhookId, limit: Schema.Int }),
    Result: DeliveryLog,
    execute: ({ limit, webhookId }) =>
      sql`SELECT id::int AS id, webhook_id, delivery_id, event, payload, status_code, error, attempt, success, duration_ms,
           steady_iso(created_at) AS created_at
    FROM webhook_attempts WHERE webhook_id = ${webhookId} ORDER BY created_at DESC, id DESC LIMIT ${limit}`
  })({ webhookId, limit }).pipe(Effect.orDie)

/** The metrics' counts, as scalar subqueries for one scrape statement; each follows an index. */
export const backlogCounts = (sql: SqlClient.SqlClient, hourAgo: string, dayAgo: string) => ({
  pending: sql`(SELECT count(*)::int FROM webhook_deliveries WHERE status = 'pending')`,
  failedAttempts: sql`(SELECT count(*)::int FROM webhook_attempts WHERE created_at > ${hourAgo}::timestamptz AND NOT success)`,
  failedDeliveries: sql`(SELECT count(*)::int FROM webhook_deliveries
        WHERE status <> 'pending' AND finished_at > ${dayAgo}::timestamptz AND status = 'failed')`
})

/**
 * The webhook outbox, its deliveries and the attempts log: every statement on those tables.
 * The commit statement writes the outbox rows and the deliveries (`outboxWrites`,
 * `deliveryWrites`); the dispatcher and the purges use the service below.
 */
export class WebhookDeliveries extends Effect.Service<WebhookDeliveries>()("steady/WebhookDeliveries", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Leases up to `limit` due deliveries. Users with anything waiting, one index probe each
     * (a loose index scan); for each, its oldest due rows up to what its live leases leave of
     * its share; then the oldest of those overall. The rows are locked (and re-checked) last,
     * since SKIP LOCKED cannot sit under a LIMIT per user; SKIP LOCKED lets instances share the work.
     */
    const claim = (limit: number) =>
      Effect.gen(function*() {
        const now = yield* clockNow
        const leaseUntil = new Date(now.getTime() + Duration.toMillis(WEBHOOK_LEASE)).toISOString()
        const at = now.toISOString()
        return yield* SqlSchema.findAll({
          Request: Schema.Void,
          Result: ClaimedDelivery,
          execute: () =>
            sql`
          WITH RECURSIVE waiting AS (
            (SELECT user_id FROM webhook_deliveries WHERE status = 'pending' ORDER BY user_id LIMIT 1)
            UNION ALL
            SELECT (SELECT d.user_id FROM webhook_deliveries d WHERE d.status = 'pending' AND d.user_id > w.user_id
                    ORDER BY d.user_id LIMIT 1)
            FROM waiting w WHERE w.user_id IS NOT NULL
          ),
          candidates AS (
            SELECT c.id FROM waiting w
            CROSS JOIN LATERAL (
              SELECT count(*)::int AS n FROM webhook_deliveries l
              WHERE l.user_id = w.user_id AND l.status = 'pending' AND l.lease_until IS NOT NULL
                AND l.lease_until > ${at}::timestamptz
            ) busy
            CROSS JOIN LATERAL (
              SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
              WHERE d.user_id = w.user_id AND d.status = 'pending' AND d.next_attempt_at <= ${at}::timestamptz
                AND (d.lease_until IS NULL OR d.lease_until <= ${at}::timestamptz)
              ORDER BY d.next_attempt_at, d.id
              LIMIT GREATEST(0, ${MAX_IN_FLIGHT_PER_USER} - busy.n)
            ) c
            WHERE w.user_id IS NOT NULL
            ORDER BY c.next_attempt_at, c.id
            LIMIT ${limit}
          )
          UPDATE webhook_deliveries d SET lease_until = ${leaseUntil}::timestamptz
          FROM (
            SELECT id FROM webhook_deliveries
            WHERE id IN (SELECT id FROM candidates) AND status = 'pending'
              AND (lease_until IS NULL OR lease_until <= ${at}::timestamptz)
            FOR UPDATE SKIP LOCKED
          ) due
          WHERE d.id = due.id
          RETURNING d.id::text AS id, d.webhook_id, d.delivery_id, d.event, d.body, d.attempts`
        })(undefined)
      }).pipe(Effect.orDie)

    const finish = (delivery: ClaimedDelivery, status: "delivered" | "failed" | "cancelled") =>
      Effect.flatMap(clockNow, (now) =>
        sql`UPDATE webhook_deliveries SET status = ${status}, finished_at = ${now.toISOString()}::timestamptz, lease_until = NULL
          WHERE id = ${delivery.id}::bigint`).pipe(Effect.orDie)

    /** Where a delivery goes, read at each attempt: a webhook deleted or deactivated since stops it. */
    const target = (delivery: ClaimedDelivery) => deliveryTarget(sql, delivery.webhook_id)

    /** Counts an attempt before it goes out, so an instance that takes the delivery over does not repeat it. */
    const countAttempt = (delivery: ClaimedDelivery, number: number) =>
      Effect.orDie(sql`UPDATE webhook_deliveries SET attempts = ${number} WHERE id = ${delivery.id}::bigint`)

    const logAttempt = (delivery: ClaimedDelivery, number: number, result: AttemptResult, durationMs: number) =>
      Effect.flatMap(clockNow, (now) =>
        sql`INSERT INTO webhook_attempts (webhook_id, delivery_id, event, payload, status_code, error, attempt, success, duration_ms, created_at)
          VALUES (${delivery.webhook_id}, ${delivery.delivery_id}, ${delivery.event}, ${delivery.body}::jsonb,
                  ${result.statusCode}, ${result.error}, ${number},
                  ${result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300},
                  ${durationMs}, ${now.toISOString()}::timestamptz)`).pipe(Effect.orDie)

    /** Drops attempts and finished deliveries past the log's retention. */
    const purgeLogs = Effect.gen(function*() {
      const cutoff = new Date((yield* clockNow).getTime() - WEBHOOK_LOG_RETENTION_DAYS * 86_400_000).toISOString()
      yield* sql`DELETE FROM webhook_attempts WHERE created_at < ${cutoff}::timestamptz`
      yield* sql`DELETE FROM webhook_deliveries WHERE status <> 'pending' AND finished_at < ${cutoff}::timestamptz`
    })

    /** The newest outbox event's id now (0 when there is none): the next purge's upper bound. */
    const outboxMark = SqlSchema.single({
      Request: Schema.Void,
      Result: Schema.Struct({ id: Schema.NullOr(Int8) }),
      execute: () => sql`SELECT max(id) AS id FROM outbox_events`
    })(undefined).pipe(Effect.map((row) => row.id ?? 0), Effect.catchTags({ ParseError: Effect.die, NoSuchElementException: Effect.die }))

    const purgeOutboxBatch = SqlSchema.findAll({
      Request: Schema.Int,
      Result: Schema.Struct({ id: Int8 }),
      execute: (upToId) =>
        sql`DELETE FROM outbox_events WHERE id IN (
              SELECT o.id FROM outbox_events o
              WHERE o.id <= ${upToId} AND NOT EXISTS (
                SELECT 1 FROM webhook_deliveries d
                WHERE d.user_id = o.user_id AND d.created_at = o.occurred_at AND d.event = o.event)
              ORDER BY o.id LIMIT ${OUTBOX_BATCH})
            RETURNING id`
    })

    /**
     * Drops outbox events up to `upToId` whose deliveries are all gone, i.e. finished and past
     * the delivery log's retention (`purgeLogs` removes those), or that never had any (no
     * active webhook wanted them). Nothing serves these rows: the delivery log shows attempts,
     * which carry their own payload, and the change feed and history have tables of their own.
     * Deliveries are written in the event's transaction with its user, name and instant, which
     * is how one is matched to its event. `upToId` is the mark taken one schedule period
     * earlier, so every event stays at least that long. Returns how many went.
     */
    const purgeOutbox = Effect.fnUntraced(function*(upToId: number) {
      let purged = 0
      for (;;) {
        const rows = yield* purgeOutboxBatch(upToId).pipe(Effect.catchTag("ParseError", Effect.die))
        purged += rows.length
        if (rows.length < OUTBOX_BATCH) return purged
      }
    })

    return { claim, finish, target, countAttempt, logAttempt, purgeLogs, outboxMark, purgeOutbox } as const
  })
}) {}
