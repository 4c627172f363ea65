import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Queue, type Stream } from "effect"
import { afterCommit } from "../pipeline/AfterCommit.js"
import { CHANGES_CHANNEL } from "./ChangeLog.js"
import { logFailure } from "../sql/DatabaseFailures.js"

/**
 * How long the notifier waits after a NOTIFY before sending the next: commits within it
 * share one. Other instances' streams lag by at most this much (a stream's p99 stays near 100 ms).
 */
export const NOTIFY_SPACING_MS = 10

/**
 * The client's LISTEN, when other instances can share this database (a server's client has
 * one; the embedded database is one process's).
 */
export const listenOf = (sql: SqlClient.SqlClient): ((channel: string) => Stream.Stream<string, unknown>) | undefined => {
  const listen = (sql as SqlClient.SqlClient & { readonly listen?: (channel: string) => Stream.Stream<string, unknown> }).listen
  return typeof listen === "function" ? (channel) => listen.call(sql, channel) : undefined
}

/**
 * Wakes the change hubs right after a transaction that wrote feed entries commits: this
 * instance's directly, the others on one PostgreSQL server by NOTIFY. Sliding queues of
 * one: wake-ups that arrive while the hub reads (or a NOTIFY is out) collapse into one.
 *
 * The NOTIFY goes out after the commit, from one fiber, at most once per
 * `NOTIFY_SPACING_MS`, not inside each writing transaction: a transaction that notifies
 * takes a database-wide lock from its commit until it ends, so every write's commit (and
 * its WAL flush) used to wait for the previous one's. The notification only wakes; the
 * listeners read the table, and poll it anyway (`HUB_POLL_MS`), so a NOTIFY lost with a
 * crash between the commit and the notifier costs a second of delay, never a change.
 * The embedded database has one process: nobody else to tell.
 */
export class ChangeWakeup extends Effect.Service<ChangeWakeup>()("steady/ChangeWakeup", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const local = yield* Queue.sliding<void>(1)
    let wake = Queue.offer(local, undefined)
    if (listenOf(sql) !== undefined) {
      const others = yield* Queue.sliding<void>(1)
      const notify = sql`SELECT pg_notify(${CHANGES_CHANNEL}, '1')`.pipe(
        Effect.catchAllCause((cause) => logFailure("NOTIFY of changes failed; other instances poll", cause, "warning"))
      )
      yield* Effect.forkScoped(
        Effect.forever(Queue.take(others).pipe(Effect.zipRight(notify), Effect.zipRight(Effect.sleep(NOTIFY_SPACING_MS))))
      )
      wake = Effect.zipRight(wake, Queue.offer(others, undefined))
    }
    return {
      // Held until an enclosing request-wide transaction commits (see AfterCommit).
      wake: afterCommit(Effect.asVoid(wake)),
      /** Another instance's NOTIFY: this hub reads; passing it on would echo it back for ever. */
      heard: Queue.offer(local, undefined).pipe(Effect.asVoid),
      /** Waits for a wake-up or until `timeout` passes, whichever comes first. */
      wait: (timeout: number) => Queue.take(local).pipe(Effect.timeoutOption(timeout), Effect.asVoid)
    } as const
  })
}) {}
