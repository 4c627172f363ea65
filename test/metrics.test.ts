import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { databaseKind } from "./support/database.js"
import { shiftPeriodBack, sweep } from "./support/quotas.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask } from "./support/tasks.js"
import { createWebhook } from "./support/webhooks.js"

const TOKEN = "metrics-s3cret"

interface Sample {
  readonly name: string
  readonly labels: Record<string, string>
  readonly value: number
}

/** The Prometheus text format: `name{a="b",c="d"} value`, comments and blank lines aside. */
const parse = (text: string): Array<Sample> =>
  text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).map((line) => {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match === null) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const pair of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[pair[1]!] = pair[2]!
    return { name: match[1]!, labels, value: Number(match[3]) }
  })

const pick = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))

const value = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string> = {}) => {
  const found = pick(samples, name, labels)
  return found.length === 0 ? 0 : found.reduce((sum, s) => sum + s.value, 0)
}

describe("GET /metrics", () => {
  let service: TestService
  let alice: TestUser

  beforeAll(async () => {
    // No dispatcher: webhook deliveries stay pending, so the backlog is a known number.
    service = await startService({ metricsToken: Option.some(Redacted.make(TOKEN)), webhookDispatch: false })
    alice = await service.user("alice")
  })
  afterAll(async () => {
    await service?.stop()
  })

  const scrape = async () => {
    const res = await service.client({ authorization: `Bearer ${TOKEN}` }).get("/metrics")
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("text/plain")
    return parse(res.text)
  }

  it("asks for the token when one is configured: 401 envelope without it or with another", async () => {
    for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: `Basic ${TOKEN}` }]) {
      const res = await service.client(headers).get("/metrics")
      expect(res.status).toBe(401)
      expect(res.body).toMatchObject({ code: "UNAUTHORIZED", error: expect.any(String) })
      expect(res.text).not.toContain("steady_http_requests_total")
    }
    // A user's API token is not the metrics token.
    expect((await alice.api.get("/metrics")).status).toBe(401)
  })

  it("counts requests per route pattern, not per raw path", async () => {
    const a = await createTask(alice.api, { title: "one" })
    const b = await createTask(alice.api, { title: "two" })
    const before = await scrape()
    const labels = { method: "GET", route: "/api/tasks/:id", status: "200" }
    const countBefore = value(before, "steady_http_requests_total", labels)
    const N = 7
    for (let i = 0; i < N; i++) {
      const res = await alice.api.get(`/api/tasks/${i % 2 === 0 ? a.id : b.id}`)
      expect(res.status).toBe(200)
    }
    expect((await alice.api.get("/api/tasks/999999")).status).toBe(404)
    expect((await alice.api.get("/no/such/path/42")).status).toBe(404)

    const after = await scrape()
    expect(value(after, "steady_http_requests_total", labels) - countBefore).toBe(N)
    expect(value(after, "steady_http_requests_total", { ...labels, status: "404" })).toBe(1)
    expect(value(after, "steady_http_requests_total", { route: "unmatched", status: "404" })).toBeGreaterThanOrEqual(1)
    // Created above: two POSTs on the collection route.
    expect(value(after, "steady_http_requests_total", { method: "POST", route: "/api/tasks", status: "201" })).toBe(2)
    // No series per task id or per unknown path.
    const routes = new Set(pick(after, "steady_http_requests_total").map((s) => s.labels.route))
    for (const route of routes) expect(route === "unmatched" || route!.startsWith("/")).toBe(true)
    expect([...routes].some((route) => /\d/.test(route!))).toBe(false)
  })

  it("keeps a latency histogram per route with monotone buckets ending in +Inf = count", async () => {
    const labels = { method: "GET", route: "/api/tasks/:id" }
    const before = value(await scrape(), "steady_http_request_duration_seconds_count", labels)
    for (let i = 0; i < 3; i++) await alice.api.get("/api/tasks?limit=1")
    const task = await createTask(alice.api, { title: "timed" })
    for (let i = 0; i < 4; i++) await alice.api.get(`/api/tasks/${task.id}`)
    const samples = await scrape()
    const buckets = pick(samples, "steady_http_request_duration_seconds_bucket", labels)
    expect(buckets.length).toBeGreaterThan(5)
    const bounds = buckets.map((b) => (b.labels.le === "+Inf" ? Infinity : Number(b.labels.le)))
    expect(bounds).toEqual([...bounds].sort((x, y) => x - y))
    expect(bounds.at(-1)).toBe(Infinity)
    const counts = buckets.map((b) => b.value)
    for (let i = 1; i < counts.length; i++) expect(counts[i]!).toBeGreaterThanOrEqual(counts[i - 1]!)
    const count = value(samples, "steady_http_request_duration_seconds_count", labels)
    expect(counts.at(-1)).toBe(count)
    expect(count - before).toBe(4)
    const sum = value(samples, "steady_http_request_duration_seconds_sum", labels)
    expect(sum).toBeGreaterThan(0)
    expect(sum).toBeLessThan(count * 30)
    // The status counters of the route add up to the histogram's count.
    expect(value(samples, "steady_http_requests_total", labels)).toBe(count)
  })

  it("reports the database, the pool, the webhook backlog, the rollover lag and the enrichment queue", async () => {
    const base = await scrape()
    expect(value(base, "steady_database_up")).toBe(1)
    expect(value(base, "steady_enrichment_queue")).toBe(0)
    expect(value(base, "steady_webhook_failed_attempts_1h")).toBe(0)
    expect(value(base, "steady_webhook_failed_deliveries_24h")).toBe(0)
    if (databaseKind() === "postgres") {
      expect(value(base, "steady_db_pool_max")).toBe(10)
      // This scrape's own statement holds a connection while the gauges are read, or just did.
      const inUse = value(base, "steady_db_pool_connections", { state: "in_use" })
      expect(inUse).toBeGreaterThanOrEqual(0)
      expect(inUse).toBeLessThanOrEqual(10)
      expect(value(base, "steady_db_pool_connections", { state: "idle" })).toBeGreaterThanOrEqual(1)
      expect(pick(base, "steady_db_pool_waiting")).toHaveLength(1)
    } else {
      expect(value(base, "steady_db_pool_max")).toBe(1)
    }
    for (const fiber of ["quota_rollover", "reminder_roll_forward", "purges", "ai_maintenance"]) {
      expect(value(base, "steady_fiber_up", { fiber })).toBe(1)
    }
    // Disabled by configuration: not reported as down.
    expect(pick(base, "steady_fiber_up", { fiber: "webhook_dispatcher" })).toHaveLength(0)

    const backlogBefore = value(base, "steady_webhook_backlog")
    await createWebhook(alice.api, "http://127.0.0.1:9/hook", ["task.created"])
    await createTask(alice.api, { title: "event 1" })
    await createTask(alice.api, { title: "event 2" })
    expect(value(await scrape(), "steady_webhook_backlog") - backlogBefore).toBe(2)

    expect(value(base, "steady_quota_rollover_lag_seconds")).toBe(0)
    const quota = await createTask(alice.api, { title: "Daily", progress_target: 2, rrule: "FREQ=DAILY" })
    await shiftPeriodBack(service, quota.id, 2)
    const lag = value(await scrape(), "steady_quota_rollover_lag_seconds")
    expect(lag).toBeGreaterThanOrEqual(86_400)
    expect(lag).toBeLessThanOrEqual(2 * 86_400)
    await sweep(service)
    expect(value(await scrape(), "steady_quota_rollover_lag_seconds")).toBe(0)
  })
})

describe("GET /metrics on tables never analyzed", () => {
  let service: TestService
  beforeAll(async () => {
    service = await startService({ metricsToken: Option.some(Redacted.make(TOKEN)) })
  })
  afterAll(async () => {
    await service?.stop()
  })

  // On the embedded database the maintenance fiber analyzes by itself; on a server it is autovacuum's job.
  it.skipIf(databaseKind() !== "postgres")("names them until they are analyzed, and the count matches the names", async () => {
    const alice = await service.user("alice")
    await createTask(alice.api, { title: "one row at least" })
    const scrape = async () => parse((await service.client({ authorization: `Bearer ${TOKEN}` }).get("/metrics")).text)
    const run = (statement: string) => service.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)))
    const unanalyzed = async () =>
      (await run(`SELECT relname FROM pg_stat_user_tables
        WHERE last_analyze IS NULL AND last_autoanalyze IS NULL AND n_live_tup + n_mod_since_analyze > 0`) as Array<{ relname: string }>)
        .map((r) => r.relname).sort()
    await run("SELECT pg_stat_force_next_flush()").catch(() => undefined)

    const before = await scrape()
    const named = pick(before, "steady_table_never_analyzed").map((s) => s.labels.table!).sort()
    expect(value(before, "steady_tables_never_analyzed")).toBe(named.length)
    if ((await unanalyzed()).includes("tasks")) expect(named).toContain("tasks")

    await run("ANALYZE")
    const after = await scrape()
    expect(pick(after, "steady_table_never_analyzed").map((s) => s.labels.table)).not.toContain("tasks")
    expect(value(after, "steady_tables_never_analyzed")).toBe(pick(after, "steady_table_never_analyzed").length)
  })
})

describe("GET /metrics without a token configured", () => {
  let service: TestService
  beforeAll(async () => {
    service = await startService({ metricsToken: Option.none() })
  })
  afterAll(async () => {
    await service?.stop()
  })

  it("is open", async () => {
    await service.anonymous.get("/api/health")
    const res = await service.anonymous.get("/metrics")
    expect(res.status).toBe(200)
    expect(value(parse(res.text), "steady_http_requests_total", { method: "GET", route: "/api/health", status: "200" })).toBe(1)
  })
})
