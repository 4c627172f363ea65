import { Duration, Effect, FiberSet, Layer, Ref, Schedule } from "effect"
import { type AiFailure, AiGateway, type AiOff } from "./AiGateway.js"
import { AiInsights } from "./AiInsights.js"
import { AppConfig } from "../kernel/AppConfig.js"
import { Enrichment } from "./Enrichment.js"
import { type ClaimedEnrichment, EnrichmentQueue } from "./EnrichmentQueue.js"
import { forkWatched, markDisabled } from "../system/Liveness.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { purgeSchedule } from "../system/Purges.js"
import { logFailure } from "../sql/DatabaseFailures.js"

/** Requests enriched at once by one instance. */
const BATCH = 4

/**
 * The retry policy. The waits between attempts are stored as `next_attempt_at` (a restart
 * must not forget them), so the policy is read step by step rather than run in memory:
 * after the n-th failed attempt the wait is the schedule's n-th delay, and a schedule that
 * has no n-th delay left means the request has failed.
 */
export const enrichmentRetrySchedule = (delays: ReadonlyArray<Duration.Duration>) =>
  delays.length === 0 ? Schedule.as(Schedule.stop, Duration.zero) : Schedule.fromDelays(delays[0]!, ...delays.slice(1))

export const retryDelayAfter = (delays: ReadonlyArray<Duration.Duration>, attemptsMade: number) =>
  Effect.map(
    Schedule.run(enrichmentRetrySchedule(delays), 0, Array.from({ length: attemptsMade }, () => undefined)),
    (outputs) => (attemptsMade <= delays.length ? [...outputs][attemptsMade - 1] : undefined)
  )

/**
 * Circuit breaker: after `threshold` provider failures in a row the queue pauses for the
 * cooldown instead of sending every pending request into a provider that is down; the
 * first request after the pause probes it (one more failure pauses again).
 */
export const breakerPause = (cooldown: Duration.Duration) => Schedule.intersect(Schedule.spaced(cooldown), Schedule.recurs(1))

export const EnrichmentWorkerLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* AppConfig
    const gateway = yield* AiGateway
    const insights = yield* AiInsights
    const maintenance = Effect.all([
      gateway.purgeActivity,
      insights.failStale
    ]).pipe(Effect.catchAllCause((cause) => logFailure("AI maintenance failed", cause)))
    yield* forkWatched("ai_maintenance")(Effect.repeat(maintenance, purgeSchedule))

    const queue = yield* EnrichmentQueue
    if (!queue.enabled) return yield* markDisabled("enrichment")
    const enrichment = yield* Enrichment
    const tuning = config.aiTuning
    const failuresInARow = yield* Ref.make(0)
    const inFlight = yield* FiberSet.make()
    const slotsUsed = yield* Ref.make(0)
    // A finished request frees its slot and wakes the loop, so the next one starts at once.
    const release = Effect.zipRight(Ref.update(slotsUsed, (n) => n - 1), queue.wake)

    const failed = Effect.fnUntraced(function*(claimed: ClaimedEnrichment, error: AiFailure | AiOff) {
      const reason = error._tag === "AiFailure" ? error.reason : error.message
      yield* Ref.update(failuresInARow, (n) => n + 1)
      const now = yield* clockNow
      const delay = yield* retryDelayAfter(tuning.enrichmentRetryDelays, claimed.attempts + 1)
      if (delay === undefined) yield* queue.finish(claimed, "failed", reason, now)
      else yield* queue.retryLater(claimed, delay, reason, now)
    })

    const handle = (claimed: ClaimedEnrichment) =>
      enrichment.run(claimed).pipe(
        Effect.zipRight(Ref.set(failuresInARow, 0)),
        Effect.catchTags({ AiFailure: (e) => failed(claimed, e), AiOff: (e) => failed(claimed, e) }),
        Effect.catchAllCause((cause) => logFailure(`Enrichment of task ${claimed.task_id} failed`, cause)),
        Effect.onInterrupt(() => queue.release(claimed))
      )

    const loop = Effect.gen(function*() {
      if ((yield* Ref.get(failuresInARow)) >= tuning.breakerThreshold) {
        yield* Effect.logWarning(`AI provider failed ${tuning.breakerThreshold} times in a row; enrichment paused for ${Duration.format(tuning.breakerCooldown)}`)
        yield* Effect.repeat(Effect.void, breakerPause(tuning.breakerCooldown))
        yield* Ref.set(failuresInARow, tuning.breakerThreshold - 1)
      }
      // Enrichment is background work: while creates stream in it runs one request at a time,
      // one per pace, and leaves the CPU and the database to them (on the embedded database,
      // with its single connection, each enrichment would otherwise hold up the creates); it
      // catches up when the burst ends. A slow answer holds its own slot only.
      const busy = yield* queue.busy(tuning.enrichmentBusyWindow)
      const free = (busy ? 1 : BATCH) - (yield* Ref.get(slotsUsed))
      if (free > 0) {
        const claimed = yield* queue.claim(free, yield* clockNow)
        for (const request of claimed) {
          yield* Ref.update(slotsUsed, (n) => n + 1)
          yield* FiberSet.run(inFlight, Effect.ensuring(handle(request), release))
        }
        if (busy && claimed.length > 0) return yield* Effect.sleep(tuning.enrichmentBusyPace)
        if (claimed.length === free) return
      }
      yield* queue.wait(tuning.enrichmentPoll)
    }).pipe(Effect.catchAllCause((cause) =>
      Effect.zipRight(logFailure("Enrichment worker failed", cause), Effect.sleep(tuning.enrichmentPoll))
    ))
    yield* forkWatched("enrichment")(Effect.forever(loop))
  })
)
