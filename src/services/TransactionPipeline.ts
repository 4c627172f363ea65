import Pg from "pg"

/**
 * BEGIN and COMMIT without round trips of their own (issue 12 item 5). A transaction from
 * `withTransaction` used to be BEGIN, its statements and COMMIT, each waiting for the
 * previous answer. Now a connection holds BEGIN back and sends it in one pipeline with the
 * transaction's first statement (one Sync, one answer), and a caller that knows which
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

/** A query sent as [BEGIN] statement [COMMIT] with one Sync. */
class PipelinedQuery extends (Pg.Query as unknown as new(config: object, values?: unknown, callback?: Done) => object) {
  constructor(config: object, readonly begin: boolean, readonly commit: boolean, callback: Done) {
    super(config, undefined, callback)
  }

  prepare(connection: PgConnection) {
    if (this.begin) bare(connection, "BEGIN")
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

/** The statement's own result(s) out of a pipeline's, without BEGIN's and COMMIT's. */
const ownResults = (result: unknown, begin: boolean, commit: boolean): unknown => {
  if (!Array.isArray(result)) return result
  const own = result.slice(begin ? 1 : 0, commit ? result.length - 1 : result.length) as Array<Result>
  return own.length === 1 ? own[0] : own
}

const answerNow = (done: Done) => process.nextTick(() => done(null, { rows: [], command: null, rowCount: null }))

/** What to do with one query on a connection (see `TransactionPipeline.route`). */
export type Route =
  /** Answered here, nothing sent (a held-back BEGIN, or COMMIT already sent). */
  | { readonly _tag: "AnswerNow" }
  /** Sent as this submittable (a pipeline). */
  | { readonly _tag: "Pipeline"; readonly query: object }
  /** Sent as asked; `flushBegin` first sends the held-back BEGIN on its own. */
  | { readonly _tag: "Send"; readonly flushBegin: boolean }

/** One connection's pipeline state. */
export class TransactionPipeline {
  private beginHeld = false
  private commitNext = false
  private committed = false

  /** For a query that cannot be pipelined: whether a held-back BEGIN must go out first. */
  takeHeldBegin(): boolean {
    const held = this.beginHeld
    this.beginHeld = false
    return held
  }

  /** The caller's next statement is the transaction's last: COMMIT goes with it. */
  commitWithNext(): void {
    this.commitNext = true
  }

  /**
   * Decides how `text` goes out. `named` is the prepared form of a parameterized
   * statement (or undefined); `done` receives the statement's own answer.
   */
  route(text: unknown, values: unknown, named: object | undefined, done: Done): Route {
    if (typeof text !== "string") {
      if (!this.beginHeld) return { _tag: "Send", flushBegin: false }
      this.beginHeld = false
      return { _tag: "Send", flushBegin: true }
    }
    if (text === "BEGIN" && !this.beginHeld) {
      this.beginHeld = true
      this.committed = false
      answerNow(done)
      return { _tag: "AnswerNow" }
    }
    if (text === "COMMIT" || text === "ROLLBACK") {
      this.commitNext = false
      // An empty transaction: nothing was sent, so nothing ends.
      if (this.beginHeld) {
        this.beginHeld = false
        answerNow(done)
        return { _tag: "AnswerNow" }
      }
      if (this.committed && text === "COMMIT") {
        this.committed = false
        answerNow(done)
        return { _tag: "AnswerNow" }
      }
      this.committed = false
      return { _tag: "Send", flushBegin: false }
    }
    const begin = this.beginHeld
    const commit = this.commitNext
    if (!begin && !commit) return { _tag: "Send", flushBegin: false }
    this.beginHeld = false
    this.commitNext = false
    const settle: Done = (error, result) => {
      if (commit && (error === null || error === undefined)) this.committed = true
      done(error, error ? undefined : ownResults(result, begin, commit))
    }
    const parameterized = Array.isArray(values) && values.length > 0
    if (!parameterized) {
      // The simple protocol takes several statements in one string.
      const joined = `${begin ? "BEGIN;\n" : ""}${text}${commit ? ";\nCOMMIT" : ""}`
      return { _tag: "Pipeline", query: new PipelinedQuery({ text: joined, queryMode: "simple" }, false, false, (error, result) => settle(error, result)) }
    }
    const config = named ?? { text, values }
    return { _tag: "Pipeline", query: new PipelinedQuery(config, begin, commit, settle) }
  }
}
