import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Duration, Effect, Option, Schema } from "effect"
import { giveUpAfter } from "../sql/DatabaseFailures.js"
import { DatabaseMaintenance } from "./DatabaseMaintenance.js"
import { Liveness, WATCHED_FIBERS } from "./Liveness.js"
import { poolStatsOf } from "../sql/PoolStats.js"
import { RequestMetrics } from "../http/RequestMetrics.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { pendingCount } from "../ai/TaskEnrichmentSql.js"
import { rolloverLag } from "../quotas/TaskRolloverSql.js"
import { backlogCounts } from "../webhooks/WebhookDeliveries.js"

/** The backlog's counts (`count(*)::int`) and the rollover lag in seconds (`float8`). */
const Backlog = Schema.Struct({
  webhook_backlog: Schema.Int,
  webhook_failed_attempts: Schema.Int,
  webhook_failed_deliveries: Schema.Int,
  enrichment_queue: Schema.Int,
  rollover_lag: Schema.Number
})

const gauge = (name: string, help: string, value: number, labels = "") =>
  [`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name}${labels} ${value}`]

/**
 * The work waiting in the database, read with one statement when scraped. Every count
 * follows a partial or time index, so a scrape costs a few index probes, not scans.
 */
const readBacklog = (sql: SqlClient.SqlClient, now: Date) => {
  const hourAgo = new Date(now.getTime() - 3_600_000).toISOString()
  const dayAgo = new Date(now.getTime() - 86_400_000).toISOString()
  const webhooks = backlogCounts(sql, hourAgo, dayAgo)
  return SqlSchema.single({
    Request: Schema.Void,
    Result: Backlog,
    execute: () =>
      sql`SELECT
      ${webhooks.pending} AS webhook_backlog,
      ${webhooks.failedAttempts} AS webhook_failed_attempts,
      ${webhooks.failedDeliveries} AS webhook_failed_deliveries,
      ${pendingCount(sql)} AS enrichment_queue,
      COALESCE(${rolloverLag(sql, now)}, 0)::float8 AS rollover_lag`
  })(undefined).pipe(Effect.catchTags({ ParseError: Effect.die, NoSuchElementException: Effect.die }))
}

/** `GET /metrics` in the Prometheus text format (version 0.0.4). */
export const renderMetrics = Effect.fnUntraced(function*(options: { readonly timeout: Duration.Duration; readonly embedded: boolean }) {
  const sql = yield* SqlClient.SqlClient
  const requests = yield* RequestMetrics
  const liveness = yield* Effect.serviceOption(Liveness)
  const now = yield* clockNow
  const backlog = yield* readBacklog(sql, now).pipe(
    giveUpAfter(options.timeout),
    Effect.orElseSucceed(() => undefined)
  )
  const lines = requests.render()
  lines.push(...gauge("steady_database_up", "1 when the database answered this scrape.", backlog === undefined ? 0 : 1))
  const pool = poolStatsOf(sql)
  if (pool !== undefined) {
    lines.push(
      "# HELP steady_db_pool_connections PostgreSQL pool connections by state.",
      "# TYPE steady_db_pool_connections gauge",
      `steady_db_pool_connections{state="in_use"} ${pool.inUse}`,
      `steady_db_pool_connections{state="idle"} ${pool.idle}`,
      ...gauge("steady_db_pool_waiting", "Requests waiting for a pool connection.", pool.waiting),
      ...gauge("steady_db_pool_max", "Largest number of pool connections.", pool.max)
    )
  } else if (options.embedded) {
    // The embedded database has one connection and queues statements in process.
    lines.push(...gauge("steady_db_pool_max", "Largest number of pool connections.", 1))
  }
  if (backlog !== undefined) {
    lines.push(
      ...gauge("steady_webhook_backlog", "Webhook deliveries not yet delivered or given up.", backlog.webhook_backlog),
      ...gauge("steady_webhook_failed_attempts_1h", "Webhook attempts that failed in the last hour.", backlog.webhook_failed_attempts),
      ...gauge(
        "steady_webhook_failed_deliveries_24h",
        "Webhook deliveries given up after their last attempt in the last 24 hours.",
        backlog.webhook_failed_deliveries
      ),
      ...gauge(
        "steady_quota_rollover_lag_seconds",
        "Age of the oldest ended quota period not yet closed; 0 when none waits.",
        Math.max(0, backlog.rollover_lag)
      ),
      ...gauge("steady_enrichment_queue", "Tasks waiting for AI enrichment.", backlog.enrichment_queue)
    )
  }
  const maintenance = yield* Effect.serviceOption(DatabaseMaintenance)
  if (backlog !== undefined && Option.isSome(maintenance)) {
    // Tables holding rows that were never analyzed: their plans rest on guesses.
    const tables = yield* maintenance.value.neverAnalyzed.pipe(
      giveUpAfter(options.timeout),
      Effect.orElseSucceed((): ReadonlyArray<string> => [])
    )
    lines.push(
      ...gauge("steady_tables_never_analyzed", "Tables holding rows that were never analyzed (plans rest on guesses).", tables.length),
      ...(tables.length === 0 ? [] : [
        "# HELP steady_table_never_analyzed 1 for each table holding rows that was never analyzed.",
        "# TYPE steady_table_never_analyzed gauge",
        ...tables.map((table) => `steady_table_never_analyzed{table="${table}"} 1`)
      ])
    )
  }
  if (Option.isSome(liveness)) {
    const report = liveness.value.report()
    lines.push("# HELP steady_fiber_up 1 while a background fiber runs; fibers off by configuration are left out.", "# TYPE steady_fiber_up gauge")
    for (const name of WATCHED_FIBERS) {
      if (report[name] !== "disabled") lines.push(`steady_fiber_up{fiber="${name}"} ${report[name] === "running" ? 1 : 0}`)
    }
  }
  return lines.join("\n") + "\n"
})
