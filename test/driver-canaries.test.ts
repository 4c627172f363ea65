/**
 * One canary per library internal that src/sql (and src/http/BodyGuard.ts) relies on; the
 * list, and why each is needed, is src/sql/README.md. Each checks that the internal is still
 * there and still behaves as relied on, without a PostgreSQL server (fakes stand in for the
 * server where the library only needs something to talk to; PGlite runs in memory). A
 * failure names the internal, the package and its installed version: read the README's entry
 * for it before changing a pin.
 */
import * as Reactivity from "@effect/experimental/Reactivity"
import { HttpClient, HttpClientRequest, HttpServer, HttpServerError, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import * as NodeStream from "@effect/platform-node-shared/NodeStream"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { PgClient } from "@effect/sql-pg"
import { PGlite, protocol } from "@electric-sql/pglite"
import { Effect, Effectable, Fiber, Option, type Scope } from "effect"
import { EventEmitter } from "node:events"
import * as Fs from "node:fs"
import { Readable } from "node:stream"
import Pg from "pg"
import { serialize } from "pg-protocol"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { isBodyTooLarge } from "../src/http/BodyGuard.js"
import { unboundedQueries } from "../src/sql/PgGuard.js"
import { TransactionPipeline } from "../src/sql/TransactionPipeline.js"

/** The versions every internal below was verified on: the exact pins of package.json. */
const VERIFIED = {
  "pg": "8.23.1",
  "pg-pool": "3.14.0",
  "pg-protocol": "1.16.1",
  "@effect/sql": "0.52.1",
  "@effect/sql-pg": "0.53.0",
  "effect": "3.22.4",
  "@electric-sql/pglite": "0.5.16",
  "@effect/platform": "0.97.2",
  "@effect/platform-node": "0.108.2",
  "@effect/platform-node-shared": "0.61.1"
} as const
type Package = keyof typeof VERIFIED

const readJson = (path: string): { version?: string; dependencies?: Record<string, string> } =>
  JSON.parse(Fs.readFileSync(new URL(path, import.meta.url), "utf8"))

const installed = (pkg: Package): string => readJson(`../node_modules/${pkg}/package.json`).version ?? "(unknown)"

/** "pg 8.23.1: Query.prototype.prepare (why)", with the verified version when another is installed. */
const canary = (pkg: Package, internal: string, why: string): string => {
  const now = installed(pkg)
  return `${pkg} ${now}${now === VERIFIED[pkg] ? "" : ` (verified on ${VERIFIED[pkg]} only)`}: ${internal} (${why})`
}

describe("pins: every package whose internals we use is installed at the exact version verified", () => {
  const manifest = readJson("../package.json")
  for (const pkg of Object.keys(VERIFIED) as Array<Package>) {
    it(`${pkg} is pinned to ${VERIFIED[pkg]} and installed at it`, () => {
      expect(manifest.dependencies?.[pkg], `${pkg}: pinned exactly in package.json dependencies`).toBe(VERIFIED[pkg])
      expect(installed(pkg), `${pkg}: installed version (re-verify src/sql/README.md before moving a pin)`).toBe(VERIFIED[pkg])
    })
  }
})

// -- pg ---------------------------------------------------------------------------------

/** What pg's Query calls on its connection (pg/lib/connection.js), recorded. */
const fakeConnection = () => {
  const sent: Array<string> = []
  return {
    sent,
    parsedStatements: {} as Record<string, string | undefined>,
    submittedNamedStatements: {} as Record<string, string | undefined>,
    stream: { cork: () => {}, uncork: () => {} },
    parse: (config: { text: string; name?: string }) => sent.push(`parse ${config.name ?? ""}|${config.text}`),
    bind: (config: { statement?: string }) => sent.push(`bind ${config.statement ?? ""}`),
    describe: () => sent.push("describe"),
    execute: (config: { portal?: string; rows?: number | undefined }) => sent.push(`execute ${config.portal ?? ""}`),
    sync: () => sent.push("sync"),
    flush: () => sent.push("flush"),
    close: () => sent.push("close"),
    query: (text: string) => sent.push(`query ${text}`)
  }
}
type FakeConnection = ReturnType<typeof fakeConnection>

interface QueryInternals {
  readonly portal: string
  prepare(connection: FakeConnection): void
  _getRows(connection: FakeConnection, rows: number | undefined): void
  submit(connection: FakeConnection): unknown
  handleCommandComplete(message: { text: string }, connection: FakeConnection): void
  handleReadyForQuery(connection: FakeConnection): void
}
type QueryClass = new(config: object, values?: unknown, callback?: (error: Error | null, result?: unknown) => void) => QueryInternals
const Query = Pg.Query as unknown as QueryClass

describe("pg", () => {
  it("Query is exported as a class to extend", () => {
    expect(typeof Pg.Query, canary("pg", "the Query class export", "TransactionPipeline's PipelinedQuery extends it")).toBe(
      "function"
    )
  })

  it("Query.prototype.prepare exists", () => {
    expect(
      typeof (Query.prototype as { prepare?: unknown }).prepare,
      canary("pg", "Query.prototype.prepare", "TransactionPipeline sends held BEGIN/SAVEPOINT first, then calls pg's own prepare")
    ).toBe("function")
  })

  it("Query.prototype.prepare sends Parse, Bind, Describe and ends by calling this._getRows(connection, rows)", () => {
    const rowsAsked: Array<unknown> = []
    class Probe extends Query {
      override _getRows(_connection: FakeConnection, rows: number | undefined) {
        rowsAsked.push(rows)
      }
    }
    const connection = fakeConnection()
    new Probe({ text: "SELECT $1", values: [1], name: "canary_a" }).prepare(connection)
    expect(
      { sent: connection.sent, rowsAsked },
      canary("pg", "Query.prototype.prepare → this._getRows", "PipelinedQuery overrides _getRows to add COMMIT before Sync")
    ).toEqual({ sent: ["parse canary_a|SELECT $1", "bind canary_a", "describe"], rowsAsked: [undefined] })
  })

  it("Query.prototype._getRows sends Execute of this.portal and Sync", () => {
    const connection = fakeConnection()
    new Query({ text: "SELECT 1" })._getRows(connection, undefined)
    expect(connection.sent, canary("pg", "Query.prototype._getRows", "PipelinedQuery replaces it: Execute, [COMMIT], Sync")).toEqual([
      "execute ",
      "sync"
    ])
  })

  it("query.portal is the unnamed portal", () => {
    expect(new Query({ text: "SELECT 1" }).portal, canary("pg", "Query#portal", "PipelinedQuery executes this.portal")).toBe("")
  })

  it("Query.prototype.prepare skips Parse for a name already in connection.parsedStatements", () => {
    const connection = fakeConnection()
    connection.parsedStatements.canary_b = "SELECT $1"
    new Query({ text: "SELECT $1", values: [1], name: "canary_b" }).prepare(connection)
    expect(
      connection.sent,
      canary("pg", "Connection#parsedStatements read by Query.prepare", "PreparedStatements/PgGuard delete a name there after DEALLOCATE")
    ).toEqual(["bind canary_b", "describe", "execute ", "sync"])
  })

  it("Query.prototype.submit prepares a statement with values, and sends one without by the simple protocol", () => {
    const prepared: Array<string> = []
    class Probe extends Query {
      override prepare() {
        prepared.push("prepare")
      }
    }
    const extended = fakeConnection()
    new Probe({ text: "SELECT $1", values: [1] }).submit(extended)
    const simple = fakeConnection()
    new Probe({ text: "BEGIN;\nSELECT 1;\nCOMMIT" }).submit(simple)
    expect(
      { prepared, simple: simple.sent },
      canary("pg", "Query.prototype.submit → prepare | connection.query", "a pipeline goes out through the submittable's own prepare")
    ).toEqual({ prepared: ["prepare"], simple: ["query BEGIN;\nSELECT 1;\nCOMMIT"] })
  })

  it("several commands of one query answer as an array of results, in order", () => {
    let answer: unknown
    const query = new Query({ text: "BEGIN; SELECT 1; COMMIT" }, undefined, (_error, result) => {
      answer = result
    })
    const connection = fakeConnection()
    for (const text of ["BEGIN", "SELECT 1", "COMMIT"]) query.handleCommandComplete({ text }, connection)
    query.handleReadyForQuery(connection)
    expect(
      Array.isArray(answer) ? answer.map((result: { command: string }) => result.command) : answer,
      canary("pg", "Query's multi-result answer (_checkForMultirow)", "TransactionPipeline.ownResults drops BEGIN's and COMMIT's results")
    ).toEqual(["BEGIN", "SELECT", "COMMIT"])
  })

  it("pg's Connection has parse/bind/execute/sync and an empty parsedStatements record; a Client's is client.connection", () => {
    const connection = new Pg.Connection() as unknown as Record<string, unknown>
    const client = new Pg.Client() as unknown as { connection: unknown }
    expect(
      {
        methods: ["parse", "bind", "execute", "sync"].map((name) => typeof connection[name]),
        parsedStatements: connection.parsedStatements,
        clientConnection: client.connection instanceof Pg.Connection
      },
      canary("pg", "Connection (pg/lib/connection.js) parse/bind/execute/sync, parsedStatements, Client#connection", "PipelinedQuery sends bare statements through them; PgGuard reads parsedStatements")
    ).toEqual({ methods: ["function", "function", "function", "function"], parsedStatements: {}, clientConnection: true })
  })

  it("a pipeline as TransactionPipeline builds it goes out as held BEGIN, the statement, COMMIT, one Sync", () => {
    const pipeline = new TransactionPipeline()
    pipeline.answersAtOnce("BEGIN")
    pipeline.commitWithNext()
    const route = pipeline.route("SELECT $1", [1], { name: "canary_c", text: "SELECT $1", values: [1] }, () => {})
    const connection = fakeConnection()
    if (route._tag === "Pipeline") (route.query as QueryInternals).submit(connection)
    expect(
      connection.sent,
      canary("pg", "Query.submit → prepare → _getRows, as PipelinedQuery overrides them", "BEGIN and COMMIT ride with a transaction's statement")
    ).toEqual([
      "parse |BEGIN",
      "bind ",
      "execute ",
      "parse canary_c|SELECT $1",
      "bind canary_c",
      "describe",
      "execute ",
      "parse |COMMIT",
      "bind ",
      "execute ",
      "sync"
    ])
  })

  it("Client#end() marks the client _ending", async () => {
    const client = new Pg.Client()
    await client.end()
    expect(
      (client as unknown as { _ending?: unknown })._ending,
      canary("pg", "Client#_ending set by end()", "PgGuard ends a client whose query ran past its bound so the pool drops it")
    ).toBe(true)
  })
})

// -- pg-pool ------------------------------------------------------------------------------

/** Stands in for pg's Client in a pool: connects at once, never talks to a server. */
class FakePoolClient extends EventEmitter {
  _queryable = true
  _ending = false
  connect(callback: (error?: Error) => void) {
    process.nextTick(() => callback())
  }
  end(callback?: () => void) {
    this._ending = true
    process.nextTick(() => callback?.())
  }
}
const fakePool = (options: Record<string, unknown> = {}) => new Pg.Pool({ ...options, Client: FakePoolClient as never })

describe("pg-pool", () => {
  it("connect(callback) answers (error, client, release) and can be replaced on the instance", async () => {
    const pool = fakePool()
    const connect = pool.connect.bind(pool) as (callback: (...args: ReadonlyArray<unknown>) => void) => void
    const args = await new Promise<ReadonlyArray<unknown>>((resolve) => connect((...given) => resolve(given)))
    ;(pool as unknown as { connect: unknown }).connect = () => "replaced"
    expect(
      {
        args: args.map((arg) => typeof arg),
        replaced: (pool as unknown as { connect: () => unknown }).connect()
      },
      canary("pg-pool", "Pool#connect(callback) on the instance", "PgGuard wraps it to mark queue-wait timeouts met during an outage")
    ).toEqual({ args: ["undefined", "object", "function"], replaced: "replaced" })
    ;(args[2] as () => void)()
    await pool.end()
  })

  it("a client released with _ending set is dropped, not lent again", async () => {
    const pool = fakePool()
    const client = await pool.connect()
    ;(client as unknown as FakePoolClient)._ending = true
    client.release()
    expect(pool.totalCount, canary("pg-pool", "Pool#_release drops a client with _ending", "a connection whose query timed out never reaches the next borrower")).toBe(0)
    await pool.end()
  })

  it("pool.options keeps the options the pool was made with", async () => {
    const pool = fakePool({ connectionString: "postgres://canary@127.0.0.1:1/canary", max: 3, application_name: "canary" })
    const options = (pool as unknown as { options: Record<string, unknown> }).options
    expect(
      { url: options.connectionString, max: options.max, name: options.application_name },
      canary("pg-pool", "Pool#options", "ListenSession connects with the pool's settings; PoolStats reports options.max")
    ).toEqual({ url: "postgres://canary@127.0.0.1:1/canary", max: 3, name: "canary" })
    await pool.end()
  })
})

// -- pg-protocol ----------------------------------------------------------------------------

describe("pg-protocol", () => {
  it("bind({}), execute({ portal: '', rows: 0 }) and parse({ text, name: '' }) are the unnamed statement and portal", () => {
    const bytes = (b: Uint8Array) => Buffer.from(b).toString("hex")
    expect(
      {
        bind: bytes(serialize.bind({})),
        execute: bytes(serialize.execute({ portal: "", rows: 0 })),
        parse: bytes(serialize.parse({ text: "COMMIT", name: "" })).slice(0, 2)
      },
      canary("pg-protocol", "serialize.bind/execute/parse defaults", "PipelinedQuery's bare BEGIN/SAVEPOINT/COMMIT go through pg's Connection with these configs")
    ).toEqual({
      bind: bytes(serialize.bind({ portal: "", statement: "", values: [] })),
      execute: bytes(serialize.execute()),
      parse: "50"
    })
  })
})

// -- @effect/sql, effect ---------------------------------------------------------------------

/** A connection that answers every statement with no rows and records what it was sent. */
const recordingConnection = () => {
  const sent: Array<string> = []
  const answer = (text: string) => Effect.sync(() => (sent.push(text), [] as Array<never>))
  const connection: Connection = {
    execute: (text) => answer(text),
    executeRaw: (text) => answer(text),
    executeValues: (text) => answer(text),
    executeUnprepared: (text) => answer(text),
    executeStream: () => {
      throw new Error("not used")
    }
  }
  return { sent, connection }
}

const makeClient = (connection: Connection) =>
  Effect.runPromise(
    SqlClient.make({ acquirer: Effect.succeed(connection), compiler: PgClient.makeCompiler(), spanAttributes: [] }).pipe(
      Effect.provide(Reactivity.layer)
    )
  )

describe("@effect/sql", () => {
  it("a statement carries its acquirer (an Effect) and transformRows as own fields", async () => {
    const sql = await makeClient(recordingConnection().connection)
    const statement = sql`SELECT 1` as unknown as Record<string, unknown>
    expect(
      { acquirer: Effect.isEffect(statement.acquirer), transformRows: "transformRows" in statement },
      canary("@effect/sql", "StatementPrimitive#acquirer, #transformRows", "LeanStatements runs a statement on the connection its acquirer gives")
    ).toEqual({ acquirer: true, transformRows: true })
  })

  it("a statement's class defines commit, and the statement has none of its own", async () => {
    const sql = await makeClient(recordingConnection().connection)
    const statement = sql`SELECT 1`
    expect(
      {
        prototype: typeof (Object.getPrototypeOf(statement) as { commit?: unknown }).commit,
        own: Object.prototype.hasOwnProperty.call(statement, "commit")
      },
      canary("@effect/sql", "StatementPrimitive.prototype.commit", "LeanStatements shadows it with an own commit and calls the class's when traced")
    ).toEqual({ prototype: "function", own: false })
  })

  it("statement.compile() answers [text, params] in PostgreSQL's $n form", async () => {
    const sql = await makeClient(recordingConnection().connection)
    expect(
      sql`SELECT ${1} AS n`.compile(),
      canary("@effect/sql", "Statement#compile()", "LeanStatements compiles a statement itself before executing it")
    ).toEqual(["SELECT $1 AS n", [1]])
  })

  it("the client is a function whose methods are own enumerable properties", async () => {
    const sql = await makeClient(recordingConnection().connection)
    expect(
      { type: typeof sql, keys: ["unsafe", "withTransaction", "reserve", "safe"].filter((key) => Object.keys(sql).includes(key)) },
      canary("@effect/sql", "SqlClient's shape (Object.assign(statement constructor, methods))", "withLeanStatements copies the client onto its own tag function")
    ).toEqual({ type: "function", keys: ["unsafe", "withTransaction", "reserve", "safe"] })
  })

  it("withTransaction: BEGIN, nested SAVEPOINT effect_sql_1 … ROLLBACK TO SAVEPOINT effect_sql_1, COMMIT; TransactionConnection is [connection, depth]", async () => {
    const { connection, sent } = recordingConnection()
    const sql = await makeClient(connection)
    const depths: Array<unknown> = []
    const depth = Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (found) =>
      Effect.sync(() => depths.push(Option.map(found, ([conn, n]) => [conn === connection, n]).pipe(Option.getOrNull))))
    await Effect.runPromise(
      sql.withTransaction(Effect.zipRight(depth, Effect.ignore(sql.withTransaction(Effect.zipRight(depth, Effect.fail("inner"))))))
    )
    expect(
      { sent, depths },
      canary("@effect/sql", "withTransaction's statements and savepoint names", "LeanStatements' own transactions use the same, so both kinds nest in each other")
    ).toEqual({
      sent: ["BEGIN", "SAVEPOINT effect_sql_1", "ROLLBACK TO SAVEPOINT effect_sql_1", "COMMIT"],
      depths: [[true, 0], [true, 1]]
    })
  })
})

describe("effect", () => {
  it("the runtime runs an Effectable through its commit property, so an own commit shadows the class's", () => {
    class Probe extends Effectable.Class<string> {
      commit() {
        return Effect.succeed("class")
      }
    }
    const probe = new Probe()
    ;(probe as { commit: () => Effect.Effect<string> }).commit = () => Effect.succeed("own")
    expect(Effect.runSync(probe), canary("effect", "the fiber runtime's OP_COMMIT calling op.commit()", "LeanStatements' own commit on each statement")).toBe(
      "own"
    )
  })
})

// -- @effect/sql-pg ------------------------------------------------------------------------

/** A pg client and pool that record how @effect/sql-pg drives them. */
const fakePgDriver = () => {
  const calls: Array<{ readonly args: number; readonly callback: boolean; readonly fiberSaysUnbounded: boolean | undefined }> = []
  const connects: Array<string> = []
  const client = Object.assign(new EventEmitter(), {
    processID: 1,
    release: () => {},
    query: (...args: ReadonlyArray<unknown>) => {
      const fiber = Fiber.getCurrentFiber()
      calls.push({
        args: args.length,
        callback: typeof args[2] === "function",
        fiberSaysUnbounded: Option.isSome(fiber) ? fiber.value.getFiberRef(unboundedQueries) : undefined
      })
      const done = args[2] as (error: Error | null, result: unknown) => void
      process.nextTick(() => done(null, { rows: [{ n: 1 }] }))
    }
  })
  const pool = {
    options: {},
    connect: (callback: unknown) => {
      connects.push(typeof callback)
      ;(callback as (error: undefined, c: unknown, release: () => void) => void)(undefined, client, () => {})
    },
    query: () => {}
  }
  return { client, pool, calls, connects }
}

const withPgClient = <A>(pool: object, f: (sql: PgClient.PgClient) => Effect.Effect<A, unknown, Scope.Scope>) =>
  Effect.runPromise(
    Effect.scoped(Effect.flatMap(PgClient.fromPool({ acquire: Effect.succeed(pool as unknown as Pg.Pool) }), f)).pipe(
      Effect.provide(Reactivity.layer)
    )
  )

describe("@effect/sql-pg", () => {
  it("a reserved connection carries its pg client as .pg", async () => {
    const driver = fakePgDriver()
    const pg = await withPgClient(driver.pool, (sql) => Effect.map(sql.reserve, (connection) => (connection as unknown as { pg?: unknown }).pg))
    expect(pg === driver.client, canary("@effect/sql-pg", "ConnectionImpl#pg", "PgGuard finds a reserved connection's TransactionPipeline through it")).toBe(true)
  })

  it("a reserved connection's statement calls client.query(text, params, callback) from the fiber that runs it", async () => {
    const driver = fakePgDriver()
    await withPgClient(driver.pool, (sql) =>
      Effect.flatMap(sql.reserve, (connection) => connection.execute("SELECT 1", [], undefined)).pipe(
        Effect.locally(unboundedQueries, true)
      ))
    expect(
      driver.calls,
      canary("@effect/sql-pg", "ConnectionImpl.run → client.query(text, params, callback), synchronously", "PgGuard routes callback queries and reads the fiber's unboundedQueries there")
    ).toEqual([{ args: 3, callback: true, fiberSaysUnbounded: true }])
  })

  it("a pooled statement acquires with pool.connect(callback)", async () => {
    const driver = fakePgDriver()
    await withPgClient(driver.pool, (sql) => sql`SELECT 1`)
    expect(
      { connects: driver.connects, queries: driver.calls.map((call) => call.callback) },
      canary("@effect/sql-pg", "pooled statements via pool.connect(callback) and client.query(…, callback)", "PgGuard's pool.connect wrapper and BoundedClient.query see them")
    ).toEqual({ connects: ["function"], queries: [true] })
  })
})

// -- @electric-sql/pglite ------------------------------------------------------------------

describe("@electric-sql/pglite", () => {
  let db: PGlite
  beforeAll(async () => {
    db = new PGlite()
    await db.waitReady
  }, 120_000)
  afterAll(() => db?.close())

  const S = protocol.serialize
  const join = (parts: ReadonlyArray<Uint8Array>) => Buffer.concat(parts.map((part) => Buffer.from(part)))
  const send = (parts: ReadonlyArray<Uint8Array>) => db.execProtocolStream(join(parts), { syncToFs: false })

  it("protocol.serialize has the messages the thread builds", () => {
    expect(
      ["parse", "describe", "bind", "execute", "sync", "close", "query"].map((name) => typeof (S as Record<string, unknown>)[name]),
      canary("@electric-sql/pglite", "protocol.serialize (its bundled pg-protocol)", "PgliteWorkerThread sends named statements by the wire protocol")
    ).toEqual(Array(7).fill("function"))
  })

  it("execProtocolStream answers parsed messages: Parse/Describe give parameterDescription.dataTypeIDs and rowDescription.fields", async () => {
    const messages = await send([S.parse({ name: "canary_1", text: "SELECT $1::int AS n", types: [] }), S.describe({ type: "S", name: "canary_1" }), S.sync()])
    const find = (name: string) => messages.find((m) => m.name === name) as unknown as Record<string, unknown> | undefined
    expect(
      {
        names: messages.map((m) => m.name),
        types: find("parameterDescription")?.dataTypeIDs,
        fields: (find("rowDescription")?.fields as Array<{ name: string; dataTypeID: number }> | undefined)?.map((f) => [f.name, f.dataTypeID])
      },
      canary("@electric-sql/pglite", "PGlite#execProtocolStream and its parsed messages", "PgliteWorkerThread prepares a statement and reads its Describe")
    ).toEqual({
      names: ["parseComplete", "parameterDescription", "rowDescription", "readyForQuery"],
      types: [23],
      fields: [["n", 23]]
    })
  })

  it("Bind/Execute answer bindComplete, dataRow.fields as text, commandComplete.text, readyForQuery", async () => {
    await send([S.parse({ name: "canary_2", text: "SELECT $1::int AS n", types: [] }), S.sync()])
    const messages = await send([S.bind({ statement: "canary_2", values: ["41"] }), S.execute({}), S.sync()])
    expect(
      messages.map((m) => [m.name, (m as unknown as { fields?: unknown }).fields ?? (m as unknown as { text?: unknown }).text ?? null]),
      canary("@electric-sql/pglite", "dataRow/commandComplete message shapes", "PgliteWorkerThread parses a named statement's rows and affected count")
    ).toEqual([["bindComplete", null], ["dataRow", ["41"]], ["commandComplete", "SELECT 1"], ["readyForQuery", null]])
  })

  it("execProtocolStream runs every message after an error, then throws the first error", async () => {
    const failure = await send([S.query("SELECT no_such_column"), S.query("CREATE TABLE canary_after_error (id int)")]).then(
      () => undefined,
      (error: { code?: string }) => error.code
    )
    const created = await db.query<{ t: string | null }>("SELECT to_regclass('canary_after_error')::text AS t")
    expect(
      { failure, created: created.rows[0]?.t },
      canary("@electric-sql/pglite", "execProtocolStream's error after the whole batch", "a failed named statement's COMMIT still runs and ends the transaction")
    ).toEqual({ failure: "42703", created: "canary_after_error" })
  })

  it("execProtocolRawStream hands the answer's bytes to onRawData unparsed, an error's included, without throwing", async () => {
    await send([S.parse({ name: "canary_3", text: "SELECT $1::int AS n", types: [] }), S.sync()])
    const chunks: Array<Uint8Array> = []
    await db.execProtocolRawStream(
      join([S.bind({ statement: "canary_3", values: ["7"] }), S.execute({}), S.sync(), S.query("SELECT no_such_column")]),
      { syncToFs: false, onRawData: (chunk) => void chunks.push(chunk.slice()) }
    )
    const bytes = Buffer.concat(chunks)
    const types: Array<string> = []
    for (let at = 0; at < bytes.length; at += 1 + bytes.readInt32BE(at + 1)) types.push(String.fromCharCode(bytes[at]!))
    expect(
      types,
      canary("@electric-sql/pglite", "PGlite#execProtocolRawStream and onRawData", "PgliteWorkerThread hands a named statement's answer to the main thread unparsed (BackendMessages reads it)")
    ).toEqual(["2", "D", "C", "Z", "E", "Z"])
  })

  it("runExclusive runs a function alone and answers its result", async () => {
    expect(
      await db.runExclusive(async () => 42),
      canary("@electric-sql/pglite", "PGlite#runExclusive", "PgliteWorkerThread holds PGlite's lock across a named statement's messages")
    ).toBe(42)
  })

  it("serializers and parsers are keyed by type OID", () => {
    const parse = db.parsers[23] as ((value: string, type: number) => unknown) | undefined
    expect(
      { parsed: parse?.("41", 23), serializer: typeof db.serializers[114] },
      canary("@electric-sql/pglite", "PGlite#parsers / #serializers by OID", "PgliteWorkerThread converts a named statement's parameters and rows as query() does")
    ).toEqual({ parsed: 41, serializer: "function" })
  })
})

// -- @effect/platform, @effect/platform-node, @effect/platform-node-shared ---------------------

describe("@effect/platform request bodies", () => {
  it("a web request's text is cached in its own textEffect field, which json reads through", async () => {
    const request = HttpServerRequest.fromWeb(new Request("http://localhost/", { method: "POST", body: "{\"sent\":true}" }))
    const has = "textEffect" in request
    ;(request as unknown as { textEffect: Effect.Effect<string> }).textEffect = Effect.succeed("{\"replaced\":true}")
    const body = await Effect.runPromise(request.json)
    expect(
      { has, body },
      canary("@effect/platform", "ServerRequestImpl#textEffect (web requests)", "BodyGuard replaces how a request reads its body")
    ).toEqual({ has: true, body: { replaced: true } })
  })

  it("a Node request's text is cached in its own textEffect field, which json reads through", async () => {
    const app = Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const has = "textEffect" in request
      ;(request as unknown as { textEffect: Effect.Effect<string> }).textEffect = Effect.succeed("{\"replaced\":true}")
      const body = yield* request.json
      return yield* HttpServerResponse.json({ has, body })
    })
    const answer = await Effect.runPromise(
      Effect.gen(function*() {
        yield* HttpServer.serveEffect(Effect.orDie(app))
        const client = yield* HttpClient.HttpClient
        const response = yield* client.execute(HttpClientRequest.bodyText(HttpClientRequest.post("/"), "{\"sent\":true}", "application/json"))
        return yield* response.json
      }).pipe(Effect.scoped, Effect.provide(NodeHttpServer.layerTest))
    )
    expect(
      answer,
      canary("@effect/platform-node", "HttpIncomingMessageImpl#textEffect (Node requests)", "BodyGuard reads a Node body capped and depth-checked through it")
    ).toEqual({ has: true, body: { replaced: true } })
  })

  it("a body over maxBytes fails with \"maxBytes exceeded\", which isBodyTooLarge recognises", async () => {
    const error = await Effect.runPromise(
      Effect.flip(NodeStream.toString(() => Readable.from([Buffer.from("x".repeat(64))]), { onFailure: (e) => e as Error, maxBytes: 8 }))
    )
    const request = HttpServerRequest.fromWeb(new Request("http://localhost/"))
    expect(
      { message: error.message, recognised: isBodyTooLarge(new HttpServerError.RequestError({ request, reason: "Decode", cause: error })) },
      canary("@effect/platform-node-shared", "NodeStream's \"maxBytes exceeded\" error", "ErrorResponses answers 413 for it, through BodyGuard.isBodyTooLarge")
    ).toEqual({ message: "maxBytes exceeded", recognised: true })
  })
})
