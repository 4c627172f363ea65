import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Deferred, Effect, Option, Schedule, Schema } from "effect"
import { afterCommit } from "../pipeline/AfterCommit.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { type ListenConnection, listenSession, type Notification } from "../sql/ListenSession.js"

/** What a verified API token stands for. */
export interface VerifiedToken {
  readonly user: CurrentUserShape
  readonly tokenId: number
}

/** The channel the triggers notify when a token or its user changes (migrations/functions/steady_credentials_changed.sql). */
export const CREDENTIALS_CHANNEL = "steady_credentials"

/** Tokens remembered at most; past it the cache starts over (a user rarely has more than a few). */
const MAX_ENTRIES = 10_000
/** A backstop only: revocations clear the cache the moment they commit. */
const MAX_AGE_MS = 5 * 60_000
/** How long a revoking request waits for every instance to confirm (see `revoking`). */
const CONFIRM_WAIT = "1 second"
/** A revoking instance's marker, sent after its commit; every listener answers on ACK_CHANNEL. */
const BARRIER_CHANNEL = "steady_credentials_barrier"
const ACK_CHANNEL = "steady_credentials_ack"
/** How listener sessions are told apart in pg_stat_activity, to know how many answers to await. */
const LISTENER_NAME = "steady credentials listener"
/** The barrier statement's row: how many listener sessions will answer (`count(*)::int`). */
const decodeListeners = Schema.decodeUnknown(Schema.Array(Schema.Struct({ listeners: Schema.Int })))

interface Barrier {
  readonly done: Deferred.Deferred<void>
  needed: number
  heard: number
}

interface Entry {
  readonly value: VerifiedToken
  readonly at: number
}

/**
 * Verified tokens by digest, so a request spends no round trip on its token.
 *
 * - Embedded: this process makes every change (the data directory is locked to it), so it
 *   forgets at once after its own revoking commits (`revoked`).
 * - PostgreSQL: triggers (api_tokens_changed, users_changed) notify every instance at the commit of any change,
 *   whoever made it; a connection of our own LISTENs and clears the cache synchronously in the
 *   socket's handler. While that connection is down the cache is bypassed, since a revocation
 *   could pass unheard. A revoking request answers only once every listening instance has
 *   confirmed it cleared (see `revoking`), so the client's next request, wherever it goes,
 *   is checked against the table.
 *
 * A lookup that began before a clear never stores its (possibly stale) answer: a generation
 * counter tells. Only positive answers are kept, so random tokens cannot fill it.
 */
export class CredentialCache extends Effect.Service<CredentialCache>()("steady/CredentialCache", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const entries = new Map<string, Entry>()
    let generation = 0
    /** Bumped at every sign that a credential may have been revoked (see `revocationMark`). */
    let notices = 0
    let trusted = false
    let listener: ListenConnection | undefined
    const barriers = new Map<string, Barrier>()

    const forget = () => {
      generation++
      notices++
      entries.clear()
    }

    const settle = (id: string, barrier: Barrier) => {
      if (barrier.heard < barrier.needed) return
      barriers.delete(id)
      Deferred.unsafeDone(barrier.done, Effect.void)
    }

    // PostgreSQL delivers notifications in commit order, so a listener hears a barrier only
    // after every revocation committed before it, and has already cleared when it answers.
    const onNotification = (message: Notification, connection: ListenConnection) => {
      if (message.channel === CREDENTIALS_CHANNEL) return forget()
      if (message.channel === BARRIER_CHANNEL) {
        // A session signed out elsewhere has no trigger of its own; its instance's barrier
        // says a credential went, before that request answers.
        notices++
        connection.query("SELECT pg_notify($1, $2)", [ACK_CHANNEL, message.payload ?? ""]).catch(() => undefined)
        return
      }
      const barrier = barriers.get(message.payload ?? "")
      if (barrier === undefined) return
      barrier.heard++
      settle(message.payload!, barrier)
    }

    // Until LISTEN is in place the cache is not trusted (PostgreSQL); the embedded database
    // has nothing to listen to (see above) and trusts it from the start.
    const listening = listenSession(sql, {
      channels: [CREDENTIALS_CHANNEL, BARRIER_CHANNEL, ACK_CHANNEL],
      applicationName: LISTENER_NAME,
      onNotification,
      onListening: (connection) => {
        forget()
        listener = connection
        trusted = true
      },
      onStopped: () => {
        trusted = false
        listener = undefined
        forget()
      }
    })
    if (listening === undefined) trusted = true
    else yield* Effect.forkScoped(Effect.retry(listening, Schedule.spaced("1 second")))

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
     * Sends a barrier after this instance's commit and waits (briefly) until every listening
     * session counted at that moment has answered it. Revocations are rare, so two round trips
     * on them buy a cache no request ever has to doubt.
     */
    const confirmed = (connection: ListenConnection): Effect.Effect<void> => {
      const id = `${process.pid}:${Math.random().toString(36).slice(2)}`
      const barrier: Barrier = { done: Deferred.unsafeMake<void>(undefined as never), needed: Infinity, heard: 0 }
      barriers.set(id, barrier)
      return Effect.tryPromise(() =>
        connection.query(
          `SELECT pg_notify($1, $2), (SELECT count(*)::int FROM pg_stat_activity
             WHERE application_name = $3 AND datname = current_database()) AS listeners`,
          [BARRIER_CHANNEL, id, LISTENER_NAME]
        )
      ).pipe(
        Effect.flatMap(decodeListeners),
        Effect.flatMap(([row]) =>
          Effect.suspend(() => {
            barrier.needed = row?.listeners ?? 0
            settle(id, barrier)
            return Deferred.await(barrier.done)
          })
        ),
        Effect.timeoutOption(CONFIRM_WAIT),
        Effect.ignore,
        Effect.ensuring(Effect.sync(() => barriers.delete(id)))
      )
    }

    /**
     * Runs a write that revokes or changes what tokens stand for. Once it has committed this
     * instance forgets; on PostgreSQL the answer also waits until every other instance has
     * confirmed it heard the revocation (their listeners were notified at the commit).
     */
    const revoking = <A, E, R>(write: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.tap(write, () =>
        afterCommit(Effect.suspend(() => {
          forget()
          const connection = listener
          return trusted && connection !== undefined ? confirmed(connection) : Effect.void
        })))

    /**
     * Changes whenever a credential may have been revoked: here at once after the revoking
     * commit, on PostgreSQL also by any instance, heard before its revoking request answers.
     * Undefined while a revocation could pass unheard (the LISTEN connection is down). A
     * long-lived answer (the event stream) checks its credential again only when it changed.
     */
    const revocationMark = (): number | undefined => trusted ? notices : undefined

    return { lookup, revoking, revocationMark } as const
  })
}) {}
