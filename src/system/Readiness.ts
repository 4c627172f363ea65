import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Duration, Effect, Option, Schema } from "effect"
import { giveUpAfter } from "../sql/DatabaseFailures.js"
import { type FiberState, Liveness, type WatchedFiber } from "./Liveness.js"
import { MIGRATIONS_TABLE, sqlFileLoader } from "../sql/Migrations.js"

export interface ReadinessReport {
  readonly status: "ready" | "not_ready"
  readonly database: { readonly status: "ok" | "error"; readonly message?: string }
  readonly migrations: {
    readonly applied: number
    /** The newest applied migration, `0008_ai`. */
    readonly latest: string | null
    /** Migrations this code ships that the database has not recorded. */
    readonly pending: ReadonlyArray<string>
  }
  readonly fibers: Readonly<Record<WatchedFiber, FiberState>> | Record<string, never>
}

/** A row of the migrations table (`migration_id integer`). */
const AppliedMigration = Schema.Struct({ id: Schema.Int, name: Schema.String })

const label = (id: number, name: string) => `${String(id).padStart(4, "0")}_${name}`

/**
 * Ready means: the database answers within `timeout`, every migration this code ships is
 * recorded as applied, and every background fiber this instance should run is running.
 */
export const checkReadiness = Effect.fnUntraced(function*(timeout: Duration.Duration) {
  const sql = yield* SqlClient.SqlClient
  const liveness = yield* Effect.serviceOption(Liveness)
  const shipped = yield* Effect.orElseSucceed(sqlFileLoader, () => [])
  const applied = yield* SqlSchema.findAll({
    Request: Schema.Void,
    Result: AppliedMigration,
    execute: () => sql`SELECT migration_id AS id, name FROM ${sql(MIGRATIONS_TABLE)} ORDER BY migration_id`
  })(undefined).pipe(
    Effect.catchTag("ParseError", Effect.die),
    giveUpAfter(timeout),
    Effect.either
  )
  const rows = applied._tag === "Right" ? applied.right : []
  const done = new Set(rows.map((row) => row.id))
  const last = rows.at(-1)
  const fibers = Option.match(liveness, { onNone: () => ({}), onSome: (registry) => registry.report() })
  const report: ReadinessReport = {
    status: "ready",
    database: applied._tag === "Right" ? { status: "ok" } : { status: "error", message: "The database is unavailable" },
    migrations: {
      applied: rows.length,
      latest: last === undefined ? null : label(last.id, last.name),
      pending: applied._tag === "Right" ? shipped.filter(([id]) => !done.has(id)).map(([id, name]) => label(id, name)) : []
    },
    fibers
  }
  const ready = report.database.status === "ok" && report.migrations.pending.length === 0 &&
    Object.values(fibers).every((state) => state === "running" || state === "disabled")
  return ready ? report : { ...report, status: "not_ready" as const }
})
