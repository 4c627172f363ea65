import * as SqlClient from "@effect/sql/SqlClient"
import { Duration, Effect, FiberSet, Layer, Ref, Schedule } from "effect"
import { AppConfig } from "../services/AppConfig.js"
import { forkWatched, markDisabled } from "../services/Liveness.js"
import { now as clockNow } from "../services/ServiceClock.js"
import { type AttemptResult, serviceSignature, standardSignature, WebhookSender } from "../services/WebhookSender.js"
import { WebhookWakeup } from "../services/WebhookWakeup.js"
import { logFailure } from "../services/DatabaseFailures.js"

/** Spec §6: up to 3 attempts, waiting 1 s and then 5 s between them. */
export const WEBHOOK_RETRY_DELAYS = [Duration.seconds(1), Duration.seconds(5)] as const
export const webhookRetrySchedule = Schedule.fromDelays(...WEBHOOK_RETRY_DELAYS)
export const WEBHOOK_MAX_ATTEMPTS = WEBHOOK_RETRY_DELAYS.length + 1

/**
 * A claimed delivery is leased for longer than all its remaining attempts can take
 * (3 × 10 s + 6 s), so no other dispatcher takes it while it is in flight; a crashed
 * instance's lease runs out and another instance carries on.
 */
export const WEBHOOK_LEASE = Duration.seconds(60)
/** The dispatcher also polls, for deliveries written by other instances and for retries after a crash. */
export const WEBHOOK_POLL = Duration.seconds(1)
const MAX_IN_FLIGHT = 16
/**
 * Slots one user's deliveries may hold at once (counted from live leases, so across
 * instances too): a user whose receivers hang cannot starve everyone else's.
 */
export const MAX_IN_FLIGHT_PER_USER = 4

interface Claimed {
  readonly id: string
  readonly webhook_id: number
  readonly delivery_id: string
  readonly event: string
  readonly body: string
  readonly attempts: number
}

class AttemptFailed {
  readonly _tag = "AttemptFailed"
}

export const makeDispatcher = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const sender = yield* WebhookSender

  const claim = (limit: number) =>
    Effect.gen(function*() {
      const now = yield* clockNow
      const leaseUntil = new Date(now.getTime() + Duration.toMillis(WEBHOOK_LEASE)).toISOString()
      const at = now.toISOString()
      // Users with anything waiting, one index probe each (a loose index scan); for each,
      // its oldest due rows up to what its live leases leave of its share; then the oldest
      // of those overall. The rows are locked (and re-checked) last, since SKIP LOCKED
      // cannot sit under a LIMIT per user.
      return yield* sql<Claimed>`
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
    }).pipe(Effect.orDie)

  const finish = (delivery: Claimed, status: "delivered" | "failed" | "cancelled") =>
    Effect.flatMap(clockNow, (now) =>
      sql`UPDATE webhook_deliveries SET status = ${status}, finished_at = ${now.toISOString()}::timestamptz, lease_until = NULL
        WHERE id = ${delivery.id}::bigint`).pipe(Effect.orDie)

  /** One attempt: re-reads the webhook (deleted or deactivated stops it), sends, logs. */
  const attempt = (delivery: Claimed, number: number) =>
    Effect.gen(function*() {
      const [hook] = yield* Effect.orDie(sql<{ url: string; secret: string; active: boolean }>`
        SELECT url, secret, active FROM webhooks WHERE id = ${delivery.webhook_id}`)
      if (hook === undefined || !hook.active) return "cancelled" as const
      yield* Effect.orDie(sql`UPDATE webhook_deliveries SET attempts = ${number} WHERE id = ${delivery.id}::bigint`)
      const sentAt = yield* clockNow
      const timestamp = Math.floor(sentAt.getTime() / 1000)
      const headers = {
        "content-type": "application/json",
        "user-agent": "Steady-Webhooks/1.0",
        "x-service-event": delivery.event,
        "x-service-signature": serviceSignature(hook.secret, delivery.body),
        "x-service-delivery": delivery.delivery_id,
        "webhook-id": delivery.delivery_id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": standardSignature(hook.secret, delivery.delivery_id, timestamp, delivery.body)
      }
      const [elapsed, result] = yield* Effect.timed(sender.post(hook.url, headers, delivery.body))
      yield* log(delivery, number, result, Math.round(Duration.toMillis(elapsed)))
      const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300
      if (ok) return "delivered" as const
      // An address the guard refuses will be refused again: no point retrying.
      if (result.error?.startsWith("blocked") === true) return "failed" as const
      return yield* Effect.fail(new AttemptFailed())
    }).pipe(Effect.withSpan("WebhookDispatcher.attempt", {
      attributes: { "webhook.id": delivery.webhook_id, "webhook.event": delivery.event, "webhook.attempt": number }
    }))

  const log = (delivery: Claimed, number: number, result: AttemptResult, durationMs: number) =>
    Effect.flatMap(clockNow, (now) =>
      sql`INSERT INTO webhook_attempts (webhook_id, delivery_id, event, payload, status_code, error, attempt, success, duration_ms, created_at)
        VALUES (${delivery.webhook_id}, ${delivery.delivery_id}, ${delivery.event}, ${delivery.body}::jsonb,
                ${result.statusCode}, ${result.error}, ${number},
                ${result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300},
                ${durationMs}, ${now.toISOString()}::timestamptz)`).pipe(Effect.orDie)

  /** Runs the remaining attempts of a delivery under the retry schedule. */
  const deliver = (delivery: Claimed) =>
    Effect.gen(function*() {
      if (delivery.attempts >= WEBHOOK_MAX_ATTEMPTS) return yield* finish(delivery, "failed")
      let number = delivery.attempts
      // Taken over from a crashed instance: only the attempts not made yet, with their delays.
      const delays = WEBHOOK_RETRY_DELAYS.slice(delivery.attempts)
      const policy: Schedule.Schedule<unknown> = delivery.attempts === 0
        ? webhookRetrySchedule
        : delays[0] === undefined
        ? Schedule.stop
        : Schedule.fromDelays(delays[0], ...delays.slice(1))
      const outcome = yield* Effect.retry(Effect.suspend(() => attempt(delivery, ++number)), policy).pipe(
        Effect.catchTag("AttemptFailed", () => Effect.succeed("failed" as const))
      )
      yield* finish(delivery, outcome)
    }).pipe(
      Effect.catchAllCause((cause) => logFailure(`Webhook delivery ${delivery.delivery_id} failed`, cause)),
      Effect.withSpan("WebhookDispatcher.deliver")
    )

  return { claim, deliver } as const
})

/** Claims due deliveries (SKIP LOCKED, so several instances share the work) and sends them. */
export const WebhookDispatcherLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (!config.webhookDispatch) return yield* markDisabled("webhook_dispatcher")
    const wakeup = yield* WebhookWakeup
    const dispatcher = yield* makeDispatcher
    const inFlight = yield* FiberSet.make()
    // Slots in use. A delivery that ends frees its slot and then wakes the loop, so the next
    // due delivery is claimed at once, not at the next poll (which capped a backlog at
    // MAX_IN_FLIGHT deliveries per WEBHOOK_POLL when nothing else woke the loop).
    const busy = yield* Ref.make(0)
    const release = Effect.zipRight(Ref.update(busy, (n) => n - 1), wakeup.wake)
    const loop = Effect.gen(function*() {
      const free = MAX_IN_FLIGHT - (yield* Ref.get(busy))
      if (free > 0) {
        const claimed = yield* dispatcher.claim(free)
        for (const delivery of claimed) {
          yield* Ref.update(busy, (n) => n + 1)
          yield* FiberSet.run(inFlight, Effect.ensuring(dispatcher.deliver(delivery), release))
        }
        if (claimed.length === free) return
      }
      yield* wakeup.wait(WEBHOOK_POLL)
    }).pipe(Effect.catchAllCause((cause) => Effect.zipRight(logFailure("Webhook dispatcher failed", cause), Effect.sleep(WEBHOOK_POLL))))
    yield* forkWatched("webhook_dispatcher")(Effect.forever(loop))
  })
)
