import { Effect, Layer, Schedule } from "effect"
import { UndoService } from "../services/UndoService.js"

/** Retention sweeps run hourly; each is cheap when there is nothing to drop. */
export const purgeSchedule = Schedule.spaced("1 hour")

export const PurgesLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const undo = yield* UndoService
    const purge = undo.purge.pipe(
      Effect.tap((n) => n > 0 ? Effect.logInfo(`Purged ${n} undo entries older than 30 days`) : Effect.void),
      Effect.catchAllCause((cause) => Effect.logError("Undo purge failed", cause))
    )
    yield* Effect.forkScoped(Effect.repeat(purge, purgeSchedule))
  })
)
