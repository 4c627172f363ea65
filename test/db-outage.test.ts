import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { Cause, ConfigProvider, Duration, Effect, Either, Layer, Logger, ManagedRuntime, Option, Redacted } from "effect"
import * as Net from "node:net"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { errorResponse } from "../src/http/ErrorResponses.js"
import { appConfig, formatConfigError } from "../src/kernel/AppConfig.js"
import { databaseUnavailable } from "../src/sql/DatabaseFailures.js"
import { layerPgServer, serverStatementTimeoutMs } from "../src/sql/Database.js"
import { makeGuardedPool, OutageTracker, QueryTimedOut, withoutQueryBound } from "../src/sql/PgGuard.js"
import { poolStatsOf } from "../src/sql/PoolStats.js"
import { freshDatabase, serverUrl, type TestDatabase } from "./support/database.js"
import { startService, type TestService, type TestUser } from "./support/service.js"

/**
 * PostgreSQL unreachable (connections refused) or frozen (traffic blackholed): every API
 * route answers 503 SERVICE_UNAVAILABLE with Retry-After within a bound, nothing is
 * written, the outage is logged once, and the service answers again once the server does.
 */

/**
 * A TCP relay on 127.0.0.1 in front of PostgreSQL. `cut()` stops listening and drops every
 * relayed connection (refused); `blackhole()` keeps every connection open, new or old, and
 * forwards nothing (a frozen host); `restore()` relays again, resuming frozen connections.
 */
class FaultProxy {
  private server: Net.Server | undefined
  private readonly pairs = new Set<{ client: Net.Socket; upstream: Net.Socket | undefined }>()
  private frozen = false
  port = 0

  constructor(private readonly targetHost: string, private readonly targetPort: number) {}

  private relay(pair: { client: Net.Socket; upstream: Net.Socket | undefined }) {
    const upstream = Net.connect(this.targetPort, this.targetHost)
    pair.upstream = upstream
    upstream.on("error", () => pair.client.destroy())
    upstream.on("close", () => pair.client.destroy())
    pair.client.pipe(upstream)
    upstream.pipe(pair.client)
  }

  open(): Promise<void> {
    const server = Net.createServer((client) => {
      const pair = { client, upstream: undefined as Net.Socket | undefined }
      this.pairs.add(pair)
      client.on("error", () => pair.upstream?.destroy())
      client.on("close", () => {
        pair.upstream?.destroy()
        this.pairs.delete(pair)
      })
      if (this.frozen) client.pause()
      else this.relay(pair)
    })
    this.server = server
    return new Promise((resolve, reject) => {
      server.once("error", reject)
      server.listen(this.port, "127.0.0.1", () => {
        this.port = (server.address() as Net.AddressInfo).port
        resolve()
      })
    })
  }

  cut(): Promise<void> {
    const server = this.server
    this.server = undefined
    for (const { client, upstream } of this.pairs) {
      client.destroy()
      upstream?.destroy()
    }
    this.pairs.clear()
    return new Promise((resolve) => (server === undefined ? resolve() : server.close(() => resolve())))
  }

  blackhole() {
    this.frozen = true
    for (const { client, upstream } of this.pairs) {
      client.unpipe()
      upstream?.unpipe()
      client.pause()
      upstream?.pause()
    }
  }

  async restore(): Promise<void> {
    this.frozen = false
    for (const pair of this.pairs) {
      if (pair.client.destroyed) continue
      if (pair.upstream === undefined) this.relay(pair)
      else {
        pair.client.pipe(pair.upstream)
        pair.upstream.pipe(pair.client)
      }
      pair.client.resume()
    }
    if (this.server === undefined) await this.open()
  }
}

const UNAVAILABLE = { error: expect.any(String), code: "SERVICE_UNAVAILABLE", details: {} }
const OUTAGE_LINE = "PostgreSQL is unreachable"

const timed = async <T>(run: () => Promise<T>) => {
  const started = Date.now()
  const result = await run()
  return { result, ms: Date.now() - started }
}

describe("configuration of the database pool", () => {
  const load = (vars: Record<string, string>) =>
    Effect.runSync(Effect.either(Effect.withConfigProvider(appConfig, ConfigProvider.fromMap(new Map(Object.entries(vars))))))

  it("defaults to 10 connections and a 5 s statement bound", () => {
    const result = load({})
    expect(Either.isRight(result)).toBe(true)
    if (Either.isLeft(result)) return
    expect(result.right.databasePoolSize).toBe(10)
    expect(Duration.toMillis(result.right.databaseStatementTimeout)).toBe(5000)
  })

  it("reads DATABASE_POOL_SIZE and DATABASE_STATEMENT_TIMEOUT_MS", () => {
    const result = load({ DATABASE_POOL_SIZE: " 25 ", DATABASE_STATEMENT_TIMEOUT_MS: "12000" })
    expect(Either.isRight(result)).toBe(true)
    if (Either.isLeft(result)) return
    expect(result.right.databasePoolSize).toBe(25)
    expect(Duration.toMillis(result.right.databaseStatementTimeout)).toBe(12000)
  })

  it.each([
    ["DATABASE_POOL_SIZE", "0"],
    ["DATABASE_POOL_SIZE", "1001"],
    ["DATABASE_POOL_SIZE", "ten"],
    ["DATABASE_POOL_SIZE", "2.5"],
    ["DATABASE_STATEMENT_TIMEOUT_MS", "50"],
    ["DATABASE_STATEMENT_TIMEOUT_MS", "5s"],
    ["DATABASE_STATEMENT_TIMEOUT_MS", "-1"],
    ["DATABASE_STATEMENT_TIMEOUT_MS", "3600001"]
  ])("%s=%s stops start-up with one line naming it", (name, value) => {
    const result = load({ [name]: value })
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isRight(result)) return
    const lines = formatConfigError(result.left)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toBe(`${name}: "${value}" is not a whole number from ${name === "DATABASE_POOL_SIZE" ? "1 to 1000" : "100 to 3600000"}`)
  })

  it("the server cancels a statement shortly before the client gives up on it", () => {
    expect(serverStatementTimeoutMs(Duration.seconds(5))).toBe(4500)
    expect(serverStatementTimeoutMs(Duration.seconds(60))).toBe(59_500)
    expect(serverStatementTimeoutMs(Duration.millis(1000))).toBe(900)
    expect(serverStatementTimeoutMs(Duration.millis(100))).toBe(90)
  })
})

describe("PostgreSQL outages", () => {
  const base = serverUrl()
  let service: TestService
  let proxy: FaultProxy
  let database: TestDatabase
  let olga: TestUser
  const lines: Array<string> = []
  let spy: ReturnType<typeof vi.spyOn> | undefined

  beforeAll(async () => {
    if (base === undefined) return
    database = await freshDatabase()
    const target = new URL(database.url!)
    proxy = new FaultProxy(target.hostname, Number(target.port || 5432))
    await proxy.open()
    const proxied = new URL(database.url!)
    proxied.hostname = "127.0.0.1"
    proxied.port = String(proxy.port)
    spy = vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => {
      lines.push(args.map(String).join(" "))
    })
    service = await startService(
      { databaseUrl: Option.some(Redacted.make(proxied.toString())), databaseStatementTimeout: Duration.seconds(5) },
      database
    )
    olga = await service.user("olga")
  })
  afterAll(async () => {
    spy?.mockRestore()
    if (base === undefined) return
    await proxy.restore().catch(() => undefined)
    await service?.stop()
    await proxy.cut()
    await database?.drop()
  })

  const titles = async () => {
    const res = await olga.api.get("/api/tasks?limit=1000")
    expect(res.status).toBe(200)
    return (res.body.data.tasks as Array<{ title: string }>).map((t) => t.title)
  }

  const waitForList = async (withinMs: number) => {
    const deadline = Date.now() + withinMs
    let last = await olga.api.get("/api/tasks")
    while (last.status !== 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200))
      last = await olga.api.get("/api/tasks")
    }
    return last.status
  }

  const outageLines = () => lines.filter((line) => line.includes(OUTAGE_LINE))

  const expectUnavailable = (res: { status: number; body: unknown; headers: Headers }) => {
    expect(res.status).toBe(503)
    expect(res.body).toEqual(UNAVAILABLE)
    expect(res.headers.get("retry-after")).toBe("5")
  }

  it.skipIf(base === undefined)("refused connections: 503 with Retry-After on reads and writes, nothing written, one log line", async () => {
    expect((await olga.api.post("/api/tasks", { title: "before the cut" })).status).toBe(201)
    const before = await titles()
    const linesBefore = outageLines().length

    await proxy.cut()
    const answers = await Promise.all([
      ...Array.from({ length: 4 }, () => timed(() => olga.api.get("/api/tasks"))),
      ...Array.from({ length: 4 }, (_, i) => timed(() => olga.api.post("/api/tasks", { title: `during the cut ${i}` }))),
      timed(() => olga.api.patch("/api/tasks/1", { title: "renamed during the cut" }))
    ])
    for (const { result, ms } of answers) {
      expectUnavailable(result)
      expect(ms).toBeLessThan(8_000)
    }
    // Still down: more requests, still 503, and no more log lines for them.
    for (let i = 0; i < 5; i++) expectUnavailable(await olga.api.post("/api/tasks", { title: `still cut ${i}` }))
    const health = await service.anonymous.get("/api/health")
    expect(health.status).toBe(503)

    await proxy.restore()
    expect(await waitForList(15_000)).toBe(200)
    expect(await titles()).toEqual(before)
    expect((await olga.api.post("/api/tasks", { title: "after the cut" })).status).toBe(201)
    // An answer after a quiet second ends the outage, so the next one is logged anew.
    await new Promise((r) => setTimeout(r, 1_500))
    expect((await olga.api.get("/api/tasks")).status).toBe(200)

    expect(outageLines().length - linesBefore).toBe(1)
    expect(outageLines().at(-1)).toMatch(/level=WARN/)
    expect(lines.filter((line) => /level=ERROR|INTERNAL_ERROR|Unexpected failure/.test(line))).toEqual([])
  }, 60_000)

  it.skipIf(base === undefined)("a frozen server: answers 503 within a bound, health within its limit, 200 once it answers again", async () => {
    expect(await waitForList(15_000)).toBe(200)
    const before = await titles()
    const linesBefore = outageLines().length

    proxy.blackhole()
    // The first wave meets pooled connections whose queries go unanswered; the second opens
    // new connections into the void.
    for (const wave of [1, 2]) {
      const answers = await Promise.all([
        ...Array.from({ length: 3 }, () => timed(() => olga.api.get("/api/tasks"))),
        ...Array.from({ length: 3 }, (_, i) => timed(() => olga.api.post("/api/tasks", { title: `frozen ${wave}.${i}` })))
      ])
      for (const { result, ms } of answers) {
        expectUnavailable(result)
        expect(ms).toBeLessThan(8_000)
      }
    }
    // Probes stop waiting at their own limit (500 ms in tests) rather than at the pool's bounds.
    const [health, ready, metrics] = await Promise.all([
      timed(() => service.anonymous.get("/api/health")),
      timed(() => service.anonymous.get("/api/health/ready")),
      timed(() => service.anonymous.get("/metrics"))
    ])
    expect(health.result.status).toBe(503)
    expect(health.ms).toBeLessThan(2_000)
    expect(ready.result.status).toBe(503)
    expect(ready.ms).toBeLessThan(2_000)
    expect(metrics.result.status).toBe(200)
    expect(metrics.result.text).toMatch(/^steady_database_up 0$/m)
    expect(metrics.ms).toBeLessThan(2_000)

    await proxy.restore()
    expect(await waitForList(20_000)).toBe(200)
    expect(await titles()).toEqual(before)
    expect((await olga.api.post("/api/tasks", { title: "after the freeze" })).status).toBe(201)
    expect((await service.anonymous.get("/api/health")).status).toBe(200)

    expect(outageLines().length - linesBefore).toBe(1)
    expect(lines.filter((line) => /level=ERROR|INTERNAL_ERROR|Unexpected failure/.test(line))).toEqual([])
  }, 90_000)
})

describe("which database failures are a 503", () => {
  const pgError = (message: string, code?: string) => Object.assign(new Error(message), code === undefined ? {} : { code })
  const asDefect = (error: unknown) => Cause.die(new SqlError({ cause: error, message: "Failed to execute statement" }))

  it.each([
    ["connection refused", pgError("connect ECONNREFUSED 127.0.0.1:5432", "ECONNREFUSED")],
    ["server shutting down", pgError("terminating connection due to administrator command", "57P01")],
    ["server starting", pgError("the database system is starting up", "57P03")],
    ["socket gone", pgError("Connection terminated unexpectedly")],
    ["pool wait", pgError("timeout exceeded when trying to connect")],
    ["client-side bound", new QueryTimedOut(5000)],
    ["statement_timeout", pgError("canceling statement due to statement timeout", "57014")]
  ])("%s is unavailable", (_, error) => {
    expect(Option.isSome(databaseUnavailable(asDefect(error)))).toBe(true)
    // As a typed failure too, and next to another failure (a rollback that failed after it).
    expect(Option.isSome(databaseUnavailable(Cause.fail(new SqlError({ cause: error }))))).toBe(true)
    expect(Option.isSome(databaseUnavailable(Cause.sequential(Cause.die(new Error("rollback")), asDefect(error))))).toBe(true)
  })

  it.each([
    ["unique violation", pgError("duplicate key value violates unique constraint", "23505")],
    ["syntax error", pgError("syntax error at or near", "42601")],
    ["a bug", new TypeError("x is undefined")]
  ])("%s is not", (_, error) => {
    expect(databaseUnavailable(asDefect(error))).toEqual(Option.none())
  })

  it("answers 503 SERVICE_UNAVAILABLE with Retry-After; anything else stays a 500", async () => {
    const unavailable = await Effect.runPromise(errorResponse(asDefect(pgError("canceling statement due to statement timeout", "57014"))))
    expect(unavailable.status).toBe(503)
    expect(unavailable.headers["retry-after"]).toBe("5")
    expect(unavailable.body._tag).toBe("Uint8Array")
    if (unavailable.body._tag !== "Uint8Array") return
    expect(JSON.parse(new TextDecoder().decode(unavailable.body.body))).toEqual(UNAVAILABLE)
    const bug = await Effect.runPromise(
      errorResponse(asDefect(new TypeError("x is undefined"))).pipe(Effect.provide(Logger.remove(Logger.defaultLogger)))
    )
    expect(bug.status).toBe(500)
  })
})

describe("outage tracking", () => {
  it("a server going down connection by connection is one outage; it ends after a quiet second with an answer", () => {
    let now = 0
    const events: Array<string> = []
    const tracker = new OutageTracker(
      { down: (reason) => events.push(`down: ${reason}`), up: (ms) => events.push(`up after ${ms}`) },
      1000,
      () => now
    )
    tracker.answered()
    expect(events).toEqual([])
    now = 100
    tracker.failed(Object.assign(new Error("terminating connection due to administrator command"), { code: "57P01" }))
    // Connections not yet cut still answer, then fail in turn.
    now = 150
    tracker.answered()
    now = 200
    tracker.failed(new Error("Client has encountered a connection error and is not queryable"))
    now = 1100
    tracker.answered()
    expect(tracker.isDown).toBe(true)
    now = 1300
    tracker.answered()
    now = 1400
    tracker.answered()
    expect(events).toEqual(["down: terminating connection due to administrator command (57P01)", "up after 1200"])
    expect(tracker.isDown).toBe(false)
    now = 5000
    tracker.failed(new Error("connect ECONNREFUSED 127.0.0.1:5432"))
    expect(events).toHaveLength(3)
    expect(events[2]).toBe("down: connect ECONNREFUSED 127.0.0.1:5432")
  })
})

describe("client-side query bound", () => {
  const base = serverUrl()
  let database: TestDatabase

  beforeAll(async () => {
    if (base !== undefined) database = await freshDatabase()
  })
  afterAll(async () => {
    await database?.drop()
  })

  it.skipIf(base === undefined)("a query past the bound fails and its connection is dropped, not lent out with the statement still running", async () => {
    const events: Array<string> = []
    const tracker = new OutageTracker({ down: (reason) => events.push(`down: ${reason}`), up: () => events.push("up") }, 0)
    const pool = makeGuardedPool({
      url: database.url!,
      max: 1,
      acquireTimeoutMs: 3000,
      queryBoundMs: 300,
      statementTimeoutMs: 10_000,
      tracker
    })
    pool.on("error", () => undefined)
    try {
      const slow = await timed(() => pool.query("SELECT pg_sleep(3)").then(() => "answered", (error: unknown) => error))
      expect(slow.result).toBeInstanceOf(QueryTimedOut)
      expect(slow.ms).toBeLessThan(2_000)
      expect(events).toEqual(["down: PostgreSQL did not answer a query within 300 ms"])
      // One connection at most: had the timed-out one been reused, this would wait behind pg_sleep.
      const next = await timed(() => pool.query("SELECT 41 + 1 AS n"))
      expect(next.result.rows).toEqual([{ n: 42 }])
      expect(next.ms).toBeLessThan(2_000)
      expect(events).toEqual(["down: PostgreSQL did not answer a query within 300 ms", "up"])
    } finally {
      await pool.end()
    }
  })

  it.skipIf(base === undefined)("an outage is one WARN when it starts and one INFO when the server answers again", async () => {
    const target = new URL(database.url!)
    const relay = new FaultProxy(target.hostname, Number(target.port || 5432))
    await relay.open()
    const proxied = new URL(database.url!)
    proxied.hostname = "127.0.0.1"
    proxied.port = String(relay.port)
    const logged: Array<string> = []
    const logger = Logger.replace(
      Logger.defaultLogger,
      Logger.make(({ logLevel, message }) => logged.push(`${logLevel.label} ${Array.isArray(message) ? message.join(" ") : String(message)}`))
    )
    const runtime = ManagedRuntime.make(
      Layer.orDie(layerPgServer(proxied.toString(), { poolSize: 2, statementTimeout: Duration.seconds(5) })).pipe(Layer.provide(logger))
    )
    const select = () =>
      runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 1 AS one`).pipe(Effect.either))
    try {
      expect(Either.isRight(await select())).toBe(true)
      await relay.cut()
      for (let i = 0; i < 5; i++) expect(Either.isLeft(await select())).toBe(true)
      await relay.restore()
      // An answer within the quiet second after the last failure does not end the outage yet.
      await select()
      await new Promise((r) => setTimeout(r, 1_200))
      const answered = await select()
      expect(Either.isRight(answered)).toBe(true)
      await new Promise((r) => setTimeout(r, 50))
      const outage = logged.filter((line) => line.includes("PostgreSQL is"))
      expect(outage).toHaveLength(2)
      expect(outage[0]).toMatch(/^WARN PostgreSQL is unreachable \(.+\); requests answer 503 until it is back$/)
      expect(outage[1]).toMatch(/^INFO PostgreSQL is reachable again after \d+\.\d s$/)
    } finally {
      await runtime.dispose()
      await relay.cut()
    }
  })

  it.skipIf(base === undefined)("DATABASE_POOL_SIZE is the pool's size", async () => {
    const max = await Effect.runPromise(
      Effect.map(SqlClient.SqlClient, (sql) => poolStatsOf(sql)?.max).pipe(
        Effect.provide(Layer.orDie(layerPgServer(database.url!, { poolSize: 3, statementTimeout: Duration.seconds(5) })))
      )
    )
    expect(max).toBe(3)
  })

  it.skipIf(base === undefined)("work run without the bound (migrations) may take longer", async () => {
    const layer = layerPgServer(database.url!, { poolSize: 2, statementTimeout: Duration.millis(300) })
    const slept = (sql: SqlClient.SqlClient) =>
      sql.withTransaction(Effect.zipRight(sql.unsafe("SET LOCAL statement_timeout = 0").unprepared, sql`SELECT pg_sleep(0.8)`))
    const outcome = (unbounded: boolean) =>
      Effect.runPromise(
        Effect.flatMap(SqlClient.SqlClient, (sql) => (unbounded ? withoutQueryBound(slept(sql)) : slept(sql))).pipe(
          Effect.as("finished"),
          Effect.catchAllCause(() => Effect.succeed("failed")),
          Effect.provide(Layer.orDie(layer))
        )
      )
    expect(await outcome(true)).toBe("finished")
    expect(await outcome(false)).toBe("failed")
  })
})
