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

  it("answers longer than the answer ring, and more than it holds at once, all arrive whole", async () => {
    // Parameters make these named statements, whose answers go through the ring (4 MiB).
    const rowsOf = (rows: number, width: number) =>
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ n: number; t: string }>`SELECT g AS n, repeat(chr(65 + g % 26), ${width}::int) AS t
          FROM generate_series(1, ${rows}::int) AS g`)
    const check = (rows: ReadonlyArray<{ n: number; t: string }>, count: number, width: number) => {
      expect(rows.length).toBe(count)
      for (const row of [rows[0]!, rows[Math.floor(count / 2)]!, rows[count - 1]!]) {
        expect(row.t).toBe(String.fromCharCode(65 + row.n % 26).repeat(width))
      }
    }
    // ~6 MB: more than the ring, in a buffer of its own.
    check(await run(rowsOf(3_000, 2_000)), 3_000, 2_000)
    // 40 answers of ~210 KB sent at once (8 MB in all): the ring fills and empties as they are read.
    const many = await run(Effect.all(Array.from({ length: 40 }, (_, k) => rowsOf(100 + k, 2_000)), { concurrency: "unbounded" }))
    many.forEach((rows, k) => check(rows, 100 + k, 2_000))
    // And small ones after, through the ring again.
    check(await run(rowsOf(50, 100)), 50, 100)
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

  it("a prepared statement's rows are read on the main thread as a server's: pg's parsers, UTF-8, nulls, row modes", async () => {
    const values = await run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql`SELECT ${5}::int8 AS big, ${"2026-03-29T01:30:00.000Z"}::timestamptz AS at, ${'{"a":[1,"ü"]}'}::jsonb AS doc,
        ${true}::bool AS yes, NULL::text AS nothing, ARRAY[${1}::int, 2] AS list, ${"Grüße 🌍"}::text AS words,
        ${2}::int + 1 AS n`))
    expect(values).toEqual([{
      // As pg answers on a server: int8 as text, timestamptz as a Date, jsonb parsed.
      big: "5",
      at: new Date("2026-03-29T01:30:00.000Z"),
      doc: { a: [1, "ü"] },
      yes: true,
      nothing: null,
      list: [1, 2],
      words: "Grüße 🌍",
      n: 3
    }])
    const arrays = await run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql`SELECT g AS i, ${"x"}::text || g AS label FROM generate_series(1, 3) AS g`.values))
    expect(arrays).toEqual([[1, "x1"], [2, "x2"], [3, "x3"]])
  })

  it("a prepared statement's failure carries PostgreSQL's fields, and a write counts its rows", async () => {
    await run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE named_dup (id int PRIMARY KEY, note text)`))
    const inserted = await run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql`INSERT INTO named_dup SELECT g, ${"n"} FROM generate_series(1, 4) AS g`.raw))
    expect(inserted).toMatchObject({ affectedRows: 4 })
    const exit = await runtime.runPromiseExit(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql`INSERT INTO named_dup VALUES (${2}, ${"again"})`))
    const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error : undefined
    expect(error?._tag).toBe("SqlError")
    expect(error?.cause).toMatchObject({
      code: "23505",
      constraint: "named_dup_pkey",
      table: "named_dup",
      detail: "Key (id)=(2) already exists.",
      message: "duplicate key value violates unique constraint \"named_dup_pkey\""
    })
  })

  it("a statement dropped from a full cache while a run of it is still on its way answers with its rows", async () => {
    // Room for two prepared statements. `known` is prepared and its fields are known on this
    // side; a run of it goes out, then two new texts, the second of which evicts it: its
    // DEALLOCATE goes with that request while the answer to `known`'s run is still to come.
    const small = ManagedRuntime.make(layerPglite(undefined, 2).pipe(Layer.orDie))
    try {
      const rounds = await small.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => {
        const value = (text: string, v: number) =>
          Effect.map(sql.unsafe<{ v: number }>(text, [v]), (rows) => rows[0]!.v)
        return Effect.forEach(Array.from({ length: 5 }, (_, round) => round), (round) => {
          const known = `SELECT $1::int + ${round * 1000} AS v`
          return Effect.zipRight(
            value(known, 1),
            Effect.all([value(known, 2), value(`SELECT $1::int - ${round} AS v`, 3), value(`SELECT $1::int * ${round + 1} AS v`, 4)], {
              concurrency: "unbounded"
            })
          )
        })
      }))
      expect(rounds).toEqual(Array.from({ length: 5 }, (_, round) => [2 + round * 1000, 3 - round, 4 * (round + 1)]))
    } finally {
      await small.dispose()
    }
  }, 120_000)
})
