import { type Duration, Effect, Layer, Ref, Schedule } from "effect"
import { AppConfig } from "../kernel/AppConfig.js"
import { forkWatched } from "./Liveness.js"
import { CHANGE_RETENTION_DAYS, ChangeFeed } from "../changes/ChangeFeed.js"
import { Idempotency } from "../pipeline/Idempotency.js"
import { UNDO_DEPTH, UndoService } from "../undo/UndoService.js"
import { WebhookDeliveries } from "../webhooks/WebhookDeliveries.js"
import { logFailure } from "../sql/DatabaseFailures.js"

/** Retention sweeps run hourly; each is cheap when there is nothing to drop. */
export const purgeSchedule = Schedule.spaced("1 hour")

/**
 * The write-heavy logs (the outbox, the undo log) are compacted every `compactionInterval`
 * (a minute): hourly, a busy hour's rows would pile up before the first one went.
 */
export const compactionSchedule = (every: Duration.Duration) => Schedule.spaced(every)

export const PurgesLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const undo = yield* UndoService
    const purge = undo.purge.pipe(
      Effect.tap((n) => n > 0 ? Effect.logInfo(`Purged ${n} undo entries older than 30 days`) : Effect.void),
      Effect.catchAllCause((cause) => logFailure("Undo purge failed", cause))
    )
    // Spec §6: delivery logs are kept for 7 days; finished outbox rows go with them.
    const deliveries = yield* WebhookDeliveries
    const purgeDeliveries = deliveries.purgeLogs.pipe(
      Effect.catchAllCause((cause) => logFailure("Webhook log purge failed", cause))
    )
    yield* forkWatched("purges")(Effect.repeat(Effect.zipRight(purge, purgeDeliveries), purgeSchedule))

    // Each pass purges outbox events up to the mark the previous pass took, and trims the undo
    // log of the users who wrote since the previous pass.
    const config = yield* AppConfig
    const outboxUpTo = yield* Ref.make(0)
    const undoSeen = yield* Ref.make(0)
    const purgeOutbox = Effect.gen(function*() {
      const n = yield* deliveries.purgeOutbox(yield* Ref.get(outboxUpTo))
      yield* Ref.set(outboxUpTo, yield* deliveries.outboxMark)
      if (n > 0) yield* Effect.logDebug(`Purged ${n} outbox events with no delivery left`)
    }).pipe(
      Effect.catchAllCause((cause) => logFailure("Outbox purge failed", cause))
    )
    const trimUndo = Effect.gen(function*() {
      const { latest, trimmed } = yield* undo.trim(yield* Ref.get(undoSeen))
      yield* Ref.set(undoSeen, latest)
      if (trimmed > 0) yield* Effect.logDebug(`Trimmed ${trimmed} undo entries beyond ${UNDO_DEPTH} a user`)
    }).pipe(Effect.catchAllCause((cause) => logFailure("Undo trim failed", cause)))
    yield* Effect.forkScoped(Effect.repeat(Effect.zipRight(purgeOutbox, trimUndo), compactionSchedule(config.compactionInterval)))
    const idempotency = yield* Idempotency
    const purgeKeys = idempotency.purge.pipe(
      Effect.tap((n) => n > 0 ? Effect.logInfo(`Purged ${n} expired Idempotency-Key records`) : Effect.void),
      Effect.catchAllCause((cause) => Effect.logError("Idempotency-Key purge failed", cause))
    )
    yield* Effect.forkScoped(Effect.repeat(purgeKeys, purgeSchedule))
    const feed = yield* ChangeFeed
    const purgeChanges = feed.purge.pipe(
      Effect.tap((n) => n > 0 ? Effect.logInfo(`Purged ${n} change feed rows past ${CHANGE_RETENTION_DAYS} days or the row cap`) : Effect.void),
      Effect.catchAllCause((cause) => Effect.logError("Change feed purge failed", cause))
    )
    yield* Effect.forkScoped(Effect.repeat(purgeChanges, purgeSchedule))
  })
)
