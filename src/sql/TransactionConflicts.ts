import { type Cause, Effect } from "effect"
import { isTransactionConflict } from "./DatabaseFailures.js"

/**
 * Transactions PostgreSQL ended to let another go on (`isTransactionConflict`: a deadlock, a
 * serialization failure, or a lock an undo asked for without waiting) wrote nothing, and
 * PostgreSQL's advice is to run them again. Two writes of one user can lock the same rows in
 * opposite orders (a redo locks its undo entry and then the rows it restores; any write locks
 * its rows and then purges the redo stack, that entry included), and no lock order of ours
 * could rule that out for every pair. A conflict is answered by running the transaction
 * again, at most this many times.
 */
export const CONFLICT_RETRIES = 3

/**
 * Whether to run a transaction that ended with `cause` again, `attempt` runs in; logs it when so.
 * Called once the transaction has rolled back and its connection is back in the pool.
 */
export const runAgainAfter = (cause: Cause.Cause<unknown>, attempt: number): Effect.Effect<boolean> =>
  attempt < CONFLICT_RETRIES && isTransactionConflict(cause)
    ? Effect.as(
      Effect.logWarning(
        `PostgreSQL ended a transaction for a conflict with another (deadlock or serialization failure); running it again (${
          attempt + 1
        } of ${CONFLICT_RETRIES})`
      ),
      true
    )
    : Effect.succeed(false)

/** Runs `transaction` (an outermost one) again while PostgreSQL ends it for a conflict. */
export const retryingConflicts = <A, E, R>(transaction: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  const attempt = (n: number): Effect.Effect<A, E, R> =>
    Effect.catchAllCause(
      transaction,
      (cause) => Effect.flatMap(runAgainAfter(cause, n), (again) => again ? attempt(n + 1) : Effect.failCause(cause))
    )
  return attempt(0)
}
