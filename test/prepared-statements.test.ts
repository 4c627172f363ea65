import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { OutageTracker, makeGuardedPool } from "../src/sql/PgGuard.js"
import { layerPglite } from "../src/sql/PgliteClient.js"
import { namedQuery, StatementCache } from "../src/sql/PreparedStatements.js"
import { databaseKind, freshDatabase, type TestDatabase } from "./support/database.js"

/*
 * Hot statements are prepared once per connection. PostgreSQL spent more
 * time planning our statements than running them; a connection now keeps each parameterized
 * statement it has run prepared, at most a bounded number, the least recently used dropped.
 */

describe("StatementCache", () => {
  it("names a statement once and reuses the name; statements without parameters go unnamed", () => {
    const cache = new StatementCache(4)
    const dropped: Array<string> = []
    const drop = (name: string) => dropped.push(name)
    const a = namedQuery(cache, "SELECT $1::int", [1], drop)
    expect(a?.name).toMatch(/^steady_/)
    expect(namedQuery(cache, "SELECT $1::int", [2], drop)).toEqual({ name: a!.name, text: "SELECT $1::int", values: [2] })
    expect(namedQuery(cache, "SELECT 1", [], drop)).toBeUndefined()
    expect(namedQuery(cache, "SELECT 1", undefined, drop)).toBeUndefined()
    expect(namedQuery(cache, `SELECT $1::text -- ${"x".repeat(20_000)}`, ["a"], drop)).toBeUndefined()
    expect(dropped).toEqual([])
  })

  it("past its capacity drops the least recently used statement, and never reuses a name", () => {
    const cache = new StatementCache(2)
    const dropped: Array<string> = []
    const drop = (name: string) => dropped.push(name)
    const a = cache.name("a", drop)!
    const b = cache.name("b", drop)!
    expect(cache.name("a", drop)).toBe(a) // a is now the most recent
    const c = cache.name("c", drop)!
    expect(dropped).toEqual([b])
    expect(cache.size).toBe(2)
    const again = cache.name("b", drop)!
    expect(dropped).toEqual([b, a])
    expect(new Set([a, b, c, again]).size).toBe(4)
  })

  it("evicts by last use, not by when a statement was first named", () => {
    const cache = new StatementCache(3)
    const dropped: Array<string> = []
    const drop = (name: string) => dropped.push(name)
    const [a, b, c] = ["a", "b", "c"].map((text) => cache.name(text, drop)!)
    // Used again in the order c, a, b: c is now the least recent, though named last.
    for (const text of ["c", "a", "b", "a", "b"]) cache.name(text, drop)
    cache.name("d", drop)
    expect(dropped).toEqual([c])
    cache.name("e", drop)
    expect(dropped).toEqual([c, a])
    expect(cache.name("b", drop)).toBe(b)
    expect(cache.size).toBe(3)
  })

  it("a statement is prepared anew after its maximum number of runs, so its plan is made again", () => {
    const cache = new StatementCache(10, 3)
    const dropped: Array<string> = []
    const drop = (name: string) => dropped.push(name)
    const first = cache.name("a", drop)!
    expect([cache.name("a", drop), cache.name("a", drop)]).toEqual([first, first])
    const renewed = cache.name("a", drop)!
    expect(renewed).not.toBe(first)
    expect(dropped).toEqual([first])
    expect(cache.size).toBe(1)
    expect([cache.name("a", drop), cache.name("a", drop)]).toEqual([renewed, renewed])
    expect(cache.name("a", drop)).not.toBe(renewed)
    expect(dropped).toEqual([first, renewed])
  })

  it("capacity 0 prepares nothing", () => {
    expect(new StatementCache(0).name("SELECT $1", () => undefined)).toBeUndefined()
  })
})

describe.skipIf(databaseKind() !== "postgres")("prepared statements on a PostgreSQL connection", () => {
  let db: TestDatabase
  beforeAll(async () => {
    db = await freshDatabase()
  })
  afterAll(async () => {
    await db.drop()
  })

  const pool = (preparedStatements: number) =>
    makeGuardedPool({
      url: db.url!,
      max: 1,
      acquireTimeoutMs: 3_000,
      queryBoundMs: 10_000,
      statementTimeoutMs: 9_000,
      tracker: new OutageTracker({ down: () => undefined, up: () => undefined }),
      preparedStatements
    })

  /** The statements the pool's one connection holds prepared, by their text. */
  const prepared = async (p: ReturnType<typeof pool>) =>
    (await p.query("SELECT statement FROM pg_prepared_statements ORDER BY prepare_time")).rows.map((r) => r.statement as string)

  const run = (p: ReturnType<typeof pool>, text: string, values: Array<unknown>) =>
    new Promise<Array<Record<string, unknown>>>((resolve, reject) =>
      p.query(text, values, (error: Error | undefined, result: { rows: Array<Record<string, unknown>> }) =>
        error ? reject(error) : resolve(result.rows)
      )
    )

  it("runs a parameterized statement prepared, and keeps at most its capacity", async () => {
    const p = pool(2)
    try {
      expect(await run(p, "SELECT $1::int + 1 AS n", [1])).toEqual([{ n: 2 }])
      expect(await run(p, "SELECT $1::int + 1 AS n", [41])).toEqual([{ n: 42 }])
      expect(await prepared(p)).toEqual(["SELECT $1::int + 1 AS n"])
      await run(p, "SELECT $1::int + 2 AS n", [1])
      await run(p, "SELECT $1::int + 3 AS n", [1])
      // The first was the least recently used: deallocated to make room.
      expect(await prepared(p)).toEqual(["SELECT $1::int + 2 AS n", "SELECT $1::int + 3 AS n"])
      expect(await run(p, "SELECT $1::int + 1 AS n", [1])).toEqual([{ n: 2 }])
    } finally {
      await p.end()
    }
  })

  it("a statement whose table changed shape fails once, then is prepared anew", async () => {
    const p = pool(10)
    try {
      await run(p, "CREATE TABLE shape_change (a int)", [])
      await run(p, "INSERT INTO shape_change VALUES ($1)", [7])
      expect(await run(p, "SELECT * FROM shape_change WHERE a = $1", [7])).toEqual([{ a: 7 }])
      await run(p, "ALTER TABLE shape_change ADD COLUMN b int", [])
      await expect(run(p, "SELECT * FROM shape_change WHERE a = $1", [7])).rejects.toThrow(/cached plan/)
      expect(await run(p, "SELECT * FROM shape_change WHERE a = $1", [7])).toEqual([{ a: 7, b: null }])
    } finally {
      await p.end()
    }
  })

  it("dropping a statement inside a transaction never aborts it", async () => {
    const p = pool(1)
    try {
      const client = await p.connect()
      try {
        await client.query("BEGIN")
        await client.query("SELECT $1::int AS one", [1])
        // Evicts the first: its DEALLOCATE goes out inside the transaction.
        await client.query("SELECT $1::int AS two", [2])
        expect((await client.query("SELECT $1::int AS three", [3])).rows).toEqual([{ three: 3 }])
        await client.query("COMMIT")
      } finally {
        client.release()
      }
    } finally {
      await p.end()
    }
  })
})

/**
 * The embedded database (PGlite on its thread) keeps the same bounded set prepared: its
 * statements go by the wire protocol, parsed and described once, then only bound and run.
 */
describe("prepared statements on the embedded database", () => {
  const runtime = ManagedRuntime.make(layerPglite(undefined, 2).pipe(Layer.orDie))
  afterAll(() => runtime.dispose())
  beforeAll(() => runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 1`)), 120_000)

  const run = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) => runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, f))
  const prepared = () =>
    run((sql) => sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements ORDER BY prepare_time`).then((rows) =>
      rows.map((r) => r.statement)
    )

  it("runs a parameterized statement prepared, its values typed as PGlite types them, and keeps at most its capacity", async () => {
    const at = new Date("2026-03-29T01:30:00.000Z")
    const typed = (sql: SqlClient.SqlClient) =>
      sql<{ n: number; at: Date; doc: unknown; tags: Array<string>; nothing: null }>`
        SELECT ${41}::int + 1 AS n, ${at.toISOString()}::timestamptz AS at, ${JSON.stringify({ a: [1, "b"] })}::jsonb AS doc,
               ARRAY[${"x"}::text, 'y, "z"'] AS tags, ${null}::text AS nothing`
    expect(await run(typed)).toEqual([{ n: 42, at, doc: { a: [1, "b"] }, tags: ["x", "y, \"z\""], nothing: null }])
    expect(await run(typed)).toEqual([{ n: 42, at, doc: { a: [1, "b"] }, tags: ["x", "y, \"z\""], nothing: null }])
    expect(await prepared()).toHaveLength(1)
    expect((await prepared())[0]).toContain("AS doc")
    // Rows as arrays (the "values" row mode) from a prepared statement too.
    expect(await run((sql) => sql`SELECT ${7}::int AS a, ${"b"}::text AS b`.values)).toEqual([[7, "b"]])
    await run((sql) => sql`SELECT ${1}::int + 3 AS n`)
    // Capacity 2: the least recently used (the typed one) was dropped to make room.
    const left = await prepared()
    expect(left).toHaveLength(2)
    expect(left.some((text) => text.includes("AS doc"))).toBe(false)
    expect(await run(typed)).toEqual([{ n: 42, at, doc: { a: [1, "b"] }, tags: ["x", "y, \"z\""], nothing: null }])
  })

  it("counts the rows a prepared write changed", async () => {
    await run((sql) => sql`CREATE TABLE counted (a int)`)
    await run((sql) => sql`INSERT INTO counted SELECT g FROM generate_series(1, 5) AS g`)
    const result = await run((sql) => sql`UPDATE counted SET a = a + ${1} WHERE a <= ${3}`.raw)
    expect((result as { affectedRows: number }).affectedRows).toBe(3)
  })

  it("a statement whose table changed shape fails once, then is prepared anew", async () => {
    await run((sql) => sql`CREATE TABLE shape_change (a int)`)
    await run((sql) => sql`INSERT INTO shape_change VALUES (${7})`)
    const select = (sql: SqlClient.SqlClient) => sql`SELECT * FROM shape_change WHERE a = ${7}`
    expect(await run(select)).toEqual([{ a: 7 }])
    await run((sql) => sql`ALTER TABLE shape_change ADD COLUMN b int`)
    await expect(run(select)).rejects.toThrow()
    expect(await run(select)).toEqual([{ a: 7, b: null }])
  })

  it("a failed statement rolls its transaction back, and the connection serves the next one prepared", async () => {
    await run((sql) => sql`CREATE TABLE unique_a (a int PRIMARY KEY)`)
    const insert = (sql: SqlClient.SqlClient, a: number) => sql`INSERT INTO unique_a VALUES (${a})`
    await run((sql) => insert(sql, 1))
    await expect(run((sql) => sql.withTransaction(Effect.zipRight(insert(sql, 2), insert(sql, 1))))).rejects.toThrow()
    // Not even parsed: a syntax error leaves nothing behind either.
    await expect(run((sql) => sql`SELEC ${1}::int`)).rejects.toThrow()
    await run((sql) => sql.withTransaction(Effect.zipRight(insert(sql, 3), insert(sql, 4))))
    expect(await run((sql) => sql<{ a: number }>`SELECT a FROM unique_a WHERE a > ${0} ORDER BY a`)).toEqual([{ a: 1 }, { a: 3 }, { a: 4 }])
  })
})

describe("a prepared statement's plan on the embedded database", () => {
  const runtime = ManagedRuntime.make(layerPglite(undefined).pipe(Layer.orDie))
  afterAll(() => runtime.dispose())
  const run = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) => runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, f))

  it("a generic plan made on a table of one row is made again once the grown table is analyzed", async () => {
    await run((sql) => sql`CREATE TABLE grows (id serial PRIMARY KEY, note text)`)
    await run((sql) => sql`INSERT INTO grows (note) VALUES ('one')`)
    await run((sql) => sql`ANALYZE grows`)
    const byId = (sql: SqlClient.SqlClient) => sql<{ id: number }>`SELECT id FROM grows WHERE id = ${1}`
    // Past the five runs after which PostgreSQL settles on a generic plan.
    for (let i = 0; i < 8; i++) expect(await run(byId)).toEqual([{ id: 1 }])
    const plan = () =>
      run((sql) =>
        Effect.flatMap(
          sql<{ name: string }>`SELECT name FROM pg_prepared_statements WHERE statement LIKE '%FROM grows WHERE id%'`,
          (rows) => sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN EXECUTE ${rows[0]!.name}(1)`)
        )
      ).then((rows) => rows.map((r) => r["QUERY PLAN"]).join("\n"))
    expect(await plan()).toMatch(/^Seq Scan on grows/)
    await run((sql) => sql`INSERT INTO grows (note) SELECT 'n' FROM generate_series(1, 20000)`)
    await run((sql) => sql`ANALYZE grows`)
    expect(await plan()).toMatch(/^Index (Only )?Scan using grows_pkey/)
    expect(await run(byId)).toEqual([{ id: 1 }])
  }, 60_000)
})
