import { Duration, Effect, Queue } from "effect"
import { afterCommit } from "../pipeline/AfterCommit.js"

/**
 * Wakes the webhook dispatcher right after a transaction that wrote deliveries commits,
 * so a delivery does not wait for the next poll. A sliding queue of one: many wake-ups
 * before the dispatcher looks collapse into one.
 */
export class WebhookWakeup extends Effect.Service<WebhookWakeup>()("steady/WebhookWakeup", {
  effect: Effect.gen(function*() {
    const queue = yield* Queue.sliding<void>(1)
    return {
      // Held until an enclosing request-wide transaction commits (see AfterCommit).
      wake: afterCommit(Queue.offer(queue, undefined).pipe(Effect.asVoid)),
      /** Waits for a wake-up or until `timeout` passes, whichever comes first. */
      wait: (timeout: Duration.DurationInput) => Queue.take(queue).pipe(Effect.timeoutOption(timeout), Effect.asVoid)
    } as const
  })
}) {}
