import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, FiberRef, Stream } from "effect"
import { answersAtOnce, commitWithNextStatement } from "../sql/PgGuard.js"
import { AnswersAtOnce, CommitWithNext } from "../sql/TransactionPipeline.js"

/**
 * A mutation's commit statement handed to the keyed request around it (Idempotency-Key,
 * issue 14) instead of sent: the request's record of its answer then goes out as one more
 * CTE of that statement, with COMMIT in the same message, so a keyed write costs no round
 * trip more than an unkeyed one.
 */
export interface PendingCommit {
  /**
   * Sends the commit statement, with `record` (given the SQL of the wire text the
   * statement renders, where it renders one) evaluated by it, and answers that wire text.
   */
  readonly send: (record: ((wire: Fragment | undefined) => Fragment) | undefined) => Effect.Effect<string | null, SqlError>
}

/** One keyed request's slot: the first mutation nested in it may leave its commit statement here. */
export interface Handover {
  /** Taken by the first mutation; later ones send their own. */
  used: boolean
  pending: PendingCommit | undefined
  /** The wire text of a pending statement that had to go out early (see `flushing`). */
  flushedWire: string | null
}

/** A plain value, not an Option: see `AfterCommit`'s FiberRef. */
export const commitHandover = FiberRef.unsafeMake<Handover | undefined>(undefined)

export const makeHandover = (): Handover => ({ used: false, pending: undefined, flushedWire: null })

/** Sends a pending commit statement on its own, if one waits. */
const flush = (handover: Handover): Effect.Effect<void, SqlError> =>
  Effect.suspend(() => {
    const pending = handover.pending
    if (pending === undefined) return Effect.void
    handover.pending = undefined
    return Effect.map(pending.send(undefined), (wire) => {
      handover.flushedWire = wire
    })
  })

/**
 * The keyed request's connection as its handler sees it: any statement sent after a
 * mutation handed its commit statement over sends that first, so what the handler reads
 * next sees the mutation's writes. A class, not a copy of the connection with closures: one
 * is made per keyed request, on the write path.
 */
class FlushingConnection implements Connection {
  constructor(readonly connection: Connection, readonly handover: Handover) {}

  private after<A>(statement: () => Effect.Effect<A, SqlError>) {
    return Effect.suspend(() =>
      this.handover.pending === undefined ? statement() : Effect.zipRight(flush(this.handover), Effect.suspend(statement))
    )
  }

  /** COMMIT with the next statement, as the connection underneath does it. */
  [CommitWithNext]() {
    return commitWithNextStatement(this.connection)
  }

  /**
   * As the connection underneath, while no commit statement waits: one that does must go
   * out before anything held now (a SAVEPOINT held ahead of it could roll it back).
   */
  [AnswersAtOnce](text: string) {
    return this.handover.pending === undefined && answersAtOnce(this.connection, text)
  }

  readonly execute: Connection["execute"] = (text, params, transformRows) =>
    this.after(() => this.connection.execute(text, params, transformRows))
  readonly executeRaw: Connection["executeRaw"] = (text, params) => this.after(() => this.connection.executeRaw(text, params))
  readonly executeValues: Connection["executeValues"] = (text, params) =>
    this.after(() => this.connection.executeValues(text, params))
  readonly executeUnprepared: Connection["executeUnprepared"] = (text, params, transformRows) =>
    this.after(() => this.connection.executeUnprepared(text, params, transformRows))
  readonly executeStream: Connection["executeStream"] = (text, params, transformRows) =>
    Stream.unwrap(Effect.as(flush(this.handover), this.connection.executeStream(text, params, transformRows)))
}

export const flushing = (connection: Connection, handover: Handover): Connection => new FlushingConnection(connection, handover)
