import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import type { Fragment } from "@effect/sql/Statement"
import type { Connection } from "@effect/sql/SqlConnection"
import { Cause, Effect, Exit, Scope } from "effect"
import { IDEMPOTENCY_TTL_MS, MAX_IDEMPOTENCY_KEYS_PER_USER } from "./IdempotencyKey.js"
import { holdingIn, runHeld } from "./AfterCommit.js"
import { commitHandover, flushing, makeHandover } from "./CommitHandover.js"
import { spliceWire, spliceWireSql } from "./CommitStandIns.js"
import { type Local, locallyAll } from "../kernel/FiberLocals.js"
import { control, onTransactionConnection } from "../sql/LeanStatements.js"
import { commitWithNextStatement } from "../sql/PgGuard.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { spanWhenTraced } from "../kernel/Tracing.js"
import { CONFLICT_RETRIES, runAgainAfter } from "../sql/TransactionConflicts.js"
import type { UserId } from "../kernel/Ids.js"

/** A keyed request: whose key, and what the request was (method, path, body hashed). */
export interface KeyedRequest {
  readonly userId: UserId
  readonly key: string
  readonly fingerprint: string
}

/** The answer kept for a key and replayed to its retries. */
export interface StoredAnswer {
  readonly status: number
  readonly contentType: string | null
  readonly body: string
}

export type Outcome<A> =
  /**
   * The write ran now; `value` is what it answered (stored with the key when it succeeded).
   * `answer`, when present, is what to send instead: `value`'s body with the wire JSON of a
   * commit statement that went out with the record spliced in (`CommitHandover`).
   */
  | { readonly _tag: "Ran"; readonly value: A; readonly answer?: StoredAnswer }
  /** A retry: the first answer, unchanged. */
  | { readonly _tag: "Replay"; readonly answer: StoredAnswer }
  /** The first request with this key is still running. */
  | { readonly _tag: "Busy" }
  /** The key was first used for another request (method, path or body). */
  | { readonly _tag: "Mismatch" }

/**
 * How the record refuses (steady_idempotency_busy): SK409 when another transaction holds the key; a
 * unique violation of the records' primary key when the key has a record already (live, or
 * expired and not purged yet).
 */
const KEY_BUSY = "SK409"
const UNIQUE_VIOLATION = "23505"
const RECORDS_KEY = "idempotency_keys_pkey"

const pgFieldsOf = (error: unknown): { readonly code?: unknown; readonly constraint?: unknown } | undefined => {
  const cause = error instanceof SqlError ? error.cause : undefined
  return typeof cause === "object" && cause !== null ? cause : undefined
}

const isRefusal = (error: unknown): boolean => {
  const fields = pgFieldsOf(error)
  if (fields === undefined) return false
  return fields.code === KEY_BUSY || (fields.code === UNIQUE_VIOLATION && fields.constraint === RECORDS_KEY)
}

const lockName = (request: KeyedRequest) => `${request.userId}:${request.key}`

/** The answer with a handed-over write's wire JSON in place of its stand-in (the same answer if none). */
const spliced = (answer: StoredAnswer, wire: string | null): StoredAnswer => {
  const body = spliceWire(answer.body, wire)
  return body === answer.body ? answer : { ...answer, body }
}

/** Leaves the transaction by rolling it back, with the outcome to answer. */
class RollBack<A> {
  constructor(readonly outcome: Outcome<A>) {}
}

/** What the lookup finds for a key holding only an expired record that nobody is running. */
const EXPIRED = Symbol("expired")

interface FoundRow {
  readonly free: boolean
  readonly live: boolean | null
  readonly fingerprint: string | null
  readonly status: number | null
  readonly content_type: string | null
  readonly body: string | null
}

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
     * The record, at the end of the write (migrations 0017, 0029): it takes the key's advisory
     * lock and stores the answer, or refuses (`isRefusal`): SK409 from the CASE's ELSE branch,
     * evaluated only when the lock is refused, or the primary key's 23505 for a recorded key. On
     * a PostgreSQL server COMMIT goes out with it, and a failure means the COMMIT never runs.
     */
    const recordStatement = (request: KeyedRequest, answer: StoredAnswer, now: Date, wire: Fragment | undefined) =>
      sql`INSERT INTO idempotency_keys (user_id, key, fingerprint, status, content_type, body, created_at, expires_at)
        SELECT ${request.userId}, ${request.key}, ${request.fingerprint}, ${answer.status}::integer, ${answer.contentType}::text,
          ${spliceWireSql(sql, answer.body, wire)},
          CASE WHEN pg_try_advisory_xact_lock(hashtextextended(${lockName(request)}, 0)) THEN ${now.toISOString()}::timestamptz
            ELSE steady_idempotency_busy() END,
          ${new Date(now.getTime() + IDEMPOTENCY_TTL_MS).toISOString()}::timestamptz`

    /**
     * The outcome a key already has, if any: a replay, a mismatch, or busy elsewhere; or
     * EXPIRED when only an expired record stands in its way.
     */
    const settled = <A>(request: KeyedRequest, now: Date): Effect.Effect<Outcome<A> | typeof EXPIRED | undefined> =>
      Effect.map(
        sql.unsafe<FoundRow>(LOOKUP, [lockName(request), request.userId, request.key, now.toISOString()]),
        ([found]): Outcome<A> | typeof EXPIRED | undefined => {
          if (found === undefined) return undefined
          if (found.live === true) {
            return found.fingerprint === request.fingerprint
              ? { _tag: "Replay", answer: { status: found.status!, contentType: found.content_type, body: found.body ?? "" } }
              : { _tag: "Mismatch" }
          }
          if (!found.free) return { _tag: "Busy" }
          return found.status === null ? undefined : EXPIRED
        }
      ).pipe(Effect.orDie)

    /**
     * Runs `write` once per key: in one transaction with the record of its answer, so a
     * write never commits without it. The services' own transactions nest as savepoints.
     * `keep` says what to store; `undefined` (an error answer) rolls everything back and
     * leaves the key free. After-commit work of the write (wake-ups) waits for the commit.
     *
     * The key is checked at the end, not claimed first: a first request (nearly every
     * keyed request) then costs one statement more than an unkeyed write, the record,
     * which carries the COMMIT. A retry runs the write again inside the transaction, finds
     * the record refusing, rolls back and replays what is stored; so does a retry whose
     * write now fails (a done task, a deleted one). Writes only touch the database before
     * COMMIT (after-commit work is held), so the rolled-back run leaves nothing behind.
     */
    const run = <A, E, R>(
      request: KeyedRequest,
      write: Effect.Effect<A, E, R>,
      keep: (value: A) => Effect.Effect<StoredAnswer | undefined>,
      locals: ReadonlyArray<Local> = []
    ): Effect.Effect<Outcome<A>, E, R> =>
      Effect.suspend(() => {
        const slot = lockName(request)
        if (running.has(slot)) return Effect.succeed<Outcome<A>>({ _tag: "Busy" })
        running.add(slot)
        // Once only: after this run let go, the slot may be a duplicate's that started since.
        let released = false
        const release = () => {
          if (released) return
          released = true
          running.delete(slot)
        }
        // The write's statements run on the keyed transaction's connection, its own transaction
        // nests as a savepoint, its commit statement may be handed over (`commitHandover`), and
        // its after-commit work waits for this COMMIT: three FiberRefs (and the caller's), set in one go.
        const transaction = (now: Date, connection: Connection, heldAfterCommit: Array<Effect.Effect<void>>) => {
          const handover = makeHandover()
          // A recorded key is replayed from its record by the caller; were the record gone again
          // by then, the client retries.
          const refused = <X>(statement: Effect.Effect<X, SqlError>) =>
            Effect.catchIf(statement, isRefusal, () => Effect.fail(new RollBack<A>({ _tag: "Busy" })))
          const record = (value: A, kept: StoredAnswer): Effect.Effect<Outcome<A>, SqlError | RollBack<A>> => {
            const pending = handover.pending
            handover.pending = undefined
            const commitRides = commitWithNextStatement(connection)
            // The record goes out with the write's commit statement when the write handed it
            // over, else on its own; COMMIT rides with whichever is last.
            const alone = (answer: StoredAnswer) => {
              const [text, params] = recordStatement(request, answer, now, undefined).compile()
              return Effect.as(refused(connection.execute(text, params, undefined)), answer)
            }
            const recorded: Effect.Effect<StoredAnswer, SqlError | RollBack<A>> = pending !== undefined
              ? Effect.map(refused(pending.send((wire) => recordStatement(request, kept, now, wire))), (wire) => spliced(kept, wire))
              : alone(spliced(kept, handover.flushedWire))
            return Effect.flatMap(recorded, (answer) => {
              const outcome = (answer === kept ? { _tag: "Ran", value } : { _tag: "Ran", value, answer }) as Outcome<A>
              return commitRides ? Effect.succeed(outcome) : Effect.as(control(connection, "COMMIT"), outcome)
            })
          }
          // The record runs under the write's settings too: the handed-over statement then finds
          // its connection where it is (no context of its own to build), and its wake-ups wait
          // for the COMMIT with the write's.
          const writtenAndRecorded = Effect.flatMap(write, (value) =>
            Effect.flatMap(keep(value), (kept) =>
              kept === undefined ? Effect.fail(new RollBack<A>({ _tag: "Ran", value })) : record(value, kept)))
          return Effect.zipRight(
            control(connection, "BEGIN"),
            locallyAll(writtenAndRecorded, (fiber) => [
              ...locals,
              holdingIn(heldAfterCommit),
              [commitHandover, handover],
              onTransactionConnection(fiber.currentContext, flushing(connection, handover), 0)
            ])
          )
        }
        // Whatever this run answered when it did not commit, a key that already has an
        // outcome answers with that (a retry, or a key running elsewhere).
        // EXPIRED: the record was refused for an expired record in the way, which the caller drops.
        const failed = (now: Date, cause: Cause.Cause<unknown>): Effect.Effect<Outcome<A> | typeof EXPIRED, E> => {
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
        // which PostgreSQL only warns about), the connection goes back to the pool. The slot is
        // free once the outcome is known: a duplicate arriving then finds the record (committed)
        // or runs afresh (rolled back). After-commit work runs only after a COMMIT.
        const committed = (now: Date, attempt: number): Effect.Effect<Outcome<A>, E, R> =>
          Effect.flatMap(Scope.make(), (scope) => {
            const heldAfterCommit: Array<Effect.Effect<void>> = []
            let reserved: Connection | undefined
            const ran = Effect.flatMap(Scope.extend(sql.reserve, scope), (connection) => {
              reserved = connection
              return transaction(now, connection, heldAfterCommit)
            })
            return Effect.matchCauseEffect(ran, {
              onSuccess: (outcome) => {
                // Free before the after-commit work: a duplicate arriving now finds the record.
                release()
                return Effect.zipRight(Scope.close(scope, Exit.void), Effect.as(runHeld(heldAfterCommit), outcome))
              },
              onFailure: (cause) => {
                const rolledBack = reserved === undefined ? Effect.void : Effect.ignore(control(reserved, "ROLLBACK"))
                return rolledBack.pipe(
                  Effect.zipRight(Scope.close(scope, Exit.failCause(cause))),
                  // Ended by PostgreSQL for a conflict: the whole keyed write runs again, still holding the key.
                  Effect.zipRight(runAgainAfter(cause, attempt)),
                  Effect.flatMap((again) =>
                    again ? committed(now, attempt + 1) : Effect.flatMap(failed(now, cause), (outcome): Effect.Effect<Outcome<A>, E, R> => {
                      if (outcome !== EXPIRED) return Effect.succeed(outcome)
                      // Refused for an expired record in the way: still holding the key, it goes and the
                      // write runs again (bounded like the runs again after a conflict).
                      if (attempt >= CONFLICT_RETRIES) return Effect.succeed({ _tag: "Busy" })
                      return Effect.zipRight(
                        Effect.orDie(sql.unsafe(DROP_EXPIRED, [request.userId, request.key, now.toISOString()])),
                        committed(now, attempt + 1)
                      )
                    })
                  )
                )
              }
            })
          })
        return Effect.flatMap(clockNow, (now) => committed(now, 0)).pipe(
          // However the write ended (answered, failed, died), the key is free again after it.
          Effect.ensuring(Effect.sync(release)),
          Effect.uninterruptible,
          spanWhenTraced("Idempotency.run")
        ) as Effect.Effect<Outcome<A>, E, R>
      })

    /** Drops expired records, and a user's oldest beyond the cap; returns how many went. */
    const purge = Effect.gen(function*() {
      const now = (yield* clockNow).toISOString()
      const [expired] = yield* sql<{ n: number }>`
        WITH gone AS (DELETE FROM idempotency_keys WHERE expires_at <= ${now}::timestamptz RETURNING 1)
        SELECT count(*)::int AS n FROM gone`
      const [over] = yield* sql<{ n: number }>`
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
        SELECT count(*)::int AS n FROM gone`
      return expired!.n + over!.n
    }).pipe(Effect.orDie, Effect.withSpan("Idempotency.purge"))

    return { run, purge } as const
  })
}) {}
