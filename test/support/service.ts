import { HttpServer } from "@effect/platform"
import { Chunk, Duration, Effect, Layer, Logger, LogLevel, ManagedRuntime, Option, Redacted, TestClock, TestContext, TestServices } from "effect"
import { makeServiceLayer } from "../../src/Program.js"
import { AppConfig, type AppConfigShape } from "../../src/kernel/AppConfig.js"
import { Credentials } from "../../src/accounts/Credentials.js"
import { Users } from "../../src/accounts/Users.js"
import { type ApiClient, makeApiClient, makeRawClient, type RawClient } from "./api-client.js"
import { freshDatabase, type TestDatabase } from "./database.js"

/*
 * `Client` (`user.api`) is the older fetch helper whose bodies are typed `any`; new and
 * converted tests use `user.client` (typed from the API definition) for happy paths and
 * `user.raw` (bodies typed `unknown`) for error answers and bytes (see api-client.ts).
 */

export interface Response<T = any> {
  readonly status: number
  readonly headers: Headers
  readonly body: T
  readonly text: string
}

export interface Client {
  readonly request: <T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<Response<T>>
  readonly get: <T = any>(path: string) => Promise<Response<T>>
  readonly post: <T = any>(path: string, body?: unknown) => Promise<Response<T>>
  readonly patch: <T = any>(path: string, body?: unknown) => Promise<Response<T>>
  readonly delete: <T = any>(path: string) => Promise<Response<T>>
}

export interface TestUser {
  readonly id: number
  readonly username: string
  readonly token: string
  readonly api: Client
  /** The typed client, authenticated as this user. */
  readonly client: ApiClient
  /** fetch with `unknown` bodies, authenticated as this user. */
  readonly raw: RawClient
}

export interface TestService {
  readonly baseUrl: string
  readonly database: TestDatabase
  readonly runtime: ManagedRuntime.ManagedRuntime<any, any>
  /** A client without credentials. */
  readonly anonymous: Client
  readonly client: (headers: Record<string, string>) => Client
  /** fetch with `unknown` bodies and these headers (none: anonymous). */
  readonly raw: (headers?: Record<string, string>) => RawClient
  /** Creates (or finds) a user the way the CLI does, with a fresh token. */
  readonly user: (username: string, timezone?: string) => Promise<TestUser>
  readonly run: <A, E>(effect: Effect.Effect<A, E, any>) => Promise<A>
  readonly stop: () => Promise<void>
}

/** The older client: the raw client (api-client.ts) with its bodies read as `any`. */
export const makeClient = (baseUrl: string, baseHeaders: Record<string, string> = {}): Client =>
  makeRawClient(baseUrl, baseHeaders) as Client

/** The service clock of a service started with `startServiceOnTestClock`. */
export interface ServiceTestClock {
  /** Moves the clock forward, running every sleep of the service due on the way. */
  readonly adjust: (duration: Duration.DurationInput) => Promise<void>
  /** Moves the clock to exactly `at` (forward). */
  readonly setTime: (at: Date) => Promise<void>
  readonly now: () => Promise<Date>
}

export interface ClockedTestService extends TestService {
  readonly clock: ServiceTestClock
}

/**
 * `startService` with Effect's `TestClock` as the service clock, standing at `at` from the
 * first instant (so start-up work and every timestamp read it) and moving only when the
 * test moves it. Every sleep in the service waits for the clock too: the scheduler's
 * periodic work runs when a move passes its time, never on its own. Timeouts around a
 * request or statement race work that finishes first, so requests are unaffected.
 */
export const startServiceOnTestClock = async (
  at: Date,
  overrides: Partial<AppConfigShape> = {},
  database?: TestDatabase
): Promise<ClockedTestService> => {
  const testClock = TestClock.live(TestClock.makeData(at.getTime(), Chunk.empty())).pipe(
    Layer.provide(Layer.merge(TestServices.annotationsLayer(), Layer.provide(TestServices.liveLayer(), TestContext.LiveContext))),
    Layer.discard
  )
  // TestClock logs a warning when a sleep waits 5 s without the clock moving; here the
  // scheduler's fibers always do, by design.
  const service = await startService({ ...overrides, serviceNow: Option.none() }, database, testClock, LogLevel.Error)
  return {
    ...service,
    clock: {
      adjust: (duration) => service.run(TestClock.adjust(duration)),
      setTime: (time) => service.run(TestClock.setTime(time.getTime())),
      now: () => service.run(Effect.map(TestClock.currentTimeMillis, (ms) => new Date(ms)))
    }
  }
}

/**
 * Starts the real service layer on a free port against a fresh database (PostgreSQL when
 * `TEST_DATABASE_URL`/`DATABASE_URL` is set, else embedded) and talks HTTP to it.
 */
export const startService = async (
  overrides: Partial<AppConfigShape> = {},
  database?: TestDatabase,
  /** Built before the service, e.g. a statement observer (support/statements.ts). */
  extra: Layer.Layer<never> = Layer.empty,
  logLevel: LogLevel.LogLevel = LogLevel.Warning
): Promise<TestService> => {
  const db = database ?? await freshDatabase()
  const config = AppConfig.layerWith({
    port: 0,
    host: "127.0.0.1",
    databaseUrl: db.url === undefined ? Option.none() : Option.some(Redacted.make(db.url)),
    dataDir: db.dataDir,
    healthTimeout: Duration.millis(500),
    // Seeding statements (10,000 rows at once) on a loaded machine may pass the production
    // 5 s bound; db-outage.test.ts runs with the production bound.
    databaseStatementTimeout: Duration.seconds(30),
    // Outbox events and undo entries stay put while a test compares snapshots of them;
    // retention.test.ts runs the purges itself.
    compactionInterval: Duration.hours(1),
    // The tests' webhook receivers listen on 127.0.0.1, which the production default refuses;
    // a test of that default passes the default value in `overrides`.
    webhookAllowPrivate: true,
    ...overrides
  })
  const runtime = ManagedRuntime.make(
    makeServiceLayer(config).pipe(
      Layer.orDie,
      Layer.provide(Layer.merge(Logger.minimumLogLevel(logLevel), extra))
    )
  )
  const address = await runtime.runPromise(Effect.map(HttpServer.HttpServer, (server) => server.address))
  if (address._tag !== "TcpAddress") throw new Error("expected a TCP address")
  const baseUrl = `http://127.0.0.1:${address.port}`
  const run = <A, E>(effect: Effect.Effect<A, E, any>) => runtime.runPromise(effect)
  const user = async (username: string, timezone = "UTC"): Promise<TestUser> => {
    const created = await run(Effect.gen(function*() {
      const users = yield* Users
      const credentials = yield* Credentials
      const u = yield* users.findOrCreate(username, timezone)
      const token = yield* credentials.createToken(u.id, "test")
      return { id: u.id as number, username: u.username, token: token.token }
    }))
    return {
      ...created,
      api: makeClient(baseUrl, { authorization: `Bearer ${created.token}` }),
      client: makeApiClient(baseUrl, created.token),
      raw: makeRawClient(baseUrl, { authorization: `Bearer ${created.token}` })
    }
  }
  return {
    baseUrl,
    database: db,
    runtime,
    anonymous: makeClient(baseUrl),
    client: (headers) => makeClient(baseUrl, headers),
    raw: (headers = {}) => makeRawClient(baseUrl, headers),
    user,
    run,
    stop: async () => {
      await runtime.dispose()
      if (database === undefined) await db.drop()
    }
  }
}
