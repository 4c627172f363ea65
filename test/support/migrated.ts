import { Effect, Layer, Option, Redacted } from "effect"
import { MigratedDatabaseLive } from "../../src/Program.js"
import { AppConfig } from "../../src/kernel/AppConfig.js"
import { freshDatabase, type TestDatabase } from "./database.js"

/** The service's configuration for a test database. */
export const configFor = (db: TestDatabase) =>
  AppConfig.layerWith({
    databaseUrl: db.url === undefined ? Option.none() : Option.some(Redacted.make(db.url)),
    dataDir: db.dataDir,
    serviceNow: Option.none()
  })

/**
 * A fresh database (PostgreSQL when one is configured, else embedded), migrated as the service
 * migrates it, with its SqlClient; dropped with the layer. For suites that need SQL, not HTTP.
 */
export const migratedDatabase = Layer.unwrapScoped(
  Effect.map(
    Effect.acquireRelease(Effect.promise(() => freshDatabase()), (db) => Effect.promise(() => db.drop())),
    (db) => MigratedDatabaseLive.pipe(Layer.provideMerge(configFor(db)))
  )
)
