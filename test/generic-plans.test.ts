import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { databaseKind } from "./support/database.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { statementLog } from "./support/statements.js"
import { createTask } from "./support/tasks.js"

/**
 * A connection (a server's, or the embedded one) prepares each statement once and, after
 * five runs, PostgreSQL may
 * keep one generic plan for it for the connection's life, planned with the table sizes of
 * that moment and never planned again while nobody runs ANALYZE. A plan chosen while the
 * tables were small (a fresh install) must stay right when they are large: measured, a
 * hash join over a sequential scan of `tasks` in the commit statement's change-feed insert
 * took each POST from 0.3 ms to 5 ms of database time within 20,000 creates.
 *
 * Every parameterized statement the writes of a broad workload send, and the change feed's
 * reads, is prepared here on a fresh (small) database with generic plans forced, and
 * explained: no sequential scan of a table that grows with use. Other reads are not held to this (a list's shared branch and the
 * project list may still scan `projects` in a plan made on a handful of rows); every
 * prepared statement is made anew after 1,000 runs (`PreparedStatements`), which bounds how
 * long any such plan lives.
 *
 * Not on the embedded database: its maintenance pass analyzes a fresh install's tables at
 * once, and on a table of a few rows a sequential scan is the right plan. There every
 * statement is planned again whenever a table it reads is analyzed, which the maintenance
 * fiber does each time a table's changed rows pass 50 + 10 % (prepared-statements.test.ts
 * shows a generic plan made on one row turning into an index scan).
 */
const GROWING = new Set([
  "tasks",
  "undo_entries",
  "changes",
  "outbox_events",
  "webhook_deliveries",
  "completions",
  "daily_stats",
  "idempotency_keys",
  "projects",
  "time_slots",
  "api_tokens",
  "users",
  "ai_enrichment_queue",
  "quota_periods"
])

interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly Plans?: ReadonlyArray<PlanNode>
}

const nodes = (plan: PlanNode): Array<PlanNode> => [plan, ...(plan.Plans ?? []).flatMap(nodes)]

const parameterCount = (sql: string) => Math.max(0, ...[...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])))

describe.skipIf(databaseKind() === "embedded")("generic plans made on a small database (PostgreSQL)", () => {
  let service: TestService
  let owner: TestUser
  let friend: TestUser
  const log = statementLog()

  beforeAll(async () => {
    service = await startService({ webhookAllowPrivate: true }, undefined, log.layer)
    owner = await service.user("plans-owner")
    friend = await service.user("plans-friend")
  })
  afterAll(async () => {
    await service?.stop()
  })

  /** The writes and reads a client makes every day, each at least once. */
  const workload = async () => {
    const api = owner.api
    await api.post("/api/webhooks", { url: "http://127.0.0.1:9/hook", events: ["task.created", "task.updated", "task.completed"] })
    const project = (await api.post("/api/projects", { name: "Home" })).body.data
    const plain = await createTask(api, { title: "Plain" })
    const dated = await createTask(api, { title: "Dated", due_at: "2026-12-01T09:00:00Z", labels: ["a"], project_id: project.id })
    const recurring = await createTask(api, { title: "Daily", due_at: "2026-12-01T09:00:00Z", rrule: "FREQ=DAILY" })
    await api.patch(`/api/tasks/${plain.id}`, { title: "Plain, edited", priority: 2 })
    await api.post(`/api/tasks/${recurring.id}/done`)
    await api.post(`/api/tasks/${dated.id}/done`)
    await api.post("/api/undo")
    await api.post("/api/redo")
    await api.post(`/api/tasks/${dated.id}/undone`)
    await api.post(`/api/tasks/${plain.id}/snooze`, { until: "2026-12-02T09:00:00Z" })
    await api.post("/api/tasks/bulk/done", { ids: [plain.id] })
    await api.request("DELETE", `/api/tasks/${plain.id}`)
    await api.patch(`/api/projects/${project.id}`, { name: "House" })
    await api.post("/api/time-slots", { name: "Morning", start_time: "08:00", end_time: "09:00" })
    await api.request("POST", "/api/tasks", { title: "Keyed" }, { "idempotency-key": "plans-key" })
    for (const path of [
      "/api/tasks",
      "/api/tasks?limit=50",
      `/api/tasks?project_id=${project.id}`,
      "/api/tasks?q=plain",
      "/api/tasks/counts",
      `/api/tasks/${dated.id}`,
      "/api/trash",
      "/api/projects",
      "/api/stats",
      "/api/history",
      "/api/changes",
      "/api/undo/history"
    ]) await api.get(path)
    await friend.api.get("/api/tasks")
  }

  it("no statement of a write or of the change feed scans a growing table, whatever the plan was made on", async () => {
    await workload()
    const checked = log.entries.filter((e) => e.inRequest && (e.method !== "GET" || /\bFROM changes\b/.test(e.sql)))
    const statements = [...new Set(checked.map((e) => e.sql))].filter((sql) => parameterCount(sql) > 0 && /^\s*(WITH|SELECT|INSERT|UPDATE|DELETE)\b/i.test(sql))
    expect(statements.length).toBeGreaterThan(20)
    const offenders: Array<string> = []
    for (const [i, sql] of statements.entries()) {
      const n = parameterCount(sql)
      // One transaction per statement: the plan mode is set for it alone, on whichever
      // connection it gets (the embedded database has only the one the service uses).
      const plan = await service.run(Effect.flatMap(SqlClient.SqlClient, (client) =>
        client.withTransaction(Effect.gen(function*() {
          yield* client.unsafe("SET LOCAL plan_cache_mode = force_generic_plan")
          yield* client.unsafe(`PREPARE generic_${i} AS ${sql}`)
          const rows = yield* client.unsafe<{ "QUERY PLAN": Array<{ Plan: PlanNode }> }>(
            `EXPLAIN (FORMAT JSON) EXECUTE generic_${i}(${Array.from({ length: n }, () => "NULL").join(", ")})`
          )
          yield* client.unsafe(`DEALLOCATE generic_${i}`)
          const explained = rows[0]!["QUERY PLAN"]
          return (typeof explained === "string" ? JSON.parse(explained) as typeof explained : explained)[0]!.Plan
        })).pipe(
          // A parameter whose type only the driver knows: not a statement this check can plan.
          Effect.catchIf((error) => /could not determine data type/.test(String((error as { cause?: unknown }).cause ?? error)), () =>
            Effect.succeed(undefined))
        )
      ))
      if (plan === undefined) continue
      const scanned = nodes(plan)
        .filter((node) => node["Node Type"] === "Seq Scan" && GROWING.has(node["Relation Name"] ?? ""))
        .map((node) => node["Relation Name"])
      if (scanned.length > 0) offenders.push(`Seq Scan on ${scanned.join(", ")}:\n${sql.replace(/\s+/g, " ").slice(0, 400)}`)
    }
    expect(offenders, offenders.join("\n\n")).toEqual([])
  })
})
