import { SqlError } from "@effect/sql/SqlError"
import { Cause, Data, Duration, Effect, Option } from "effect"
import { isOutageFailure, isUnavailable } from "./PgGuard.js"

/** A failure that means the database could not serve the request now: a 503, not a 500. */
export interface Unavailable {
  readonly reason: string
  /** Met during an outage the database layer has already logged. */
  readonly logged: boolean
}

/** The fields of the PostgreSQL error a statement's SqlError wraps (`code`: its SQLSTATE). */
export const pgFieldsOf = (error: unknown): { readonly code?: unknown; readonly constraint?: unknown } | undefined => {
  const cause = error instanceof SqlError ? error.cause : undefined
  return typeof cause === "object" && cause !== null ? cause : undefined
}

/** The error and its `cause` chain (a SqlError wraps pg's error). */
const chain = (error: unknown): ReadonlyArray<unknown> => {
  const out: Array<unknown> = []
  let current = error
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    out.push(current)
    current = (current as { cause?: unknown }).cause
  }
  return out
}

const unavailableIn = (error: unknown): Option.Option<Unavailable> => {
  const links = chain(error)
  const found = links.find(isUnavailable)
  if (found === undefined) return Option.none()
  return Option.some({
    reason: found instanceof Error ? found.message : String(found),
    logged: links.some(isOutageFailure)
  })
}

/**
 * Every failure and defect of `cause`: a rollback failing after the statement counts too, and
 * statements of a write die on a SqlError (`Effect.orDie`).
 */
const errorsOf = (cause: Cause.Cause<unknown>): ReadonlyArray<unknown> => [...Cause.failures(cause), ...Cause.defects(cause)]

export const databaseUnavailable = (cause: Cause.Cause<unknown>): Option.Option<Unavailable> => {
  for (const error of errorsOf(cause)) {
    const found = unavailableIn(error)
    if (Option.isSome(found)) return found
  }
  return Option.none()
}

/**
 * SQLSTATEs of a transaction ended to let another go on: deadlock, serialization failure, and
 * a lock asked for without waiting that another transaction held (lock_not_available; only an
 * undo or redo that must not wait asks so, see UndoService).
 */
const CONFLICTS: ReadonlySet<unknown> = new Set(["40P01", "40001", "55P03"])

/** An advisory lock asked for without waiting was held by another transaction: lock_not_available. */
export class RowsTaken extends Data.TaggedError("RowsTaken") {
  readonly code = "55P03"
}

/**
 * Whether PostgreSQL ended the transaction for a conflict with another (nothing of it was
 * written; `TransactionConflicts` runs it again).
 */
export const isTransactionConflict = (cause: Cause.Cause<unknown>): boolean =>
  errorsOf(cause).some((error) => chain(error).some((link) => CONFLICTS.has((link as { code?: unknown }).code)))

/**
 * For background work: a database outage is logged once by the database layer, so a fiber
 * failing on it stays quiet; a slow statement is one line; anything else keeps its stack.
 */
export const logFailure = (message: string, cause: Cause.Cause<unknown>, level: "error" | "warning" = "error") =>
  Option.match(databaseUnavailable(cause), {
    onNone: () => level === "error" ? Effect.logError(message, cause) : Effect.logWarning(message, cause),
    onSome: (unavailable) =>
      unavailable.logged ? Effect.logDebug(`${message}: ${unavailable.reason}`) : Effect.logWarning(`${message}: ${unavailable.reason}`)
  })

/**
 * Stops waiting for `self` after `timeout` (failing with "timed out") without interrupting
 * it: interrupting a pg query queues a cancel behind the same dead server and can lend the
 * connection out with the query still on it. The query goes on in the background until it
 * finishes or meets the pool's client-side bound. Routes run uninterruptibly, so `self` is
 * made uninterruptible on its own and only the wait is made interruptible (a bare
 * `Effect.disconnect` inside an uninterruptible region would still wait to the end).
 */
export const giveUpAfter = (timeout: Duration.DurationInput) => <A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(
    Effect.uninterruptible,
    Effect.disconnect,
    Effect.interruptible,
    Effect.timeoutFail({ duration: timeout, onTimeout: () => new Error("timed out") })
  )
