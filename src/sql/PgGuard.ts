import { Effect, Fiber, FiberRef, Option } from "effect"
import Pg from "pg"
import { afterFailure, DEFAULT_CAPACITY, namedQuery, StatementCache } from "./PreparedStatements.js"
import { AnswersAtOnce, CommitWithNext, TransactionPipeline } from "./TransactionPipeline.js"

/**
 * Client-side bounds on a PostgreSQL server that may be down or frozen. `statement_timeout`
 * only helps while the server answers; a blackholed host never sends the cancel, so every
 * query also gets a timer here, and a connection whose query ran past it is destroyed (a
 * stray statement still in flight must not reach the next borrower).
 */

/** A query the server did not answer within the client-side bound. */
export class QueryTimedOut extends Error {
  constructor(readonly afterMs: number) {
    super(`PostgreSQL did not answer a query within ${afterMs} ms`)
    this.name = "QueryTimedOut"
  }
}

/** Failures met while the server was known to be unreachable: the outage is logged once, not each of these. */
const duringOutage = new WeakSet<object>()
export const isOutageFailure = (error: unknown): boolean => typeof error === "object" && error !== null && duringOutage.has(error)

const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "EHOSTUNREACH",
  "EHOSTDOWN",
  "ENETUNREACH",
  "ENETDOWN",
  "ENOTFOUND",
  "EAI_AGAIN"
])
/** admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections. */
const SERVER_DOWN_CODES = new Set(["57P01", "57P02", "57P03", "53300"])
/** The statement ran past `statement_timeout` (or was cancelled): the server is up but slow. */
export const QUERY_CANCELED = "57014"

const CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|^timeout expired$|is not queryable|Client was closed|connection error/i

const codeOf = (error: object): string | undefined => {
  const code = (error as { code?: unknown }).code
  return typeof code === "string" ? code : undefined
}

/** The server cannot be reached or has gone away (as opposed to a statement it refused). */
export const isConnectionFailure = (error: unknown): boolean => {
  if (typeof error !== "object" || error === null) return false
  if (error instanceof QueryTimedOut) return true
  const code = codeOf(error)
  if (code !== undefined && (NETWORK_CODES.has(code) || SERVER_DOWN_CODES.has(code) || code.startsWith("08"))) return true
  return error instanceof Error && CONNECTION_MESSAGES.test(error.message)
}

/** Whether a failure means "try again later" (503) rather than a bug (500). */
export const isUnavailable = (error: unknown): boolean =>
  isConnectionFailure(error) || (typeof error === "object" && error !== null && codeOf(error) === QUERY_CANCELED)

/** Queries of the fiber running with this set get no client-side bound (migrations). */
export const unboundedQueries = FiberRef.unsafeMake(false)

/** Runs `self` with no client-side query bound, for work that may legitimately take long. */
export const withoutQueryBound = <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.locally(self, unboundedQueries, true)

/**
 * @effect/sql-pg issues a reserved connection's queries synchronously from the fiber that
 * runs them, so that fiber's setting is visible here; pooled one-off queries run from pg's
 * callbacks with no fiber and are always bounded.
 */
const boundedHere = () =>
  Option.match(Fiber.getCurrentFiber(), { onNone: () => true, onSome: (fiber) => !fiber.getFiberRef(unboundedQueries) })

export interface OutageReport {
  readonly down: (reason: string) => void
  readonly up: (downForMs: number) => void
}

/**
 * While a server goes down, connections fail one by one and some still answer in between;
 * an outage ends only with an answer after this long without a failure, so it is reported
 * once rather than once per dying connection.
 */
export const RECOVERY_QUIET_MS = 1000

/** Up or down, from what the connections meet; reports each change once. */
export class OutageTracker {
  private downSince: number | undefined = undefined
  private lastFailure = 0
  constructor(
    private readonly report: OutageReport,
    private readonly quietMs = RECOVERY_QUIET_MS,
    // A monotonic timer for durations only; no wall-clock "now" is involved.
    private readonly elapsed: () => number = () => performance.now()
  ) {}

  get isDown() {
    return this.downSince !== undefined
  }

  failed(error: unknown) {
    this.lastFailure = this.elapsed()
    if (this.downSince !== undefined) return
    this.downSince = this.lastFailure
    this.report.down(describe(error))
  }

  answered() {
    if (this.downSince === undefined) return
    const now = this.elapsed()
    if (now - this.lastFailure < this.quietMs) return
    const downFor = now - this.downSince
    this.downSince = undefined
    this.report.up(downFor)
  }

  /** Marks a failure met while down, so nobody logs it again. */
  mark(error: unknown) {
    if (this.isDown && typeof error === "object" && error !== null) duringOutage.add(error)
  }
}

const describe = (error: unknown): string => {
  if (typeof error !== "object" || error === null) return String(error)
  const code = codeOf(error)
  const message = error instanceof Error && error.message !== "" ? error.message : code ?? "unknown error"
  return code !== undefined && !message.includes(code) ? `${message} (${code})` : message
}

type Callback = (error: Error | null, result?: unknown) => void

/** A pg Client whose queries are bounded and whose outcomes feed the tracker. */
const boundedClient = (tracker: OutageTracker, queryBoundMs: number, preparedStatements: number) =>
  class BoundedClient extends Pg.Client {
    private readonly statements = new StatementCache(preparedStatements)
    readonly transactions = new TransactionPipeline()

    /** pg's own `query`, whose overloads cannot be forwarded through a typed signature. */
    private send(...args: ReadonlyArray<unknown>): unknown {
      return (super.query as unknown as (...a: ReadonlyArray<unknown>) => unknown)(...args)
    }

    /** A statement whose answer nobody waits for (held BEGIN/SAVEPOINT, DEALLOCATE). */
    private sendAside(text: string): void {
      this.send(text, () => undefined)
    }

    /** The connection's record of parsed statements (pg/lib/connection.js). */
    private get parsed(): { parsedStatements: Record<string, string | undefined> } | undefined {
      return (this as unknown as { connection?: { parsedStatements: Record<string, string | undefined> } }).connection
    }

    /**
     * Drops a named statement the server really holds (one pg saw parsed): DEALLOCATE of an
     * unknown name would fail and abort the transaction it is sent in.
     */
    private readonly deallocate = (name: string) => {
      const parsed = this.parsed
      if (parsed?.parsedStatements[name] === undefined) return
      delete parsed.parsedStatements[name]
      this.sendAside(`DEALLOCATE ${name}`)
    }

    override connect(callback?: any): any {
      const observe = (error: Error | null | undefined) => {
        if (error) {
          tracker.failed(error)
          tracker.mark(error)
        }
      }
      if (callback === undefined) {
        return super.connect().then(
          () => undefined,
          (error: Error) => {
            observe(error)
            throw error
          }
        )
      }
      return (super.connect as (cb: (error: Error | null) => void) => void)((error) => {
        observe(error)
        ;(callback as (error: Error | null) => void)(error)
      })
    }

    override query(config: any, values?: any, callback?: any): any {
      const valuesIsCallback = typeof values === "function"
      const done: unknown = valuesIsCallback ? values : callback
      // Promise-style and submittable (cursor) queries are not issued by @effect/sql-pg's
      // statement path; they pass through unchanged.
      if (typeof done !== "function") {
        for (const held of this.transactions.takeHeld()) this.sendAside(held)
        return this.send(config, values, callback)
      }
      const bound = boundedHere() ? queryBoundMs : undefined
      let settled = false
      const timer = bound === undefined ? undefined : setTimeout(() => {
        if (settled) return
        settled = true
        const error = new QueryTimedOut(bound)
        tracker.failed(error)
        tracker.mark(error)
        // `end` with a query in flight destroys the socket, and `_ending` makes the pool drop
        // this client on release instead of lending it out again.
        this.end().catch(() => undefined)
        ;(done as Callback)(error)
      }, bound)
      const named = namedQuery(this.statements, config, valuesIsCallback ? undefined : values, this.deallocate)
      const finish: Callback = (error, result) => {
        if (settled) return
        settled = true
        if (timer !== undefined) clearTimeout(timer)
        if (named !== undefined && error !== null && error !== undefined) {
          afterFailure(this.statements, named, error, this.parsed, this.deallocate)
        }
        if (error === null || error === undefined) tracker.answered()
        else if (isConnectionFailure(error)) {
          tracker.failed(error)
          tracker.mark(error)
        } else tracker.mark(error)
        ;(done as Callback)(error, result)
      }
      const route = this.transactions.route(config, valuesIsCallback ? undefined : values, named, finish)
      if (route._tag === "AnswerNow") return undefined
      if (route._tag === "Pipeline") return this.send(route.query)
      for (const held of route.first) this.sendAside(held)
      if (named !== undefined) return this.send(named, finish)
      return valuesIsCallback ? this.send(config, finish) : this.send(config, values, finish)
    }
  }

export interface GuardedPoolOptions {
  readonly url: string
  readonly max: number
  readonly acquireTimeoutMs: number
  readonly queryBoundMs: number
  readonly statementTimeoutMs: number
  readonly tracker: OutageTracker
  /** Statements each connection keeps prepared (0: none, every statement unnamed). */
  readonly preparedStatements?: number
}

/**
 * The pool: acquiring a connection (queue wait or a new connection) is bounded by pg-pool's
 * `connectionTimeoutMillis`, which covers both; each query by the client's own timer.
 */
export const makeGuardedPool = (options: GuardedPoolOptions) => {
  const pool = new Pg.Pool({
    connectionString: options.url,
    max: options.max,
    connectionTimeoutMillis: options.acquireTimeoutMs,
    idleTimeoutMillis: 30_000,
    statement_timeout: options.statementTimeoutMs,
    options: "-c TimeZone=UTC",
    application_name: "steady",
    Client: boundedClient(options.tracker, options.queryBoundMs, options.preparedStatements ?? DEFAULT_CAPACITY) as unknown as new() => Pg.ClientBase
  })
  // Queue-wait timeouts come from the pool, not from a client: mark them while down too.
  const connect = pool.connect.bind(pool) as (cb: (error: Error | undefined, client?: Pg.PoolClient, done?: unknown) => void) => void
  ;(pool as any).connect = (callback?: (error: Error | undefined, client?: Pg.PoolClient, done?: unknown) => void) => {
    if (callback === undefined) {
      return new Promise<Pg.PoolClient>((resolve, reject) =>
        connect((error, client) => (error ? (options.tracker.mark(error), reject(error)) : resolve(client!)))
      )
    }
    return connect((error, client, done) => {
      if (error) options.tracker.mark(error)
      callback(error, client, done)
    })
  }
  return pool
}

/** A server connection's pipeline (a reserved `pg` client's), if `connection` is one. */
const pipelineOf = (connection: unknown): TransactionPipeline | undefined => {
  const pipeline = (connection as { pg?: { transactions?: unknown } } | undefined)?.pg?.transactions
  return pipeline instanceof TransactionPipeline ? pipeline : undefined
}

/**
 * Calls the method `connection` provides under `key` itself (the embedded client's, a keyed
 * request's) with `args`; undefined when it has none.
 */
const callOwn = (connection: unknown, key: symbol, args: ReadonlyArray<unknown>): boolean | undefined => {
  const own = (connection as Record<symbol, unknown> | undefined)?.[key]
  return typeof own === "function" ? Reflect.apply(own, connection, args) as boolean : undefined
}

/**
 * Has COMMIT sent in one pipeline with the next statement of the transaction on `connection`
 * (a `TransactionConnection`'s connection): a server connection's pipeline, or the embedded
 * database's client, which does the same across its thread. False where that cannot be
 * done, and the caller's COMMIT then goes out on its own.
 */
export const commitWithNextStatement = (connection: unknown): boolean => {
  const own = callOwn(connection, CommitWithNext, [])
  if (own !== undefined) return own
  const pipeline = pipelineOf(connection)
  pipeline?.commitWithNext()
  return pipeline !== undefined
}

/**
 * Whether the connection (a `TransactionConnection`'s, or one reserved for a transaction)
 * takes the control statement `text` without a round trip (`TransactionPipeline.answersAtOnce`):
 * a server connection's pipeline, or a connection that answers for itself. False: send it.
 */
export const answersAtOnce = (connection: unknown, text: string): boolean =>
  callOwn(connection, AnswersAtOnce, [text]) ?? pipelineOf(connection)?.answersAtOnce(text) ?? false
