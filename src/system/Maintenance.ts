import { type Duration, Effect, Layer, Schedule } from "effect"
import { AppConfig } from "../kernel/AppConfig.js"
import { logFailure } from "../sql/DatabaseFailures.js"
import { DatabaseMaintenance, WAL_CHECKPOINT_BYTES } from "./DatabaseMaintenance.js"

/** The first pass at start (after migrations), then one per poll interval. */
export const maintenanceSchedule = (poll: Duration.Duration) => Schedule.spaced(poll)

/**
 * Looks after the embedded database, which has no autovacuum: a first pass right after
 * migrations (new or never-analyzed tables), then one whenever a writer asks (bulk actions,
 * imports) or the poll comes round, each pass vacuuming and analyzing only the tables whose
 * changed or dead rows crossed the threshold, then a checkpoint once enough write-ahead log
 * piled up since the last one. On a PostgreSQL server autovacuum does this;
 * we only warn, once, when it is off.
 */
export const MaintenanceLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const maintenance = yield* DatabaseMaintenance
    const { maintenance: tuning } = yield* AppConfig
    if (!maintenance.embedded) {
      // Forked: a slow server must not hold up start-up for a warning.
      yield* Effect.forkScoped(maintenance.autovacuumOn.pipe(
        Effect.flatMap((on) =>
          on ? Effect.void : Effect.logWarning(
            "autovacuum is off on this PostgreSQL server: tables are never analyzed, so list plans rest on guesses; turn it on or run ANALYZE regularly"
          )
        ),
        Effect.catchAllCause(() => Effect.void)
      ))
      return
    }
    if (!tuning.enabled) return
    // The poll and the writers' requests both start passes; one runs at a time.
    const lock = yield* Effect.makeSemaphore(1)
    const pass = maintenance.maintain(tuning).pipe(
      Effect.tap((tables) => tables.length > 0 ? Effect.logDebug(`VACUUM (ANALYZE): ${tables.join(", ")}`) : Effect.void),
      // After vacuuming, whose writes count too: the write-ahead log stays bounded.
      Effect.zipLeft(maintenance.checkpointIfDue(WAL_CHECKPOINT_BYTES)),
      Effect.catchAllCause((cause) => logFailure("Database maintenance failed", cause)),
      lock.withPermits(1)
    )
    yield* Effect.forkScoped(Effect.repeat(pass, maintenanceSchedule(tuning.poll)))
    yield* Effect.forkScoped(Effect.forever(Effect.zipRight(maintenance.nextRequest, pass)))
  })
).pipe(Layer.provide(DatabaseMaintenance.Default))
