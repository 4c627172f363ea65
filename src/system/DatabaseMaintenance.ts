import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Effect, Option, Queue, Schema } from "effect"
import { AppConfig, type MaintenanceTuning } from "../kernel/AppConfig.js"

/** A table's change counters (`pg_stat_user_tables`, the `bigint` counters cast to `int`). */
export const TableActivity = Schema.Struct({
  schema: Schema.String,
  name: Schema.String,
  live: Schema.Int,
  dead: Schema.Int,
  changed: Schema.Int,
  analyzed: Schema.Boolean
})
export type TableActivity = typeof TableActivity.Type

/**
 * Write-ahead log written since the last checkpoint past which the embedded database takes one.
 * PGlite runs no checkpointer: without this the log grew until shutdown (64 → 384 MiB over
 * 100,000 writes), and the segments a long interval used are kept for reuse afterwards.
 * Checkpointing at this distance keeps the log near min_wal_size (80 MiB).
 */
export const WAL_CHECKPOINT_BYTES = 32 * 1024 * 1024

/** Plain identifiers only: the names go into `VACUUM` unquoted by any driver. */
const IDENT = /^[a-z_][a-z0-9_]*$/

/** Whether a table needs `VACUUM (ANALYZE)` now. */
export const isDue = (t: TableActivity, tuning: MaintenanceTuning): boolean => {
  const threshold = tuning.base + tuning.scale * t.live
  return t.changed >= threshold || t.dead >= threshold || (!t.analyzed && t.live + t.changed > 0)
}

/**
 * Statistics upkeep: which tables the planner has no statistics for, and (embedded only)
 * `VACUUM (ANALYZE)` of the tables that changed enough. Writers that change many rows at
 * once (bulk actions, imports) call `request` so the check runs right after them.
 */
export class DatabaseMaintenance extends Effect.Service<DatabaseMaintenance>()("steady/DatabaseMaintenance", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const embedded = Option.isNone(config.databaseUrl)
    const requests = yield* Queue.sliding<void>(1)

    // PGlite publishes a backend's table counters only when asked to; a server's backends
    // publish theirs by themselves.
    const flush = embedded ? Effect.asVoid(sql`SELECT pg_stat_force_next_flush()`) : Effect.void

    /** Our tables' change counters, in the schemas on the search path. */
    const activity = Effect.zipRight(
      flush,
      SqlSchema.findAll({
        Request: Schema.Void,
        Result: TableActivity,
        execute: () =>
          sql`SELECT schemaname AS schema, relname AS name, n_live_tup::int AS live, n_dead_tup::int AS dead,
               n_mod_since_analyze::int AS changed,
               (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL) AS analyzed
        FROM pg_stat_user_tables WHERE schemaname = ANY (current_schemas(false)) ORDER BY relname`
      })(undefined)
    ).pipe(Effect.orDie)

    /**
     * Tables holding rows that have never been analyzed: their plans rest on guesses. Empty
     * tables are left out (autovacuum skips them too, and there is nothing to plan over).
     */
    const neverAnalyzed: Effect.Effect<ReadonlyArray<string>> = Effect.map(
      activity,
      (tables) => tables.filter((t) => !t.analyzed && t.live + t.changed > 0).map((t) => t.name)
    ).pipe(Effect.withSpan("DatabaseMaintenance.neverAnalyzed"))

    /** Whether the server's autovacuum is on (always true for the embedded database, which we look after). */
    const autovacuumOn: Effect.Effect<boolean> = embedded
      ? Effect.succeed(true)
      : SqlSchema.single({
        Request: Schema.Void,
        Result: Schema.Struct({ on: Schema.Boolean }),
        execute: () => sql`SELECT current_setting('autovacuum') = 'on' AS on`
      })(undefined).pipe(Effect.map((row) => row.on), Effect.orDie)

    /**
     * One table, one statement: the connection is never held for more than that. It runs on
     * a reserved connection, which on PGlite waits for an open transaction to end and keeps
     * the next one from starting until it is done (VACUUM cannot run inside a transaction).
     */
    const vacuumAnalyze = (t: Pick<TableActivity, "schema" | "name">) =>
      IDENT.test(t.schema) && IDENT.test(t.name)
        ? Effect.scoped(Effect.flatMap(sql.reserve, (connection) =>
          connection.executeUnprepared(`VACUUM (ANALYZE) ${t.schema}.${t.name}`, [], undefined))).pipe(
            Effect.asVoid,
            Effect.orDie
          )
        : Effect.void

    /** Write-ahead log bytes written since the last checkpoint began (embedded only). */
    const walSinceCheckpoint = SqlSchema.single({
      Request: Schema.Void,
      Result: Schema.Struct({ bytes: Schema.Number }),
      execute: () =>
        sql`SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), redo_lsn)::float8 AS bytes FROM pg_control_checkpoint()`
    })(undefined).pipe(Effect.map((row) => row.bytes), Effect.orDie)

    /**
     * Takes a checkpoint when the log since the last one passed `limit` bytes; returns whether
     * it did. Like VACUUM, on a reserved connection between transactions.
     */
    const checkpointIfDue = (limit: number) =>
      embedded
        ? Effect.flatMap(walSinceCheckpoint, (bytes) =>
          bytes < limit ? Effect.succeed(false) : Effect.scoped(Effect.flatMap(sql.reserve, (connection) =>
            connection.executeUnprepared("CHECKPOINT", [], undefined))).pipe(Effect.as(true), Effect.orDie))
        : Effect.succeed(false)

    /** Vacuums and analyzes each due table in turn; returns the tables it did. */
    const maintain = (tuning: MaintenanceTuning) =>
      Effect.gen(function*() {
        const due = (yield* activity).filter((t) => isDue(t, tuning))
        for (const [i, t] of due.entries()) {
          if (i > 0) yield* Effect.sleep(tuning.pause)
          yield* vacuumAnalyze(t)
        }
        return due.map((t) => t.name)
      }).pipe(Effect.withSpan("DatabaseMaintenance.maintain"))

    return {
      embedded,
      neverAnalyzed,
      autovacuumOn,
      maintain,
      walSinceCheckpoint,
      checkpointIfDue,
      /** Asks for a check now rather than at the next poll; many requests collapse into one. */
      request: Effect.asVoid(Queue.offer(requests, undefined)),
      /** Waits for the next request. */
      nextRequest: Queue.take(requests)
    } as const
  })
}) {}
