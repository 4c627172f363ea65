import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { OutageTracker, makeGuardedPool } from "../src/services/PgGuard.js"
import { namedQuery, StatementCache } from "../src/services/PreparedStatements.js"
import { databaseKind, freshDatabase, type TestDatabase } from "./support/database.js"

/*
 * Issue 17 item 4: hot statements are prepared once per connection. PostgreSQL spent more
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
