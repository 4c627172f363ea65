import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import type { Connection } from "@effect/sql/SqlConnection"
import { Cause, Effect, Exit, Schema, Scope } from "effect"
import { CountRow } from "../kernel/Columns.js"
import { MAX_IDEMPOTENCY_KEYS_PER_USER } from "./IdempotencyKey.js"
import { holdingIn, runHeld } from "./AfterCommit.js"
import { type KeyedRequest, KeyRefused, isRefusal, lockName, recordSql, type StoredAnswer } from "./IdempotencyRecord.js"
import { locallyAll } from "../kernel/FiberLocals.js"
import { control, onTransactionConnection } from "../sql/LeanStatements.js"
import { commitWithNextStatement } from "../sql/PgGuard.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { spanWhenTraced } from "../kernel/Tracing.js"
import { CONFLICT_RETRIES, runAgainAfter } from "../sql/TransactionConflicts.js"
import { renderText, sqlText } from "../sql/SqlText.js"

export type { KeyedRequest, StoredAnswer } from "./IdempotencyRecord.js"

export type Outcome<A> =
  /** The write ran now; `value` is what it answered (stored with the key when it succeeded). */
  | { readonly _tag: "Ran"; readonly value: A }
  /** A retry: the first answer, unchanged. */
  | { readonly _tag: "Replay"; readonly answer: StoredAnswer }
  /** The first request with this key is still running. */
  | { readonly _tag: "Busy" }
  /** The key was first used for another request (method, path or body). */
  | { readonly _tag: "Mismatch" }

/** Leaves the transaction by rolling it back, with the outcome to answer. */
class RollBack<A> {
  constructor(readonly outcome: Outcome<A>) {}
}

/** What the lookup finds for a key holding only an expired record that nobody is running. */
const EXPIRED = Symbol("expired")

/**
 * What the lookup reads: whether the key's lock was free, and the key's record if it has one
 * (the columns are NOT NULL but `content_type`) or nulls from the outer join if not.
 */
const FoundRow = Schema.Union(
  Schema.Struct({
    free: Schema.Boolean,
    live: Schema.Boolean,
    fingerprint: Schema.String,
    status: Schema.Int,
    content_type: Schema.NullOr(Schema.String),
    body: Schema.String
  }),
  Schema.Struct({
    free: Schema.Boolean,
    live: Schema.Null,
    fingerprint: Schema.Null,
    status: Schema.Null,
    content_type: Schema.Null,
    body: Schema.Null
  })
)
const decodeFound = Schema.decodeUnknown(Schema.Array(FoundRow))
const decodeCount = Schema.decodeUnknown(Schema.Tuple(CountRow))

export class Idempotency extends Effect.Service<Idempotency>()("steady/Idempotency", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // Keys running in this process: a duplicate gets its 409 without touching the database
    // (on the embedded database it would otherwise queue behind the first and replay).
    const running = new Set<string>()

    /**
     * What a key holds now, read after a keyed write rolled back: its record and whether it
     * is still live, and whether another transaction (any instance) is running it. The
     * advisory lock is only tried: outside a transaction it is let go at once.
     */
    const LOOKUP = `
      SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS free, k.expires_at > $4::timestamptz AS live,
             k.fingerprint, k.status, k.content_type, k.body
      FROM (SELECT 1) AS one
      LEFT JOIN idempotency_keys k ON k.user_id = $2 AND k.key = $3`
    /** An expired record the purge has not dropped yet, in the way of the key's new one. */
    const DROP_EXPIRED = "DELETE FROM idempotency_keys WHERE user_id = $1 AND key = $2 AND expires_at <= $3::timestamptz"

    /**
     * The outcome a key already has, if any: a replay, a mismatch, or busy elsewhere; or
     * EXPIRED when only an expired record stands in its way.
     */
    const settled = <A>(request: KeyedRequest, now: Date): Effect.Effect<Outcome<A> | typeof EXPIRED | undefined> =>
      Effect.map(
        Effect.flatMap(sql.unsafe(LOOKUP, [lockName(request), request.userId, request.key, now.toISOString()]), decodeFound),
        ([found]): Outcome<A> | typeof EXPIRED | undefined => {
          if (found === undefined) return undefined
          if (found.live === true) {
            return found.fingerprint === request.fingerprint
              ? { _tag: "Replay", answer: { status: found.status, contentType: found.content_type, body: found.body } }
              : { _tag: "Mismatch" }
          }
          if (!found.free) return { _tag: "Busy" }
          return found.status === null ? undefined : EXPIRED
        }
      ).pipe(Effect.orDie)

    /** Runs `attempt` holding the key's slot in this process: a duplicate arriving meanwhile is Busy at once. */
    const holdingSlot = <A, E, R>(request: KeyedRequest, attempt: (now: Date) => Effect.Effect<Outcome<A>, E, R>) =>
      Effect.suspend(() => {
        const slot = lockName(request)
        if (running.has(slot)) return Effect.succeed<Outcome<A>>({ _tag: "Busy" })
        running.add(slot)
        return Effect.flatMap(clockNow, attempt).pipe(
          // However the write ended (answered, failed, died), the key is free again after it.
          Effect.ensuring(Effect.sync(() => running.delete(slot))),
          Effect.uninterruptible
        )
      })

    /** Drops an expired record in the way of the key's new one. */
    const dropExpired = (request: KeyedRequest, now: Date) =>
      Effect.orDie(sql.unsafe(DROP_EXPIRED, [request.userId, request.key, now.toISOString()]))

    /**
     * A keyed write that records its own answer (`Mutations.runKeyed`, given a `KeyedAnswer`
     * for `request`): the write's commit statement stores the answer with the key, in the
     * write's own transaction, or is refused (`KeyRefused`, everything rolled back) when the
     * key has a record or another transaction holds it. A refused write answers what the key
     * holds: the first answer (a retry), a mismatch, or busy. An expired record in the way is
     * dropped and the write runs again. The write's own errors are its answer: they are not
     * kept, and the key stays free.
     */
    const keyed = <A, E, R>(request: KeyedRequest, write: Effect.Effect<A, E | KeyRefused, R>): Effect.Effect<Outcome<A>, E, R> =>
      holdingSlot(request, (now) => {
        const attempt = (n: number): Effect.Effect<Outcome<A>, E, R> =>
          Effect.catchIf(
            Effect.map(write, (value): Outcome<A> => ({ _tag: "Ran", value })),
            (error): error is KeyRefused => error instanceof KeyRefused,
            () =>
              Effect.flatMap(settled<A>(request, now), (found): Effect.Effect<Outcome<A>, E, R> => {
                if (found === undefined) return Effect.succeed({ _tag: "Busy" })
                if (found !== EXPIRED) return Effect.succeed(found)
                // Bounded like the runs again after a conflict.
                if (n >= CONFLICT_RETRIES) return Effect.succeed({ _tag: "Busy" })
                return Effect.zipRight(dropExpired(request, now), attempt(n + 1))
              })
          )
        return spanWhenTraced("Idempotency.keyed")(attempt(0))
      })

    /**
     * Runs `write`, a write handler's work and answer, once per key for the writes that do not
     * record their answer in their commit statement (`keyed`): in one transaction with the record of its answer, so
     * a write never commits without it. The services' own transactions nest as savepoints.
     * `keep` says what to store; `undefined` (an error answer) rolls everything back and
     * leaves the key free. After-commit work of the write (wake-ups) waits for the commit.
     *
     * The key is checked at the end, not claimed first: a retry runs the write again inside
     * the transaction, finds the record refusing, rolls back and replays what is stored; so
     * does a retry whose write now fails (a done task, a deleted one). Writes only touch the
     * database before COMMIT (after-commit work is held), so the rolled-back run leaves
     * nothing behind.
     */
    const run = <A, E, R>(
      request: KeyedRequest,
      write: Effect.Effect<A, E, R>,
      keep: (value: A) => Effect.Effect<StoredAnswer | undefined>
    ): Effect.Effect<Outcome<A>, E, R> =>
      holdingSlot(request, (now) => {
        // The write's statements run on the keyed transaction's connection, its own transaction
        // nests as a savepoint, and its after-commit work waits for this COMMIT.
        const transaction = (connection: Connection, heldAfterCommit: Array<Effect.Effect<void>>) => {
          // A recorded key is replayed from its record by the caller; were the record gone again
          // by then, the client retries.
          const record = (value: A, answer: StoredAnswer): Effect.Effect<Outcome<A>, SqlError | RollBack<A>> => {
            const commitRides = commitWithNextStatement(connection)
            const [text, params] = renderText(recordSql(request, { ...answer, body: sqlText`${answer.body}::text` }, now))
            const recorded = Effect.catchIf(
              connection.execute(text, params, undefined),
              isRefusal,
              () => Effect.fail(new RollBack<A>({ _tag: "Busy" }))
            )
            const outcome: Outcome<A> = { _tag: "Ran", value }
            return Effect.zipRight(recorded, commitRides ? Effect.succeed(outcome) : Effect.as(control(connection, "COMMIT"), outcome))
          }
          const writtenAndRecorded = Effect.flatMap(write, (value) =>
            Effect.flatMap(keep(value), (kept) =>
              kept === undefined ? Effect.fail(new RollBack<A>({ _tag: "Ran", value })) : record(value, kept)))
          return Effect.zipRight(
            control(connection, "BEGIN"),
            locallyAll(writtenAndRecorded, (fiber) => [
              holdingIn(heldAfterCommit),
              onTransactionConnection(fiber.currentContext, connection, 0)
            ])
          )
        }
        // Whatever this run answered when it did not commit, a key that already has an
        // outcome answers with that (a retry, or a key running elsewhere).
        // EXPIRED: the record was refused for an expired record in the way, which the caller drops.
        const failed = (cause: Cause.Cause<unknown>): Effect.Effect<Outcome<A> | typeof EXPIRED, E> => {
          const failure = Cause.failureOrCause(cause)
          if (failure._tag === "Right") return Effect.failCause(failure.right)
          const error = failure.left
          if (error instanceof RollBack) return Effect.map(settled<A>(request, now), (found) => found ?? (error as RollBack<A>).outcome)
          if (error instanceof SqlError) return Effect.die(error)
          return Effect.flatMap(
            settled<A>(request, now),
            (found) => found === undefined || found === EXPIRED ? Effect.fail(error as E) : Effect.succeed(found)
          )
        }
        // Once the transaction has ended either way (a ROLLBACK also after a failed COMMIT,
        // which PostgreSQL only warns about), the connection goes back to the pool. After-commit
        // work runs only after a COMMIT.
        const committed = (attempt: number): Effect.Effect<Outcome<A>, E, R> =>
          Effect.flatMap(Scope.make(), (scope) => {
            const heldAfterCommit: Array<Effect.Effect<void>> = []
            let reserved: Connection | undefined
            const ran = Effect.flatMap(Scope.extend(sql.reserve, scope), (connection) => {
              reserved = connection
              return transaction(connection, heldAfterCommit)
            })
            return Effect.matchCauseEffect(ran, {
              onSuccess: (outcome) => Effect.zipRight(Scope.close(scope, Exit.void), Effect.as(runHeld(heldAfterCommit), outcome)),
              onFailure: (cause) => {
                const rolledBack = reserved === undefined ? Effect.void : Effect.ignore(control(reserved, "ROLLBACK"))
                return rolledBack.pipe(
                  Effect.zipRight(Scope.close(scope, Exit.failCause(cause))),
                  // Ended by PostgreSQL for a conflict: the whole keyed write runs again, still holding the key.
                  Effect.zipRight(runAgainAfter(cause, attempt)),
                  Effect.flatMap((again) =>
                    again ? committed(attempt + 1) : Effect.flatMap(failed(cause), (outcome): Effect.Effect<Outcome<A>, E, R> => {
                      if (outcome !== EXPIRED) return Effect.succeed(outcome)
                      // Refused for an expired record in the way: still holding the key, it goes and the
                      // write runs again (bounded like the runs again after a conflict).
                      if (attempt >= CONFLICT_RETRIES) return Effect.succeed({ _tag: "Busy" })
                      return Effect.zipRight(dropExpired(request, now), committed(attempt + 1))
                    })
                  )
                )
              }
            })
          })
        return spanWhenTraced("Idempotency.run")(committed(0))
      })

    /** Drops expired records, and a user's oldest beyond the cap; returns how many went. */
    const purge = Effect.gen(function*() {
      const now = (yield* clockNow).toISOString()
      const [expired] = yield* Effect.flatMap(
        sql`
        WITH gone AS (DELETE FROM idempotency_keys WHERE expires_at <= ${now}::timestamptz RETURNING 1)
        SELECT count(*)::int AS n FROM gone`,
        decodeCount
      )
      const [over] = yield* Effect.flatMap(
        sql`
        WITH gone AS (
          DELETE FROM idempotency_keys k USING (
            SELECT user_id, key FROM (
              SELECT user_id, key, row_number() OVER (PARTITION BY user_id ORDER BY created_at DESC) AS n
              FROM idempotency_keys
              WHERE user_id IN (SELECT user_id FROM idempotency_keys GROUP BY user_id
                                HAVING count(*) > ${MAX_IDEMPOTENCY_KEYS_PER_USER})
            ) ranked WHERE n > ${MAX_IDEMPOTENCY_KEYS_PER_USER}
          ) old
          WHERE k.user_id = old.user_id AND k.key = old.key
          RETURNING 1)
        SELECT count(*)::int AS n FROM gone`,
        decodeCount
      )
      return expired.n + over.n
    }).pipe(Effect.orDie, Effect.withSpan("Idempotency.purge"))

    /** What a key holds now for `request`: the outcome to answer, or nothing (free, or only expired). */
    const settledOutcome = (request: KeyedRequest): Effect.Effect<Outcome<never> | undefined> =>
      Effect.flatMap(clockNow, (now) => Effect.map(settled<never>(request, now), (found) => (found === EXPIRED ? undefined : found)))

    return { keyed, run, settledOutcome, purge } as const
  })
}) {}
