import { Effect, Queue } from "effect"
import { afterCommit } from "./AfterCommit.js"

/**
 * Wakes this instance's change hub right after a transaction that wrote feed entries
 * commits (other instances hear it by NOTIFY). A sliding queue of one: wake-ups that
 * arrive while the hub reads collapse into one more read.
 */
export class ChangeWakeup extends Effect.Service<ChangeWakeup>()("steady/ChangeWakeup", {
  effect: Effect.gen(function*() {
    const queue = yield* Queue.sliding<void>(1)
    return {
      // Held until an enclosing request-wide transaction commits (see AfterCommit).
      wake: afterCommit(Queue.offer(queue, undefined).pipe(Effect.asVoid)),
      /** Waits for a wake-up or until `timeout` passes, whichever comes first. */
      wait: (timeout: number) => Queue.take(queue).pipe(Effect.timeoutOption(timeout), Effect.asVoid)
    } as const
  })
}) {}
