import Pg from "pg"

/**
 * BEGIN and COMMIT without round trips of their own. A transaction from
 * `withTransaction` used to be BEGIN, its statements and COMMIT, each waiting for the
 * previous answer. Now a connection holds BEGIN (and a nested transaction's SAVEPOINT) back
 * and sends it in one pipeline with the next statement (one Sync, one answer); a ROLLBACK
 * TO a savepoint that never went out is answered without a round trip. A caller that knows which
 * statement is its last (the mutation pipeline's commit statement) has COMMIT sent in the
 * same pipeline after it. The statements, their order and the transaction's outcome are
 * exactly those of the separate round trips:
 * - the server runs the pipeline in order and skips the rest of it after an error, so a
 *   failed statement leaves COMMIT unrun and the caller's ROLLBACK follows as before;
 * - a failed COMMIT is the statement's failure (the transaction is gone); the caller's
 *   ROLLBACK then only draws a warning.
 * The answer handed back is the statement's own, without BEGIN's and COMMIT's.
 */

type Done = (error: Error | null, result?: unknown) => void

/**
 * A connection that can send COMMIT with its next statement by itself (the embedded
 * database's) has a method under this key; it answers whether it will.
 */
export const CommitWithNext: unique symbol = Symbol.for("steady/CommitWithNext")

/**
 * A connection that can tell, without sending anything, that a transaction's control
 * statement (BEGIN, SAVEPOINT, COMMIT, ROLLBACK …) needs no round trip has a method under
 * this key: true when it took the statement (held it, or found it answered already). The
 * caller then skips the query, and with it a timer, a callback and an asynchronous resume
 * (`LeanStatements.control`).
 */
export const AnswersAtOnce: unique symbol = Symbol.for("steady/AnswersAtOnce")

/** A query sent as [held statements] statement [COMMIT] with one Sync. */
class PipelinedQuery extends (Pg.Query as unknown as new(config: object, values?: unknown, callback?: Done) => object) {
  constructor(config: object, readonly before: ReadonlyArray<string>, readonly commit: boolean, callback: Done) {
    super(config, undefined, callback)
  }

  prepare(connection: PgConnection) {
    for (const text of this.before) bare(connection, text)
    ;(Pg.Query.prototype as unknown as { prepare: (c: PgConnection) => void }).prepare.call(this, connection)
  }

  _getRows(connection: PgConnection, rows: number | undefined) {
    connection.execute({ portal: (this as unknown as { portal: string }).portal, rows })
    if (this.commit) bare(connection, "COMMIT")
    connection.sync()
  }
}

interface PgConnection {
  parse(config: { text: string; name?: string }): void
  bind(config: object): void
  execute(config: { portal?: string; rows?: number | undefined }): void
  sync(): void
}

/** An unnamed parameterless statement, for the middle of a pipeline. */
const bare = (connection: PgConnection, text: string) => {
  connection.parse({ text, name: "" })
  connection.bind({})
  connection.execute({ portal: "", rows: 0 })
}

interface Result {
  readonly rows?: unknown
}

/** The statement's own result(s) out of a pipeline's, without the held ones' and COMMIT's. */
const ownResults = (result: unknown, before: number, commit: boolean): unknown => {
  if (!Array.isArray(result)) return result
  const own = result.slice(before, commit ? result.length - 1 : result.length) as Array<Result>
  return own.length === 1 ? own[0] : own
}

/** Statements that change nothing until a later one runs, so they can wait to go with it. */
const HOLDABLE = /^(BEGIN|SAVEPOINT \w+)$/
const ROLLBACK_TO = /^ROLLBACK TO SAVEPOINT (\w+)$/

/**
 * A transaction's BEGIN and SAVEPOINTs answered but not sent yet, in order: the bookkeeping
 * both clients share (a server connection's pipeline here, the embedded database's client
 * across its thread).
 */
export class HeldStatements {
  private held: Array<string> = []

  /**
   * Whether `text` is answered without going out: a BEGIN or SAVEPOINT, held; or a ROLLBACK
   * TO a savepoint that never went out, after which nothing happened either.
   */
  absorbs(text: string): boolean {
    if (HOLDABLE.test(text)) {
      this.held.push(text)
      return true
    }
    const rollbackTo = ROLLBACK_TO.exec(text)
    if (rollbackTo === null) return false
    const at = this.held.lastIndexOf(`SAVEPOINT ${rollbackTo[1]}`)
    if (at < 0) return false
    this.held = this.held.slice(0, at + 1)
    return true
  }

  /**
   * The held statements, to send before (or with) the next one. With a statement that
   * carries the transaction's COMMIT (`forCommit`) its SAVEPOINTs are left out: nothing can
   * roll back to them (the statement either commits the whole transaction or, failing,
   * leaves it aborted for the caller's ROLLBACK), and each one would have the server open a
   * subtransaction for nothing (a keyed write's savepoint, about a tenth of a small write's
   * database time).
   */
  take(forCommit = false): ReadonlyArray<string> {
    const held = this.held
    this.held = []
    return forCommit ? held.filter((text) => text === "BEGIN") : held
  }

  /** Whether the transaction has not started on the server yet (its BEGIN is still here). */
  startsUnsent(): boolean {
    return this.held[0] === "BEGIN"
  }

  /**
   * At COMMIT or ROLLBACK: forgets what is held, and says whether the transaction never
   * started on the server (its BEGIN is still here), so there is nothing to end.
   */
  endsUnsent(): boolean {
    return this.take()[0] === "BEGIN"
  }
}

const answerNow = (done: Done) => process.nextTick(() => done(null, { rows: [], command: null, rowCount: null }))

/** What to do with one query on a connection (see `TransactionPipeline.route`). */
export type Route =
  /** Answered here, nothing sent (a held-back BEGIN, or COMMIT already sent). */
  | { readonly _tag: "AnswerNow" }
  /** Sent as this submittable (a pipeline). */
  | { readonly _tag: "Pipeline"; readonly query: object }
  /** Sent as asked, after `first` (held statements that could not join it) on their own. */
  | { readonly _tag: "Send"; readonly first: ReadonlyArray<string> }

/** One connection's pipeline state. */
export class TransactionPipeline {
  private readonly held = new HeldStatements()
  private commitNext = false
  private committed = false

  /** For a query that cannot be pipelined: the held statements to send first, on their own. */
  takeHeld(): ReadonlyArray<string> {
    return this.held.take()
  }

  /** The caller's next statement is the transaction's last: COMMIT goes with it. */
  commitWithNext(): void {
    this.commitNext = true
  }

  /**
   * Takes `text` without sending anything when it needs no round trip: a BEGIN or SAVEPOINT
   * (held), a ROLLBACK TO a savepoint never sent, a COMMIT or ROLLBACK of a transaction none
   * of whose statements went out, a COMMIT that already went out with the last statement.
   */
  answersAtOnce(text: string): boolean {
    if (text === "BEGIN") this.committed = false
    if (this.held.absorbs(text)) return true
    if (text !== "COMMIT" && text !== "ROLLBACK") return false
    if (!this.held.startsUnsent() && !(this.committed && text === "COMMIT")) return false
    this.commitNext = false
    this.held.take()
    this.committed = false
    return true
  }

  /**
   * Decides how `text` goes out. `named` is the prepared form of a parameterized
   * statement (or undefined); `done` receives the statement's own answer.
   */
  route(text: unknown, values: unknown, named: object | undefined, done: Done): Route {
    if (typeof text !== "string") return { _tag: "Send", first: this.takeHeld() }
    if (this.answersAtOnce(text)) {
      answerNow(done)
      return { _tag: "AnswerNow" }
    }
    if (ROLLBACK_TO.test(text)) return { _tag: "Send", first: this.takeHeld() }
    if (text === "COMMIT" || text === "ROLLBACK") {
      this.commitNext = false
      // Savepoints never sent die with the transaction.
      this.held.take()
      this.committed = false
      // Savepoints never sent need no ending; the transaction they were in does.
      return { _tag: "Send", first: [] }
    }
    const commit = this.commitNext
    this.commitNext = false
    const before = this.held.take(commit)
    if (before.length === 0 && !commit) return { _tag: "Send", first: [] }
    const settle: Done = (error, result) => {
      if (commit && (error === null || error === undefined)) this.committed = true
      done(error, error ? undefined : ownResults(result, before.length, commit))
    }
    const parameterized = Array.isArray(values) && values.length > 0
    if (!parameterized) {
      // The simple protocol takes several statements in one string.
      const joined = [...before, text, ...(commit ? ["COMMIT"] : [])].join(";\n")
      return { _tag: "Pipeline", query: new PipelinedQuery({ text: joined }, [], false, settle) }
    }
    return { _tag: "Pipeline", query: new PipelinedQuery(named ?? { text, values }, before, commit, settle) }
  }
}
