import Pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { answersAtOnce, commitWithNextStatement, makeGuardedPool, OutageTracker } from "../src/sql/PgGuard.js"
import { databaseKind, freshDatabase, type TestDatabase } from "./support/database.js"

/*
 * BEGIN goes out in one pipeline with a transaction's first statement, and
 * COMMIT with the statement its caller marks as the last, so a single-task write is two round
 * trips. These drive a connection the way @effect/sql's withTransaction does (BEGIN, the
 * statements, COMMIT or ROLLBACK, each as `query(text, values, callback)`) and check that
 * what commits, what rolls back and what each statement answers is what separate round trips
 * gave.
 */

type Row = Record<string, unknown>

describe.skipIf(databaseKind() !== "postgres")("BEGIN and COMMIT pipelined with the statements", () => {
  let db: TestDatabase
  let pool: Pg.Pool
  let other: Pg.Client

  beforeAll(async () => {
    db = await freshDatabase()
    pool = makeGuardedPool({
      url: db.url!,
      max: 2,
      acquireTimeoutMs: 3_000,
      queryBoundMs: 10_000,
      statementTimeoutMs: 9_000,
      tracker: new OutageTracker({ down: () => undefined, up: () => undefined })
    })
    other = new Pg.Client({ connectionString: db.url })
    await other.connect()
    await other.query("CREATE TABLE items (id int PRIMARY KEY, note text)")
  })
  afterAll(async () => {
    await other.end()
    await pool.end()
    await db.drop()
  })

  /** One statement the way @effect/sql-pg sends it: text, values, callback; the rows back. */
  const run = (client: Pg.PoolClient, text: string, values: Array<unknown> = []) =>
    new Promise<Array<Row>>((resolve, reject) =>
      (client.query as any)(text, values, (error: Error | null, result: { rows?: Array<Row> }) =>
        error ? reject(error) : resolve(result.rows ?? [])
      )
    )

  const stored = async () => (await other.query("SELECT id, note FROM items ORDER BY id")).rows

  /** Runs `use` on a connection of its own, released afterwards. */
  const withClient = async (use: (client: Pg.PoolClient) => Promise<void>) => {
    const client = await pool.connect()
    try {
      await use(client)
    } finally {
      client.release()
    }
  }

  /** What @effect/sql's TransactionConnection holds for a reserved pg client. */
  const asConnection = (client: Pg.PoolClient) => ({ pg: client })

  it("commits with the marked statement: its rows are visible to others before the caller's COMMIT", async () => {
    await withClient(async (client) => {
      expect(await run(client, "BEGIN")).toEqual([])
      const [first] = await run(client, "INSERT INTO items VALUES ($1, $2) RETURNING id, note", [1, "one"])
      expect(first).toEqual({ id: 1, note: "one" })
      expect(await stored()).toEqual([])
      expect(commitWithNextStatement(asConnection(client))).toBe(true)
      expect(await run(client, "INSERT INTO items VALUES ($1, $2) RETURNING id", [2, "two"])).toEqual([{ id: 2 }])
      // Already committed: the caller's COMMIT is answered without a round trip.
      expect(await stored()).toEqual([{ id: 1, note: "one" }, { id: 2, note: "two" }])
      expect(await run(client, "COMMIT")).toEqual([])
      // The connection is out of the transaction: a new one starts cleanly.
      expect(await run(client, "BEGIN")).toEqual([])
      expect(await run(client, "SELECT count(*)::int AS n FROM items WHERE id > $1", [0])).toEqual([{ n: 2 }])
      expect(await run(client, "ROLLBACK")).toEqual([])
    })
  })

  it("a marked statement that fails commits nothing of the transaction, and ROLLBACK leaves the connection clean", async () => {
    await withClient(async (client) => {
      await run(client, "BEGIN")
      await run(client, "INSERT INTO items VALUES ($1, $2)", [10, "ten"])
      commitWithNextStatement(asConnection(client))
      await expect(run(client, "INSERT INTO items VALUES ($1, $2)", [1, "duplicate"])).rejects.toMatchObject({ code: "23505" })
      await run(client, "ROLLBACK")
      expect((await stored()).map((r) => r.id)).not.toContain(10)
      expect(await run(client, "SELECT $1::int AS ok", [1])).toEqual([{ ok: 1 }])
      // Not in a transaction any more: a lone statement commits on its own.
      await run(client, "INSERT INTO items VALUES ($1, $2)", [11, "eleven"])
      expect((await stored()).map((r) => r.id)).toContain(11)
    })
  })

  it("a first statement that fails leaves no transaction behind after ROLLBACK", async () => {
    await withClient(async (client) => {
      await run(client, "BEGIN")
      await expect(run(client, "SELECT * FROM no_such_table WHERE id = $1", [1])).rejects.toMatchObject({ code: "42P01" })
      await run(client, "ROLLBACK")
      expect(await run(client, "SELECT count(*)::int AS n FROM items WHERE id = $1", [11])).toEqual([{ n: 1 }])
    })
  })

  it("statements without parameters and promise-style queries still run inside the transaction", async () => {
    await withClient(async (client) => {
      await run(client, "BEGIN")
      // Simple protocol: BEGIN joins the string.
      const [a] = await run(client, "SELECT txid_current()::text AS id")
      // Promise style (cursors, pg's own): the held BEGIN goes out first, on its own.
      const b = (await client.query("SELECT txid_current()::text AS id")).rows[0]
      const [c] = await run(client, "SELECT txid_current()::text AS id, $1::int AS n", [1])
      expect(b!.id).toBe(a!.id)
      expect(c!.id).toBe(a!.id)
      await run(client, "ROLLBACK")
    })
  })

  it("an empty transaction sends nothing and ends cleanly; ROLLBACK after it too", async () => {
    await withClient(async (client) => {
      await run(client, "BEGIN")
      await run(client, "COMMIT")
      await run(client, "BEGIN")
      await run(client, "ROLLBACK")
      const [row] = await run(client, "SELECT now() = statement_timestamp() AS alone")
      expect(row).toEqual({ alone: true })
    })
  })

  it("a nested transaction's SAVEPOINT goes with its first statement; rolling back to it undoes only what followed", async () => {
    await withClient(async (client) => {
      await run(client, "BEGIN")
      await run(client, "INSERT INTO items VALUES ($1, $2)", [20, "kept"])
      await run(client, "SAVEPOINT effect_sql_1")
      await run(client, "INSERT INTO items VALUES ($1, $2)", [21, "undone"])
      await expect(run(client, "INSERT INTO items VALUES ($1, $2)", [20, "duplicate"])).rejects.toMatchObject({ code: "23505" })
      await run(client, "ROLLBACK TO SAVEPOINT effect_sql_1")
      await run(client, "COMMIT")
      const ids = (await stored()).map((r) => r.id)
      expect(ids).toContain(20)
      expect(ids).not.toContain(21)
    })
  })

  it("rolling back to a savepoint no statement followed costs nothing and keeps the transaction", async () => {
    await withClient(async (client) => {
      await run(client, "BEGIN")
      await run(client, "SAVEPOINT effect_sql_1")
      await run(client, "ROLLBACK TO SAVEPOINT effect_sql_1")
      await run(client, "INSERT INTO items VALUES ($1, $2)", [30, "after"])
      // Still one transaction: nothing visible until COMMIT.
      expect((await stored()).map((r) => r.id)).not.toContain(30)
      await run(client, "COMMIT")
      expect((await stored()).map((r) => r.id)).toContain(30)
    })
  })

  /** The texts a client parses on the wire from now on (what reaches the server). */
  const parsedTexts = (client: Pg.PoolClient) => {
    const connection = (client as unknown as { connection: { parse: (config: { text: string }) => void } }).connection
    const texts: Array<string> = []
    const parse = connection.parse
    connection.parse = function(this: unknown, config: { text: string }) {
      texts.push(config.text)
      return parse.call(this, config)
    }
    return { texts, restore: () => void (connection.parse = parse) }
  }

  it("a held SAVEPOINT is left out of a statement that carries COMMIT: nothing could roll back to it", async () => {
    await withClient(async (client) => {
      const parsed = parsedTexts(client)
      try {
        await run(client, "BEGIN")
        await run(client, "SAVEPOINT effect_sql_1")
        expect(commitWithNextStatement(asConnection(client))).toBe(true)
        expect(await run(client, "INSERT INTO items VALUES ($1, $2) RETURNING id", [40, "no savepoint"])).toEqual([{ id: 40 }])
        expect(await run(client, "COMMIT")).toEqual([])
        expect((await stored()).map((r) => r.id)).toContain(40)
        expect(parsed.texts.filter((t) => !t.startsWith("INSERT"))).toEqual(["BEGIN", "COMMIT"])

        // Failing, it leaves the transaction for the caller's ROLLBACK, as with the savepoint.
        parsed.texts.length = 0
        await run(client, "BEGIN")
        await run(client, "SAVEPOINT effect_sql_1")
        commitWithNextStatement(asConnection(client))
        await expect(run(client, "INSERT INTO items VALUES ($1, $2)", [40, "duplicate"])).rejects.toMatchObject({ code: "23505" })
        expect(await run(client, "ROLLBACK")).toEqual([])
        // (The ROLLBACK goes out by the simple protocol, which parses nothing.)
        expect(parsed.texts.filter((t) => !t.startsWith("INSERT"))).toEqual(["BEGIN", "COMMIT"])
        expect((await stored()).filter((r) => r.id === 40)).toEqual([{ id: 40, note: "no savepoint" }])
        expect(await run(client, "SELECT count(*)::int AS n FROM items WHERE id = $1", [40])).toEqual([{ n: 1 }])
      } finally {
        parsed.restore()
      }
    })
  })

  it("control statements that need no round trip are taken at once, the others are left to go out", async () => {
    await withClient(async (client) => {
      const connection = asConnection(client)
      // Held: nothing sent, the next statement carries them.
      expect(answersAtOnce(connection, "BEGIN")).toBe(true)
      expect(answersAtOnce(connection, "SAVEPOINT effect_sql_1")).toBe(true)
      expect(await run(client, "INSERT INTO items VALUES ($1, $2)", [50, "held"])).toEqual([])
      // The savepoint went out with it: rolling back to it must go out too.
      expect(answersAtOnce(connection, "ROLLBACK TO SAVEPOINT effect_sql_1")).toBe(false)
      expect(await run(client, "ROLLBACK TO SAVEPOINT effect_sql_1")).toEqual([])
      expect(await run(client, "INSERT INTO items VALUES ($1, $2)", [51, "kept"])).toEqual([])
      // COMMIT of a transaction whose statements went out, without one riding along: it goes out.
      expect(answersAtOnce(connection, "COMMIT")).toBe(false)
      expect(await run(client, "COMMIT")).toEqual([])
      expect(await stored()).toContainEqual({ id: 51, note: "kept" })
      expect(await stored()).not.toContainEqual({ id: 50, note: "held" })

      // COMMIT that rode with the last statement: answered at once, and the next transaction starts cleanly.
      expect(answersAtOnce(connection, "BEGIN")).toBe(true)
      expect(commitWithNextStatement(connection)).toBe(true)
      expect(await run(client, "INSERT INTO items VALUES ($1, $2)", [52, "rode"])).toEqual([])
      expect(answersAtOnce(connection, "COMMIT")).toBe(true)
      expect(await stored()).toContainEqual({ id: 52, note: "rode" })

      // A transaction none of whose statements went out ends without a word, either way.
      expect(answersAtOnce(connection, "BEGIN")).toBe(true)
      expect(answersAtOnce(connection, "SAVEPOINT effect_sql_1")).toBe(true)
      expect(answersAtOnce(connection, "ROLLBACK TO SAVEPOINT effect_sql_1")).toBe(true)
      expect(answersAtOnce(connection, "ROLLBACK")).toBe(true)
      expect(answersAtOnce(connection, "BEGIN")).toBe(true)
      expect(answersAtOnce(connection, "COMMIT")).toBe(true)
      // Out of any transaction: a plain statement runs on its own (nothing held is sent ahead of it).
      expect(await run(client, "SELECT count(*)::int AS n FROM items WHERE id >= $1", [50])).toEqual([{ n: 2 }])
      expect(answersAtOnce(connection, "SELECT 1")).toBe(false)
      await other.query("DELETE FROM items WHERE id >= 50")
    })
  })

  it("the embedded database's connection cannot pipeline: the caller's COMMIT goes out as before", () => {
    expect(commitWithNextStatement({})).toBe(false)
    expect(commitWithNextStatement(undefined)).toBe(false)
  })
})
