import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Duration, Effect, Layer, Option, Redacted, Runtime, Schedule } from "effect"
import Pg from "pg"
import { AppConfig } from "../kernel/AppConfig.js"
import { lockDataDir } from "./DataDirLock.js"
import { makePgliteClient } from "./PgliteClient.js"
import { DEFAULT_EMBEDDED_MEMORY, type EmbeddedMemory } from "./PgliteWorker.js"
import { makeGuardedPool, OutageTracker } from "./PgGuard.js"
import { withLeanStatements } from "./LeanStatements.js"
import { registerPool } from "./PoolStats.js"

/** How long a request may wait for a connection (a free slot, or a new connection). */
export const ACQUIRE_TIMEOUT = Duration.seconds(3)

/** A database that is still starting (container boot, server restart) gets about a minute. */
export const databaseStartupRetry = Schedule.exponential("200 millis", 2).pipe(
  Schedule.union(Schedule.spaced("5 seconds")),
  Schedule.upTo("60 seconds")
)

export interface PgServerOptions {
  readonly poolSize: number
  /** The most a statement may take: the client gives up on the connection at this bound. */
  readonly statementTimeout: Duration.Duration
}

export const DEFAULT_PG_SERVER_OPTIONS: PgServerOptions = { poolSize: 10, statementTimeout: Duration.seconds(5) }

/**
 * The server cancels a slow statement a little before the client-side bound, so a server
 * that answers keeps its connection; only a silent one reaches the client's timer.
 */
export const serverStatementTimeoutMs = (bound: Duration.Duration) => {
  const ms = Math.round(Duration.toMillis(bound))
  return Math.max(1, ms - Math.min(500, Math.round(ms / 10)))
}

const makePool = Effect.fnUntraced(function*(url: string, options: PgServerOptions) {
  const runtime = yield* Effect.runtime<never>()
  const log = (effect: Effect.Effect<void>) => Runtime.runFork(runtime)(effect)
  const tracker = new OutageTracker({
    down: (reason) =>
      log(Effect.logWarning(`PostgreSQL is unreachable (${reason}); requests answer 503 until it is back`)),
    up: (ms) => log(Effect.logInfo(`PostgreSQL is reachable again after ${(ms / 1000).toFixed(1)} s`))
  })
  return yield* Effect.acquireRelease(
    Effect.sync(() => {
      const pool = makeGuardedPool({
        url,
        max: options.poolSize,
        acquireTimeoutMs: Duration.toMillis(ACQUIRE_TIMEOUT),
        queryBoundMs: Math.round(Duration.toMillis(options.statementTimeout)),
        statementTimeoutMs: serverStatementTimeoutMs(options.statementTimeout),
        tracker
      })
      pool.on("error", () => {})
      return pool
    }),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.timeoutOption("2 seconds"))
  )
})

const waitForServer = (pool: Pg.Pool) =>
  Effect.tryPromise({
    try: () => pool.query("SELECT 1"),
    catch: (cause) => new SqlError({ cause, message: `PostgreSQL is not answering: ${String((cause as Error)?.message ?? cause)}` })
  }).pipe(
    Effect.tapError((error) => Effect.logWarning(`${error.message}; retrying`)),
    Effect.retry(databaseStartupRetry)
  )

/**
 * The `SqlClient` over a PostgreSQL server: connection acquire and every query bounded on
 * the client side, a server outage logged once when it starts and once when it ends.
 */
export const layerPgServer = (
  url: string,
  options: PgServerOptions = DEFAULT_PG_SERVER_OPTIONS
): Layer.Layer<SqlClient.SqlClient, SqlError> =>
  Layer.scoped(
    SqlClient.SqlClient,
    Effect.gen(function*() {
      const pool = yield* makePool(url, options)
      yield* waitForServer(pool)
      const client = withLeanStatements(yield* PgClient.fromPool({ acquire: Effect.succeed(pool), applicationName: "steady" }))
      registerPool(client, pool)
      return client
    })
  ).pipe(Layer.provide(Reactivity.layer))

/** The embedded database under `dir`, holding the directory's lock file while open. */
export const layerEmbedded = (dir: string, memory: EmbeddedMemory = DEFAULT_EMBEDDED_MEMORY) =>
  Layer.scoped(
    SqlClient.SqlClient,
    Effect.zipRight(lockDataDir(dir), Effect.map(makePgliteClient(dir, undefined, memory), withLeanStatements))
  ).pipe(Layer.provide(Reactivity.layer))

/** `DATABASE_URL` set: the server; unset: the embedded database under `DATA_DIR`. */
export const DatabaseLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    Option.match(config.databaseUrl, {
      onNone: () => layerEmbedded(config.dataDir, { sharedBuffers: config.embeddedSharedBuffers }),
      onSome: (url) =>
        layerPgServer(Redacted.value(url), { poolSize: config.databasePoolSize, statementTimeout: config.databaseStatementTimeout })
    })
  )
)
