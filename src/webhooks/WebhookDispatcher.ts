import { Duration, Effect, FiberSet, Layer, Ref, Schedule } from "effect"
import { AppConfig } from "../kernel/AppConfig.js"
import { forkWatched, markDisabled } from "../system/Liveness.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { type ClaimedDelivery, WebhookDeliveries } from "./WebhookDeliveries.js"
import { serviceSignature, standardSignature, WebhookSender } from "./WebhookSender.js"
import { WebhookWakeup } from "./WebhookWakeup.js"
import { logFailure } from "../sql/DatabaseFailures.js"

/** Spec §6: up to 3 attempts, waiting 1 s and then 5 s between them. */
export const WEBHOOK_RETRY_DELAYS = [Duration.seconds(1), Duration.seconds(5)] as const
export const webhookRetrySchedule = Schedule.fromDelays(...WEBHOOK_RETRY_DELAYS)
export const WEBHOOK_MAX_ATTEMPTS = WEBHOOK_RETRY_DELAYS.length + 1

/** The dispatcher also polls, for deliveries written by other instances and for retries after a crash. */
export const WEBHOOK_POLL = Duration.seconds(1)
const MAX_IN_FLIGHT = 16

class AttemptFailed {
  readonly _tag = "AttemptFailed"
}

export const makeDispatcher = Effect.gen(function*() {
  const deliveries = yield* WebhookDeliveries
  const sender = yield* WebhookSender

  /** One attempt: re-reads the webhook (deleted or deactivated stops it), sends, logs. */
  const attempt = (delivery: ClaimedDelivery, number: number) =>
    Effect.gen(function*() {
      const hook = yield* deliveries.target(delivery)
      if (hook === undefined || !hook.active) return "cancelled" as const
      yield* deliveries.countAttempt(delivery, number)
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
      yield* deliveries.logAttempt(delivery, number, result, Math.round(Duration.toMillis(elapsed)))
      const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300
      if (ok) return "delivered" as const
      // An address the guard refuses will be refused again: no point retrying.
      if (result.error?.startsWith("blocked") === true) return "failed" as const
      return yield* Effect.fail(new AttemptFailed())
    }).pipe(Effect.withSpan("WebhookDispatcher.attempt", {
      attributes: { "webhook.id": delivery.webhook_id, "webhook.event": delivery.event, "webhook.attempt": number }
    }))

  /** Runs the remaining attempts of a delivery under the retry schedule. */
  const deliver = (delivery: ClaimedDelivery) =>
    Effect.gen(function*() {
      if (delivery.attempts >= WEBHOOK_MAX_ATTEMPTS) return yield* deliveries.finish(delivery, "failed")
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
      yield* deliveries.finish(delivery, outcome)
    }).pipe(
      Effect.catchAllCause((cause) => logFailure(`Webhook delivery ${delivery.delivery_id} failed`, cause)),
      Effect.withSpan("WebhookDispatcher.deliver")
    )

  return { claim: deliveries.claim, deliver } as const
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
