import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Exit, Fiber, Layer, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { commitWithNextStatement } from "../src/sql/PgGuard.js"
import { layerPglite } from "../src/sql/PgliteClient.js"

/** The embedded client on its own thread, over an in-memory database (no DATA_DIR needed). */
const runtime = ManagedRuntime.make(layerPglite(undefined).pipe(Layer.orDie))
afterAll(() => runtime.dispose())
// Boots the thread and PGlite before anything is timed.
beforeAll(() => runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 1`)), 120_000)

const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) => runtime.runPromise(effect)
const count = (table: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(table)}`).pipe(
    Effect.map((rows) => rows[0]!.n)
  )

describe("the embedded database on its own thread", () => {
  it("a long statement leaves the event loop free: timers keep firing while it runs", async () => {
    const gaps: Array<number> = []
    let last = performance.now()
    const timer = setInterval(() => {
      const now = performance.now()
      gaps.push(now - last)
      last = now
    }, 10)
    const started = performance.now()
    try {
      const rows = await run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ n: number }>`SELECT count(*)::int AS n FROM generate_series(1, 1500000) AS g(i) WHERE i % 7 = 0`))
      expect(rows[0]!.n).toBe(214285)
    } finally {
      clearInterval(timer)
    }
    const took = performance.now() - started
    // On the event loop's thread the statement would hold every timer for its whole duration.
    expect(took).toBeGreaterThan(200)
    expect(gaps.length).toBeGreaterThan(3)
    expect(Math.max(...gaps)).toBeLessThan(took / 2)
  }, 60_000)

  it("PostgreSQL's error fields survive the thread: a duplicate key is 23505 with its constraint", async () => {
    await run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE dup (id int PRIMARY KEY)`))
    await run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO dup VALUES (1)`))
    const exit = await runtime.runPromiseExit(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO dup VALUES (1)`))
    expect(Exit.isFailure(exit)).toBe(true)
    const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
    expect(error?._tag).toBe("SqlError")
    expect(error?.cause).toMatchObject({ code: "23505", constraint: "dup_pkey" })
    expect(await run(count("dup"))).toBe(1)
  })

  it("a statement sent while a transaction is open waits for its COMMIT: it sees all of it or none", async () => {
    await run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE tx (id int)`))
    const seen = await run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const writer = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO tx VALUES (1)`
        yield* Effect.sleep("150 millis")
        yield* sql`INSERT INTO tx VALUES (2)`
      })))
      yield* Effect.sleep("50 millis")
      const n = yield* count("tx")
      yield* Fiber.join(writer)
      return n
    }))
    expect(seen).toBe(2)
  })

  it("an interrupted transaction rolls back and the connection serves the next one", async () => {
    await run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE cut (id int)`))
    await run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const writer = yield* Effect.fork(sql.withTransaction(Effect.zipRight(sql`INSERT INTO cut VALUES (1)`, Effect.never)))
      yield* Effect.sleep("100 millis")
      yield* Fiber.interrupt(writer)
    }))
    expect(await run(count("cut"))).toBe(0)
    await run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(sql`INSERT INTO cut VALUES (2)`)))
    expect(await run(count("cut"))).toBe(1)
  })

  it("a transaction that has sent no statement yet holds nothing: a plain statement goes ahead of it", async () => {
    await run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE idle (id int)`))
    const [plainTook, rows] = await run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const writer = yield* Effect.fork(sql.withTransaction(Effect.zipRight(Effect.sleep("400 millis"), sql`INSERT INTO idle VALUES (1)`)))
      yield* Effect.sleep("50 millis")
      const started = performance.now()
      const before = yield* count("idle")
      const took = performance.now() - started
      yield* Fiber.join(writer)
      return [took, [before, yield* count("idle")]] as const
    }))
    expect(plainTook).toBeLessThan(300)
    expect(rows).toEqual([0, 1])
  })

  it("COMMIT sent with the last statement: a failed one rolls the whole transaction back before the next transaction runs", async () => {
    await run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE last (id int PRIMARY KEY)`))
    await run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`INSERT INTO last VALUES (1)`))
    const outcome = await run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const failing = sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO last VALUES (10)`
        const [conn] = yield* Effect.orDie(Effect.serviceOptional(SqlClient.TransactionConnection))
        expect(commitWithNextStatement(conn)).toBe(true)
        yield* sql`INSERT INTO last VALUES (1)` // duplicate key: the COMMIT behind it rolls back
      }))
      const first = yield* Effect.fork(Effect.exit(failing))
      const second = yield* Effect.fork(sql.withTransaction(sql`INSERT INTO last VALUES (20)`))
      const exit = yield* Fiber.join(first)
      yield* Fiber.join(second)
      // And a transaction whose last statement succeeds commits, its own COMMIT answered here.
      yield* sql.withTransaction(Effect.gen(function*() {
        yield* sql`INSERT INTO last VALUES (30)`
        const [conn] = yield* Effect.orDie(Effect.serviceOptional(SqlClient.TransactionConnection))
        commitWithNextStatement(conn)
        yield* sql`INSERT INTO last VALUES (31)`
      }))
      const ids = yield* sql<{ id: number }>`SELECT id FROM last ORDER BY id`
      return { failed: Exit.isFailure(exit), ids: ids.map((r) => r.id) }
    }))
    expect(outcome).toEqual({ failed: true, ids: [1, 20, 30, 31] })
  })
})
