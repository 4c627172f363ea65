import { Layer } from "effect"
import { HttpServerLive, NodeServerLive } from "./http/HttpLive.js"
import { AppConfig } from "./kernel/AppConfig.js"
import { DatabaseLive } from "./sql/Database.js"
import { LocalControlLive } from "./accounts/LocalControl.js"
import { SchedulerLive } from "./system/SchedulerLive.js"
import { MigrationsLive } from "./sql/Migrations.js"
import { ServiceClockLive } from "./kernel/ServiceClock.js"
import { ServicesLive } from "./system/ServicesLive.js"
import { TracingLive } from "./kernel/Tracing.js"

/** The database chosen by the configuration, migrated before anything uses it. */
export const MigratedDatabaseLive = MigrationsLive.pipe(Layer.provideMerge(DatabaseLive))

/**
 * The whole service for a given configuration layer: database, migrations, services,
 * HTTP server. Tests build it with their own configuration.
 */
export const makeServiceLayer = <E>(config: Layer.Layer<AppConfig, E>) =>
  Layer.mergeAll(HttpServerLive, SchedulerLive, LocalControlLive).pipe(
    Layer.provideMerge(ServicesLive),
    Layer.provideMerge(NodeServerLive),
    Layer.provideMerge(MigratedDatabaseLive),
    Layer.provideMerge(ServiceClockLive),
    // First, so the tracer (or its absence) holds for everything built after it.
    Layer.provideMerge(TracingLive),
    Layer.provideMerge(config)
  )

export const ServiceLive = makeServiceLayer(AppConfig.Live)
