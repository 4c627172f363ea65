import { Layer } from "effect"
import { HttpServerLive, NodeServerLive } from "./http/HttpLive.js"
import { AppConfig } from "./services/AppConfig.js"
import { DatabaseLive } from "./services/Database.js"
import { LocalControlLive } from "./services/LocalControl.js"
import { SchedulerLive } from "./scheduler/SchedulerLive.js"
import { MigrationsLive } from "./services/Migrations.js"
import { ServiceClockLive } from "./services/ServiceClock.js"
import { ServicesLive } from "./services/ServicesLive.js"
import { TracingLive } from "./services/Tracing.js"

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
