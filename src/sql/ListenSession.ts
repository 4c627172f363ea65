import type * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import Pg from "pg"
import { poolOf } from "./PoolStats.js"

/** A notification as PostgreSQL delivered it (`NOTIFY channel, payload`). */
export interface Notification {
  readonly channel: string
  readonly payload: string | undefined
}

/** The listening session's own connection, for statements that must come from that session. */
export interface ListenConnection {
  readonly query: <Row extends Record<string, unknown>>(text: string, params?: ReadonlyArray<unknown>) => Promise<ReadonlyArray<Row>>
}

export interface ListenOptions {
  /** LISTENed to in one statement, once connected. */
  readonly channels: ReadonlyArray<string>
  /** How the session shows in `pg_stat_activity` (so its peers can be counted). */
  readonly applicationName: string
  /**
   * Called in the socket's handler, synchronously, for each notification: whatever it clears
   * is cleared before the connection reads anything after it.
   */
  readonly onNotification: (notification: Notification, connection: ListenConnection) => void
  /** The LISTEN is in place: every notification committed from now on reaches `onNotification`. */
  readonly onListening: (connection: ListenConnection) => void
  /**
   * The session no longer listens (its connection failed or ended, or the effect was
   * interrupted); called synchronously as soon as that is known.
   */
  readonly onStopped: () => void
}

const connectionOf = (client: Pg.Client): ListenConnection => ({
  query: <Row extends Record<string, unknown>>(text: string, params?: ReadonlyArray<unknown>) =>
    client.query<Row>(text, params === undefined ? undefined : [...params]).then((result) => result.rows)
})

/**
 * A session of its own on the PostgreSQL server behind `sql` (a client from `layerPgServer`),
 * outside the pool: the pool's connections come and go, and a notification is only heard by
 * a session that is listening when it is committed. Connected with the pool's settings but
 * kept alive and without a statement timeout.
 *
 * The effect connects, LISTENs, and then runs until the connection is lost (it fails: retry
 * it) or it is interrupted (the connection is closed). Undefined for the embedded database,
 * where no other process writes and there is nothing to listen to.
 */
export const listenSession = (sql: SqlClient.SqlClient, options: ListenOptions): Effect.Effect<never, unknown> | undefined => {
  const pool = poolOf(sql)
  if (pool === undefined) return undefined
  return Effect.acquireRelease(
    Effect.tryPromise(async () => {
      const client = new Pg.Client({
        ...pool.options,
        keepAlive: true,
        statement_timeout: undefined,
        application_name: options.applicationName
      })
      // Until LISTEN is in place nothing is heard; set up before connecting, so an error
      // before then is not unhandled.
      client.on("error", () => undefined)
      await client.connect()
      return client
    }),
    (client) => Effect.promise(() => client.end().catch(() => undefined)).pipe(Effect.timeoutOption("1 second"))
  ).pipe(
    Effect.flatMap((client) =>
      Effect.async<never, Error>((resume) => {
        const connection = connectionOf(client)
        const lost = (error?: Error) => {
          options.onStopped()
          resume(Effect.fail(error ?? new Error("the LISTEN connection ended")))
        }
        client.on("notification", (message: Pg.Notification) =>
          options.onNotification({ channel: message.channel, payload: message.payload }, connection))
        client.on("error", lost)
        client.on("end", () => lost())
        client.query(options.channels.map((channel) => `LISTEN ${channel}`).join("; ")).then(
          () => options.onListening(connection),
          lost
        )
        return Effect.sync(options.onStopped)
      })
    ),
    Effect.scoped
  )
}
