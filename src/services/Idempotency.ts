import * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { Effect, Exit } from "effect"
import { IDEMPOTENCY_TTL_MS, MAX_IDEMPOTENCY_KEYS_PER_USER } from "../domain/Idempotency.js"
import { holdingAfterCommit } from "./AfterCommit.js"
import { commitWithNextStatement } from "./PgGuard.js"
import { now as clockNow } from "./ServiceClock.js"

/** A keyed request: whose key, and what the request was (method, path, body hashed). */
export interface KeyedRequest {
  readonly userId: number
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

interface FoundRow {
  readonly locked: boolean
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
     * The key's transaction-scoped advisory lock (held by whoever runs the key until it
     * commits, on any instance) and a live record. On a PostgreSQL server it goes out in one
     * round trip with the BEGIN before it (TransactionPipeline).
     */
    const CLAIM = `
      SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked,
             k.fingerprint, k.status, k.content_type, k.body
      FROM (SELECT 1) AS one
      LEFT JOIN idempotency_keys k ON k.user_id = $2 AND k.key = $3 AND k.expires_at > $4::timestamptz`
    const claimParams = (request: KeyedRequest, now: Date) => [
      `${request.userId}:${request.key}`,
      request.userId,
      request.key,
      now.toISOString()
    ]

    // An expired record that the purge has not dropped yet is taken over. On a PostgreSQL
    // server COMMIT goes out with it, in one round trip.
    const RECORD = `
      INSERT INTO idempotency_keys (user_id, key, fingerprint, status, content_type, body, created_at, expires_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7::timestamptz, $8::timestamptz)
      ON CONFLICT (user_id, key) DO UPDATE SET
        fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status, content_type = EXCLUDED.content_type,
        body = EXCLUDED.body, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at`
    const recordParams = (request: KeyedRequest, answer: StoredAnswer, now: Date) => [
      request.userId,
      request.key,
      request.fingerprint,
      answer.status,
      answer.contentType,
      answer.body,
      now.toISOString(),
      new Date(now.getTime() + IDEMPOTENCY_TTL_MS).toISOString()
    ]

    /**
     * Runs `write` once per key: in one transaction with the record of its answer, so a
     * write never commits without it. The services' own transactions nest as savepoints.
     * `keep` says what to store; `undefined` (an error answer) rolls everything back and
     * leaves the key free. After-commit work of the write (wake-ups) waits for the commit.
     *
     * The transaction is driven by hand rather than by `withTransaction`, so that BEGIN
     * goes with the claim and the record with COMMIT, each pair in one round trip (on the
     * embedded database they are separate statements, with no network between): the row
     * locks a write takes (a user's daily statistics row) are held until COMMIT, so every
     * round trip after the write would serialise that user's writes for longer.
     */
    const run = <A, E, R>(
      request: KeyedRequest,
      write: Effect.Effect<A, E, R>,
      keep: (value: A) => Effect.Effect<StoredAnswer | undefined>
    ): Effect.Effect<Outcome<A>, E, R> =>
      Effect.suspend(() => {
        const slot = `${request.userId}:${request.key}`
        if (running.has(slot)) return Effect.succeed<Outcome<A>>({ _tag: "Busy" })
        running.add(slot)
        const transaction = Effect.gen(function*() {
          const conn = yield* sql.reserve
          const now = yield* clockNow
          const unprepared = (text: string) => conn.executeUnprepared(text, [], undefined)
          return yield* Effect.gen(function*() {
            yield* unprepared("BEGIN")
            const found = (yield* conn.execute(CLAIM, claimParams(request, now), undefined))[0] as FoundRow
            if (!found.locked) return yield* Effect.fail(new RollBack<A>({ _tag: "Busy" }))
            if (found.status !== null) {
              return yield* Effect.fail(
                new RollBack<A>(
                  found.fingerprint === request.fingerprint
                    ? { _tag: "Replay", answer: { status: found.status, contentType: found.content_type, body: found.body ?? "" } }
                    : { _tag: "Mismatch" }
                )
              )
            }
            const value = yield* Effect.provideService(write, SqlClient.TransactionConnection, [conn, 0] as const)
            const answer = yield* keep(value)
            if (answer === undefined) return yield* Effect.fail(new RollBack<A>({ _tag: "Ran", value }))
            const commitRides = commitWithNextStatement(conn)
            yield* conn.execute(RECORD, recordParams(request, answer, now), undefined)
            if (!commitRides) yield* unprepared("COMMIT")
            return { _tag: "Ran", value } as Outcome<A>
          }).pipe(
            // Also after a failed COMMIT (PostgreSQL then only warns), so the connection
            // never goes back to the pool inside a transaction.
            Effect.onExit((exit) => Exit.isSuccess(exit) ? Effect.void : Effect.ignore(unprepared("ROLLBACK")))
          )
        })
        return holdingAfterCommit(Effect.scoped(transaction)).pipe(
          Effect.catchIf((e): e is RollBack<A> => e instanceof RollBack, (e) => Effect.succeed(e.outcome)),
          Effect.catchIf((e): e is SqlError => e instanceof SqlError, Effect.die),
          Effect.ensuring(Effect.sync(() => running.delete(slot))),
          Effect.uninterruptible,
          Effect.withSpan("Idempotency.run")
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
