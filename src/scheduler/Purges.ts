import { Effect, Layer, Schedule } from "effect"
import * as SqlClient from "@effect/sql/SqlClient"
import { forkWatched } from "../services/Liveness.js"
import { CHANGE_RETENTION_DAYS, ChangeFeed } from "../services/ChangeFeed.js"
import { Idempotency } from "../services/Idempotency.js"
import { now as clockNow } from "../services/ServiceClock.js"
import { UndoService } from "../services/UndoService.js"
import { logFailure } from "../services/DatabaseFailures.js"

export const WEBHOOK_LOG_RETENTION_DAYS = 7

/** Retention sweeps run hourly; each is cheap when there is nothing to drop. */
export const purgeSchedule = Schedule.spaced("1 hour")

/** Spec §6: delivery logs are kept for 7 days; finished outbox rows go with them. */
export const purgeWebhookLogs = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const cutoff = new Date((yield* clockNow).getTime() - WEBHOOK_LOG_RETENTION_DAYS * 86_400_000).toISOString()
  yield* sql`DELETE FROM webhook_attempts WHERE created_at < ${cutoff}::timestamptz`
  yield* sql`DELETE FROM webhook_deliveries WHERE status <> 'pending' AND finished_at < ${cutoff}::timestamptz`
})

export const PurgesLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const undo = yield* UndoService
    const purge = undo.purge.pipe(
      Effect.tap((n) => n > 0 ? Effect.logInfo(`Purged ${n} undo entries older than 30 days`) : Effect.void),
      Effect.catchAllCause((cause) => logFailure("Undo purge failed", cause))
    )
    const sql = yield* SqlClient.SqlClient
    const purgeDeliveries = purgeWebhookLogs.pipe(
      Effect.provideService(SqlClient.SqlClient, sql),
      Effect.catchAllCause((cause) => logFailure("Webhook log purge failed", cause))
    )
    yield* forkWatched("purges")(Effect.repeat(Effect.zipRight(purge, purgeDeliveries), purgeSchedule))
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
