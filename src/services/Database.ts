import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Layer, Option, Redacted, Schedule } from "effect"
import Pg from "pg"
import { AppConfig } from "./AppConfig.js"
import { lockDataDir } from "./DataDirLock.js"
import { makePgliteClient } from "./PgliteClient.js"

export const CONNECT_TIMEOUT = Duration.seconds(5)
export const STATEMENT_TIMEOUT = Duration.seconds(30)

/** A database that is still starting (container boot, server restart) gets about a minute. */
export const databaseStartupRetry = Schedule.exponential("200 millis", 2).pipe(
  Schedule.union(Schedule.spaced("5 seconds")),
  Schedule.upTo("60 seconds")
)

const makePool = (url: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const pool = new Pg.Pool({
        connectionString: url,
        max: 10,
        connectionTimeoutMillis: Duration.toMillis(CONNECT_TIMEOUT),
        idleTimeoutMillis: 30_000,
        statement_timeout: Duration.toMillis(STATEMENT_TIMEOUT),
        options: "-c TimeZone=UTC",
        application_name: "steady"
      })
      pool.on("error", () => {})
      return pool
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.timeoutOption("2 seconds"))
  )

const waitForServer = (pool: Pg.Pool) =>
  Effect.tryPromise({
    try: () => pool.query("SELECT 1"),
    catch: (cause) => new SqlError({ cause, message: `PostgreSQL is not answering: ${String((cause as Error)?.message ?? cause)}` })
  }).pipe(
    Effect.tapError((error) => Effect.logWarning(`${error.message}; retrying`)),
    Effect.retry(databaseStartupRetry)
  )

/** The `SqlClient` over a PostgreSQL server, with connect and statement timeouts. */
export const layerPgServer = (url: string): Layer.Layer<SqlClient.SqlClient, SqlError> =>
  Layer.scoped(
    SqlClient.SqlClient,
    Effect.gen(function*() {
      const pool = yield* makePool(url)
      yield* waitForServer(pool)
      return yield* PgClient.fromPool({ acquire: Effect.succeed(pool), applicationName: "steady" })
    })
  ).pipe(Layer.provide(Reactivity.layer))

/** The embedded database under `dir`, holding the directory's lock file while open. */
export const layerEmbedded = (dir: string) =>
  Layer.scoped(
    SqlClient.SqlClient,
    Effect.zipRight(lockDataDir(dir), makePgliteClient(dir))
  ).pipe(Layer.provide(Reactivity.layer))

/** `DATABASE_URL` set: the server; unset: the embedded database under `DATA_DIR`. */
export const DatabaseLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    Option.match(config.databaseUrl, {
      onNone: () => layerEmbedded(config.dataDir),
      onSome: (url) => layerPgServer(Redacted.value(url))
    })
  )
)
