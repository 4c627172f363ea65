import { type Duration, Effect, Layer, Ref, Schedule } from "effect"
import { AppConfig } from "../services/AppConfig.js"
import * as SqlClient from "@effect/sql/SqlClient"
import { forkWatched } from "../services/Liveness.js"
import { CHANGE_RETENTION_DAYS, ChangeFeed } from "../services/ChangeFeed.js"
import { Idempotency } from "../services/Idempotency.js"
import { now as clockNow } from "../services/ServiceClock.js"
import { UNDO_DEPTH, UndoService } from "../services/UndoService.js"
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

/**
 * The write-heavy logs (the outbox, the undo log) are compacted every `compactionInterval`
 * (a minute): hourly, a busy hour's rows would pile up before the first one went.
 */
export const compactionSchedule = (every: Duration.Duration) => Schedule.spaced(every)

/** Rows one purging statement deletes at most, so it never holds the connection for long. */
const OUTBOX_BATCH = 1000

/** The newest outbox event's id now (0 when there is none): the next purge's upper bound. */
export const outboxMark = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ id: string | number | null }>`SELECT max(id) AS id FROM outbox_events`
  return Number(row?.id ?? 0)
})

/**
 * Drops outbox events up to `upToId` whose deliveries are all gone, i.e. finished and past the
 * delivery log's retention (purgeWebhookLogs removes those), or that never had any (no active
 * webhook wanted them). Nothing serves these rows: the delivery log shows attempts, which carry
 * their own payload, and the change feed and history have tables of their own. Deliveries are
 * written in the event's transaction with its user, name and instant, which is how one is
 * matched to its event. `upToId` is the mark taken one schedule period earlier, so every event
 * stays at least that long. Returns how many went.
 */
export const purgeOutboxEvents = (upToId: number) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    let purged = 0
    for (;;) {
      const rows = yield* sql<{ id: string }>`
        DELETE FROM outbox_events WHERE id IN (
          SELECT o.id FROM outbox_events o
          WHERE o.id <= ${upToId} AND NOT EXISTS (
            SELECT 1 FROM webhook_deliveries d
            WHERE d.user_id = o.user_id AND d.created_at = o.occurred_at AND d.event = o.event)
          ORDER BY o.id LIMIT ${OUTBOX_BATCH})
        RETURNING id`
      purged += rows.length
      if (rows.length < OUTBOX_BATCH) return purged
    }
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

    // Each pass purges outbox events up to the mark the previous pass took, and trims the undo
    // log of the users who wrote since the previous pass.
    const config = yield* AppConfig
    const outboxUpTo = yield* Ref.make(0)
    const undoSeen = yield* Ref.make(0)
    const purgeOutbox = Effect.gen(function*() {
      const n = yield* purgeOutboxEvents(yield* Ref.get(outboxUpTo))
      yield* Ref.set(outboxUpTo, yield* outboxMark)
      if (n > 0) yield* Effect.logDebug(`Purged ${n} outbox events with no delivery left`)
    }).pipe(
      Effect.provideService(SqlClient.SqlClient, sql),
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
