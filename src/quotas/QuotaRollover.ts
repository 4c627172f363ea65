import { Effect, Layer, Schedule } from "effect"
import { forkWatched } from "../system/Liveness.js"
import { Quotas } from "./Quotas.js"
import { logFailure } from "../sql/DatabaseFailures.js"

/** Spec §8: quota period ends are checked every 5 minutes (and once at start-up). */
export const quotaRolloverSchedule = Schedule.spaced("5 minutes")

export const QuotaRolloverLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const quotas = yield* Quotas
    const sweep = quotas.sweep().pipe(
      Effect.tap((closed) => closed > 0 ? Effect.logInfo(`Closed ${closed} quota period(s)`) : Effect.void),
      Effect.catchAllCause((cause) => logFailure("Quota rollover failed", cause)),
      Effect.withSpan("Scheduler.quotaRollover")
    )
    yield* forkWatched("quota_rollover")(Effect.repeat(sweep, quotaRolloverSchedule))
  })
)
