import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Deferred, Effect, Option, Schedule } from "effect"
import Pg from "pg"
import { afterCommit } from "./AfterCommit.js"
import type { CurrentUserShape } from "./CurrentUser.js"
import { poolOf } from "./PoolStats.js"

/** What a verified API token stands for. */
export interface VerifiedToken {
  readonly user: CurrentUserShape
  readonly tokenId: number
}

/** The channel migration 0016's triggers notify when a token or its user changes. */
export const CREDENTIALS_CHANNEL = "steady_credentials"

/** Tokens remembered at most; past it the cache starts over (a user rarely has more than a few). */
const MAX_ENTRIES = 10_000
/** A backstop only: revocations clear the cache the moment they commit. */
const MAX_AGE_MS = 5 * 60_000
/** How long a revoking request waits to hear its own notification (see `revoking`). */
const ECHO_WAIT = "1 second"

interface Entry {
  readonly value: VerifiedToken
  readonly at: number
}

/**
 * Verified tokens by digest, so a request spends no round trip on its token (issue 12 item 5).
 *
 * - Embedded: this process makes every change (the data directory is locked to it), so it
 *   forgets at once after its own revoking commits (`revoked`).
 * - PostgreSQL: triggers (migration 0016) notify every instance at the commit of any change,
 *   whoever made it; a connection of our own LISTENs and clears the cache synchronously in the
 *   socket's handler. While that connection is down the cache is bypassed, since a revocation
 *   could pass unheard.
 *
 * A lookup that began before a clear never stores its (possibly stale) answer: a generation
 * counter tells. Only positive answers are kept, so random tokens cannot fill it.
 */
export class CredentialCache extends Effect.Service<CredentialCache>()("steady/CredentialCache", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pool = poolOf(sql)
    const entries = new Map<string, Entry>()
    let generation = 0
    let trusted = pool === undefined
    // Resolved by the next notification heard, for a revoking request waiting for its echo.
    let heard = Deferred.unsafeMake<void>(undefined as never)

    const forget = () => {
      generation++
      entries.clear()
    }

    const onNotification = () => {
      forget()
      const current = heard
      heard = Deferred.unsafeMake<void>(undefined as never)
      Deferred.unsafeDone(current, Effect.void)
    }

    if (pool !== undefined) {
      const listening = Effect.acquireRelease(
        Effect.tryPromise(async () => {
          const client = new Pg.Client({ ...pool.options, keepAlive: true, statement_timeout: undefined })
          // Until LISTEN is in place the cache is not trusted; set up before connecting, so an
          // error before then is not unhandled.
          client.on("error", () => undefined)
          await client.connect()
          return client
        }),
        (client) => Effect.promise(() => client.end().catch(() => undefined)).pipe(Effect.timeoutOption("1 second"))
      ).pipe(
        Effect.flatMap((client) =>
          Effect.async<void, Error>((resume) => {
            const lost = (error?: Error) => {
              trusted = false
              forget()
              resume(Effect.fail(error ?? new Error("the LISTEN connection ended")))
            }
            client.on("notification", onNotification)
            client.on("error", lost)
            client.on("end", () => lost())
            client.query(`LISTEN ${CREDENTIALS_CHANNEL}`).then(
              () => {
                forget()
                trusted = true
              },
              lost
            )
            return Effect.sync(() => {
              trusted = false
              forget()
            })
          })
        ),
        Effect.scoped
      )
      yield* Effect.forkScoped(Effect.retry(listening, Schedule.spaced("1 second")))
    }

    /** The token's answer from the cache, else from `load` (remembered if positive). */
    const lookup = <E, R>(
      digest: string,
      load: Effect.Effect<Option.Option<VerifiedToken>, E, R>
    ): Effect.Effect<Option.Option<VerifiedToken>, E, R> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        if (!trusted) return load
        const hit = entries.get(digest)
        if (hit !== undefined && now - hit.at < MAX_AGE_MS) return Effect.succeed(Option.some(hit.value))
        const before = generation
        return Effect.tap(load, (found) =>
          Effect.sync(() => {
            if (Option.isNone(found) || before !== generation || !trusted) return
            if (entries.size >= MAX_ENTRIES) entries.clear()
            entries.set(digest, { value: found.value, at: now })
          }))
      })

    /**
     * Runs a write that revokes or changes what tokens stand for. Once it has committed this
     * instance forgets; on PostgreSQL the request also waits (briefly) to hear the
     * notification its commit sent, which every other instance's listener was sent at the
     * same moment, so the answer leaves only once the revocation has reached them too.
     */
    const revoking = <A, E, R>(write: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.suspend(() => {
        const echo = heard
        return Effect.tap(write, () =>
          afterCommit(Effect.suspend(() => {
            forget()
            return trusted && pool !== undefined
              ? Effect.asVoid(Effect.timeoutOption(Deferred.await(echo), ECHO_WAIT))
              : Effect.void
          })))
      })

    return { lookup, revoking } as const
  })
}) {}
