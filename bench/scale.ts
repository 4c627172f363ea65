import * as Http from "node:http"
import { databaseBackendsCpuMs, cpuDelta, sleep } from "./processes.js"
import { type Database, formatTable, type Section } from "./report.js"
import { growTasks, sampleIds, seed } from "./seed.js"
import { freshDatabase, log, migrate, startOurs, withExec } from "./setup.js"

/**
 * Cost that does not grow with the data. One database per backend holds the
 * other users' tasks (`BENCH_SCALE_OTHERS`: 1,000,000 on PostgreSQL, 100,000 embedded, over 19
 * users) while the main user's tasks grow through `BENCH_SCALE_SIZES` (1,000, 10,000, 100,000).
 * At each size every hot read and two writes run one request at a time (c=1: latency, not
 * throughput), first on the database as written, then after ANALYZE; p50, p99 and the CPU
 * each request cost the service (and, on PostgreSQL, its backends).
 *
 * "As written" means never analyzed by hand: on PostgreSQL autovacuum is switched off for
 * the bench's tables until the ANALYZE phase, so no background run tidies them mid-way (a
 * server's autovacuum would, eventually); the embedded database keeps its own maintenance
 * fiber, as a user's does, which analyzes tables whose rows changed enough once the service
 * starts. Rows are seeded with SQL (the bench's generator), not through the API, so that a
 * million of them take a minute rather than an hour; the plans check of `tools/plans.mjs`
 * covers a database written through the API.
 */

interface Endpoint {
  readonly label: string
  readonly method: "GET" | "POST" | "PATCH"
  readonly request: (n: number, ids: Ids) => { readonly path: string; readonly body?: string }
}

interface Ids {
  readonly read: ReadonlyArray<number>
  readonly patch: ReadonlyArray<number>
}

const pick = (list: ReadonlyArray<number>, n: number) => list[n % list.length]!

const ENDPOINTS: ReadonlyArray<Endpoint> = [
  { label: "GET /api/tasks?limit=50", method: "GET", request: () => ({ path: "/api/tasks?limit=50" }) },
  { label: "GET /api/tasks (default page)", method: "GET", request: () => ({ path: "/api/tasks" }) },
  { label: "GET /api/tasks/counts", method: "GET", request: () => ({ path: "/api/tasks/counts" }) },
  { label: "GET /api/tasks?search=invoices&limit=50", method: "GET", request: () => ({ path: "/api/tasks?search=invoices&limit=50" }) },
  { label: "GET /api/process (triage)", method: "GET", request: () => ({ path: "/api/process" }) },
  { label: "GET /api/tasks/{id}", method: "GET", request: (n, ids) => ({ path: `/api/tasks/${pick(ids.read, n)}` }) },
  {
    label: "POST /api/tasks",
    method: "POST",
    request: (n) => ({ path: "/api/tasks", body: JSON.stringify({ title: `Scale bench task ${n}`, priority: n % 5 }) })
  },
  {
    label: "PATCH /api/tasks/{id}",
    method: "PATCH",
    request: (n, ids) => ({ path: `/api/tasks/${pick(ids.patch, n)}`, body: JSON.stringify({ title: `Scale edit ${n}` }) })
  }
]

const numberList = (name: string, fallback: ReadonlyArray<number>) => {
  const given = (process.env[name] ?? "").split(",").map((s) => Number(s.trim())).filter((n) => Number.isInteger(n) && n > 0)
  return given.length > 0 ? given : fallback
}

const SIZES = numberList("BENCH_SCALE_SIZES", [1_000, 10_000, 100_000])
const othersFor = (database: Database) =>
  Number(process.env.BENCH_SCALE_OTHERS ?? (database === "postgres" ? 1_000_000 : 100_000))
/** Requests per endpoint and phase, and the most time one may take. */
const REQUESTS = Number(process.env.BENCH_SCALE_REQUESTS ?? 150)
const MAX_SECONDS = 6

const percentile = (sorted: ReadonlyArray<number>, p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!

/** Seconds each read is driven for by `warmUp`. */
const WARM_SECONDS = 1.5

/**
 * Drives every endpoint for a while before anything is timed, in a freshly started service:
 * V8 compiles the request path over its first thousands of requests, and the phases (each a
 * new process) otherwise compared two JIT states as much as two databases: the service's own
 * CPU per read, which no plan changes, differed by up to 1.7× between them. Reads take up to
 * `WARM_SECONDS` each; writes 100 requests at most, so the phase's data barely changes (100
 * creates beside ≥ 1,000 tasks, and edits of existing ones).
 */
const warmUp = async (ids: Ids, target: { readonly baseUrl: string; readonly token: string }) => {
  const agent = new Http.Agent({ keepAlive: true, maxSockets: 1 })
  try {
    for (const endpoint of ENDPOINTS) {
      const deadline = performance.now() + WARM_SECONDS * 1000
      const most = endpoint.method === "GET" ? 2_000 : 100
      for (let n = 0; n < most && performance.now() < deadline; n++) {
        const { path, body } = endpoint.request(2_000_000 + n, ids)
        await send(agent, target.baseUrl, target.token, endpoint.method, path, body)
      }
    }
  } finally {
    agent.destroy()
  }
}

/** One request on a kept-alive connection; resolves with the status once the body is read. */
const send = (agent: Http.Agent, baseUrl: string, token: string, method: string, path: string, body?: string) =>
  new Promise<number>((resolve, reject) => {
    const url = new URL(path, baseUrl)
    const request = Http.request(url, {
      method,
      agent,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
      }
    }, (response) => {
      response.resume()
      response.on("end", () => resolve(response.statusCode ?? 0))
      response.on("error", reject)
    })
    request.on("error", reject)
    request.end(body)
  })

interface Timing {
  readonly p50: number
  readonly p99: number
  readonly count: number
  readonly cpuMs: number | undefined
  readonly dbCpuMs: number | undefined
  readonly failed: number
}

const measure = async (
  endpoint: Endpoint,
  ids: Ids,
  target: { readonly baseUrl: string; readonly token: string; readonly cpuMs: () => number | undefined },
  databaseName: string | undefined
): Promise<Timing> => {
  const agent = new Http.Agent({ keepAlive: true, maxSockets: 1 })
  try {
    // A few untimed requests first: the statement is prepared and the pages are read once.
    for (let n = 0; n < 5; n++) {
      const { path, body } = endpoint.request(1_000_000 + n, ids)
      await send(agent, target.baseUrl, target.token, endpoint.method, path, body)
    }
    const times: Array<number> = []
    let failed = 0
    const cpuBefore = target.cpuMs()
    const dbBefore = databaseName === undefined ? undefined : databaseBackendsCpuMs(databaseName)
    const deadline = performance.now() + MAX_SECONDS * 1000
    for (let n = 0; n < REQUESTS && performance.now() < deadline; n++) {
      const { path, body } = endpoint.request(n, ids)
      const start = performance.now()
      const status = await send(agent, target.baseUrl, target.token, endpoint.method, path, body)
      times.push(performance.now() - start)
      if (status >= 400) failed++
    }
    const cpuAfter = target.cpuMs()
    const dbAfter = databaseName === undefined ? undefined : databaseBackendsCpuMs(databaseName)
    times.sort((a, b) => a - b)
    return {
      p50: percentile(times, 0.5),
      p99: percentile(times, 0.99),
      count: times.length,
      cpuMs: cpuBefore === undefined || cpuAfter === undefined ? undefined : (cpuAfter - cpuBefore) / times.length,
      dbCpuMs: dbBefore === undefined || dbAfter === undefined ? undefined : cpuDelta(dbBefore, dbAfter) / times.length,
      failed
    }
  } finally {
    agent.destroy()
  }
}

/**
 * Waits until the service has finished what it does once at start (rolling missed reminders
 * forward: hundreds of writes on the seeded databases, since the generator dates reminders in
 * the past; on the embedded database, its first maintenance pass): measured beside it, the first
 * endpoint's figures were that work's, not the endpoint's. Quiet = under 5 % of a core for
 * half a second; at most 30 s.
 */
const settle = async (cpuMs: () => number | undefined) => {
  const deadline = performance.now() + 30_000
  while (performance.now() < deadline) {
    const before = cpuMs()
    await sleep(500)
    const after = cpuMs()
    if (before === undefined || after === undefined || after - before < 25) return
  }
  log("scale: the service was still busy after 30 s; measuring anyway")
}

const TABLES = ["tasks", "projects", "users", "api_tokens", "completions", "time_slots"]

export const scaleScenario = async (database: Database): Promise<Section> => {
  const others = othersFor(database)
  log(`${database}: scale: a fresh database with ${others} tasks of 19 other users; main user at ${SIZES.join(", ")} tasks`)
  const rows: Array<Array<string>> = []
  const cells = (t: Timing) => [
    t.p50.toFixed(2),
    t.p99.toFixed(2),
    t.cpuMs === undefined ? "-" : t.cpuMs.toFixed(2),
    t.dbCpuMs === undefined ? "-" : t.dbCpuMs.toFixed(2)
  ]
  for (const size of SIZES) {
    // A database of its own per size, so "as written" is never analyzed at any size.
    const fresh = await freshDatabase(database)
    await migrate(fresh.env)
    const { seeded, ids } = await withExec(fresh, async (exec) => {
      if (database === "postgres") {
        for (const table of TABLES) await exec(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`)
      }
      const seeded = await seed(exec, { users: 20, mainTasks: 0 })
      const owners = await exec(`SELECT id FROM users WHERE id <> $1 ORDER BY id`, [seeded.userId])
      const each = Math.ceil(others / owners.length)
      for (const owner of owners) await growTasks(exec, Number(owner.id), each, "Chore")
      await growTasks(exec, seeded.userId, size, "Task")
      const sample = await sampleIds(exec, seeded.userId, 500)
      return { seeded, ids: { read: sample.readIds, patch: sample.patchIds } }
    })
    log(`${database}: scale: seeded ${size} tasks for the main user`)
    const byPhase = new Map<string, Map<string, Timing>>()
    for (const phase of ["as written", "after ANALYZE"] as const) {
      if (phase === "after ANALYZE") await withExec(fresh, (exec) => exec("ANALYZE"))
      const ours = await startOurs(fresh.env)
      try {
        await settle(ours.cpuMs)
        await warmUp(ids, { baseUrl: ours.baseUrl, token: seeded.token })
        await settle(ours.cpuMs)
        const timings = new Map<string, Timing>()
        for (const endpoint of ENDPOINTS) {
          const timing = await measure(endpoint, ids, { baseUrl: ours.baseUrl, token: seeded.token, cpuMs: ours.cpuMs }, fresh.databaseName)
          timings.set(endpoint.label, timing)
          log(`${database} scale ${size} ${phase} ${endpoint.label}: p50 ${timing.p50.toFixed(2)} ms p99 ${timing.p99.toFixed(2)} ms` +
            ` (${timing.count} requests${timing.failed > 0 ? `, ${timing.failed} failed` : ""})`)
        }
        byPhase.set(phase, timings)
      } finally {
        await ours.stop()
      }
      await sleep(500)
    }
    for (const endpoint of ENDPOINTS) {
      const before = byPhase.get("as written")!.get(endpoint.label)!
      const after = byPhase.get("after ANALYZE")!.get(endpoint.label)!
      rows.push([
        String(size),
        endpoint.label,
        ...cells(before),
        ...cells(after),
        (before.p50 / after.p50).toFixed(2)
      ])
    }
  }
  // The issue's two ratios: list (limit 50) at the largest size against the smallest, and
  // the worst as-written/analyzed p50 ratio over the reads.
  const listAt = (size: number, phase: number) => Number(rows.find((r) => r[0] === String(size) && r[1] === ENDPOINTS[0]!.label)?.[phase])
  const smallest = SIZES[0]!
  const largest = SIZES[SIZES.length - 1]!
  const growth = listAt(largest, 2) / listAt(smallest, 2)
  const reads = rows.filter((r) => r[1]!.startsWith("GET"))
  const worst = reads.reduce((w, r) => Math.max(w, Number(r[10])), 0)
  return {
    title: `Scale, ${database}: main user at ${SIZES.join(" / ")} tasks beside ${others} tasks of 19 others; one request at a ` +
      `time, ${REQUESTS} per endpoint and phase; ms; CPU ms per request (service, database backends). ` +
      `list50 p50 at ${largest} / at ${smallest} (as written): ${growth.toFixed(2)} (target ≤ 1.5); ` +
      `worst read as written / after ANALYZE: ${worst.toFixed(2)} (target ≤ 1.5)`,
    lines: formatTable(
      ["tasks", "endpoint", "p50", "p99", "CPU", "db CPU", "p50 an.", "p99 an.", "CPU an.", "db CPU an.", "p50 ratio"],
      rows,
      (c) => c === 0 || c >= 2
    )
  }
}
