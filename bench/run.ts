/**
 * `npm run bench`: four groups of scenarios, each on a fresh database of its own, on
 * PostgreSQL and on the embedded database.
 *
 *   endpoints    seeds 20 users (10,000 tasks for one of them), starts the built service and
 *                drives seven endpoints (wrk, or autocannon; BENCH_LOADGEN); on PostgreSQL it also runs a bare
 *                `node:http` + `pg` baseline (bench/baseline.ts): the same SQL for the two
 *                read scenarios, a token lookup and one INSERT/UPDATE for the three writes
 *                (POST, PATCH, done), in interleaved A/B rounds, and reports ours/baseline ratios.
 *   webhooks     POST and PATCH /api/tasks with no webhooks, 3 webhooks to a fast receiver
 *                and 3 to a receiver that never answers (bench/webhooks.ts).
 *   export       GET /api/export as JSON and CSV for a user with 100,000 tasks: time, bytes,
 *                the service's RSS before and at its peak (bench/export.ts).
 *   quota-sweep  Quotas.sweep() in-process over 100,000 quotas with 1,000, none and 10,000
 *                ended periods (bench/quota-sweep.ts).
 *   ai           title-only POST /api/tasks with AI off and on (a fake provider): enrichment
 *                must not slow the create, req/s on/off ≥ 0.95 (bench/ai.ts).
 *   idempotency  POST /api/tasks without and with a fresh Idempotency-Key per request:
 *                req/s with/without ≥ 0.90 in the median of its rounds (bench/idempotency.ts).
 *   rollover     100,000 daily quotas ending at one local midnight closed by Quotas.sweep()
 *                in-process: one instance, two at once (PostgreSQL), and the per-task
 *                pipeline on a sample for scale (bench/rollover.ts; BENCH_ROLLOVER_QUOTAS,
 *                BENCH_ROLLOVER_USERS, BENCH_ROLLOVER_SAMPLE).
 *   sse          1,000 open GET /api/events streams while tasks are created at 100/s: delivery
 *                p50/p99, lost or repeated events, RSS per stream, CPU per write with and
 *                without the streams (bench/sse.ts; BENCH_SSE_STREAMS, BENCH_SSE_RATE,
 *                BENCH_SSE_SECONDS).
 *   scale        hot reads and writes one request at a time at 1,000, 10,000 and 100,000 tasks of one
 *                user beside 1,000,000 tasks of others (100,000 embedded), as written and after
 *                ANALYZE: p50/p99 and CPU per request (bench/scale.ts; BENCH_SCALE_SIZES,
 *                BENCH_SCALE_OTHERS, BENCH_SCALE_REQUESTS).
 *   memory       RSS of the service's process tree (Node alone on PostgreSQL, Node + PGlite
 *                embedded) idle, at its peak during BENCH_MEMORY_SECONDS (60) of c=32 mixed load
 *                (GET ?limit=50, GET by id, POST, PATCH priority) over BENCH_TASKS tasks, and
 *                settled BENCH_MEMORY_SETTLE (30) s after; where it is (V8 heaps, WebAssembly
 *                heap, the rest); then a soak of BENCH_SOAK_SECONDS (600) and its RSS slope in
 *                MiB/min. Targets: PostgreSQL peak ≤ 200, settled ≤ 150 MiB; embedded peak
 *                ≤ 350, settled ≤ 250 MiB; slope ≤ 0.5 MiB/min. BENCH_MEMORY_VARIANTS compares
 *                node flags, environments or builds in interleaved rounds, with each endpoint's
 *                req/s (bench/memory.ts). Alone: BENCH_SCENARIOS=memory npm run bench.
 *   peer         Steady (each database of BENCH_DATABASES) beside OpenTask, the app it replaces, run
 *                as a black box from OPENTASK_DIR (built by bench/peer-build.sh): the same data
 *                written through each API, nine rows in interleaved rounds, req/s, p50/p99 and
 *                Steady/OpenTask ratios, wire bytes (bench/peer.ts). Runs once, not per
 *                database; says so and how to build it when OpenTask is absent.
 *
 * Everything stays on 127.0.0.1; child servers, receivers, the created databases and the
 * temporary data directories are removed however the run ends.
 *
 * Environment (all optional):
 *   BENCH_SCENARIOS    "endpoints,webhooks,export,quota-sweep,ai,idempotency,rollover,sse,scale,memory,peer",
 *                      or some of them (all)
 *   BENCH_DATABASES    "postgres,embedded", or one of them
 *   BENCH_DURATION     seconds per measured load run          (10)
 *   BENCH_LOADGEN      wrk or autocannon: the load generator   (wrk when on the PATH, see bench/load.ts)
 *   BENCH_WARMUP       seconds of warm-up before each run      (2)
 *   BENCH_CONNECTIONS  concurrent connections                 (32)
 *   BENCH_ROUNDS       interleaved rounds of compared runs     (2)
 *   BENCH_PG_URL       admin URL of the PostgreSQL server  (postgres://postgres@127.0.0.1:5432/test)
 *   BENCH_TASKS        tasks of the main user (endpoints, webhooks)  (10000)
 *   BENCH_EXPORT_TASKS tasks of the exporting user                    (100000)
 *   BENCH_QUOTAS       quotas seeded for the sweep                    (100000)
 *   BENCH_QUOTA_ENDED  of which have an ended period; ×10 later       (1000)
 *   BENCH_QUOTA_USERS  users the quotas are spread over               (100)
 *   BENCH_SKIP_BUILD   1 to use the existing dist/
 *   BENCH_KEEP_DATABASE 1 to keep the PostgreSQL database afterwards (to look at its plans)
 *   BENCH_MEMORY_VARIANTS, BENCH_MEMORY_SECONDS, BENCH_MEMORY_SETTLE, BENCH_MEMORY_ENDPOINTS,
 *   BENCH_SOAK_SECONDS, BENCH_SOAK_VARIANTS, BENCH_MEMPROBE   see bench/memory.ts
 *   OPENTASK_DIR       peer: the built OpenTask checkout (../peer/opentask); BENCH_PEER_OTHERS,
 *                      BENCH_PEER_OTHER_TASKS, BENCH_PEER_SEED_CONCURRENCY   see bench/peer.ts
 *   BENCH_BEFORE_DIST  the dist/ of an earlier build: endpoints on the embedded database compares
 *                      it with this one in A/B rounds, every scenario, on copies of one data directory
 */
import * as Os from "node:os"
import { aiScenario } from "./ai.js"
import { exportScenario } from "./export.js"
import { idempotencyScenario } from "./idempotency.js"
import { makeScenarios, probe, type Scenario } from "./load.js"
import { memoryScenario, memorySeconds } from "./memory.js"
import { peerBudgetSeconds, peerScenario } from "./peer.js"
import { cleanupAll, runCommand, type Server } from "./processes.js"
import { quotaSweep } from "./quota-sweep.js"
import { rolloverScenario } from "./rollover.js"
import { scaleScenario } from "./scale.js"
import { type Database, type Measurement, printReport, printSections, type Section, type ServerKind } from "./report.js"
import { seed } from "./seed.js"
import { sseScenario } from "./sse.js"
import {
  config,
  describeRun,
  log,
  measureRun,
  prepare,
  ROOT,
  type ScenarioGroup,
  selected,
  startBaseline,
  startBefore,
  startOurs
} from "./setup.js"
import { webhooksScenario } from "./webhooks.js"

const measurements: Array<Measurement> = []
const sections: Array<Section> = []

const measure = async (
  scenario: Scenario,
  database: Database,
  server: Server,
  kind: ServerKind,
  round: number,
  token: string,
  databaseName: string | undefined
) => {
  const run = await measureRun(scenario, server, token, databaseName)
  measurements.push({ scenario, database, server: kind, round, ...run })
  log(`${database} ${kind.padEnd(8)} ${scenario.label.padEnd(24)} r${round} ${describeRun(run)}`)
}

/** Same SQL, same data: the baseline must send exactly the service's bytes. */
const checkSameBodies = async (scenario: Scenario, ours: Server, baseline: Server, token: string) => {
  const [a, b] = await Promise.all([probe(scenario, ours.baseUrl, token), probe(scenario, baseline.baseUrl, token)])
  if (a !== b) throw new Error(`${scenario.label}: the baseline's body differs from the service's`)
}

const benchEndpoints = async (database: Database) => {
  log(`${database}: preparing a fresh database with ${config.users} users and ${config.tasks} tasks for one of them`)
  const prepared = await prepare(database, (exec) => seed(exec, { users: config.users, mainTasks: config.tasks }))
  const { seeded } = prepared
  log(`${database}: seeded ${seeded.taskCount} tasks`)
  const scenarios = makeScenarios(seeded)
  // On the embedded database with BENCH_BEFORE_DIST, the earlier build takes the baseline's
  // place, and every scenario is compared (reads first, then the writes, which add rows).
  // It starts first: its copy of the data directory is taken before ours opens the original.
  const before = database === "embedded" && config.beforeDist !== undefined
  const baseline = before
    ? await startBefore(prepared)
    : prepared.databaseUrl === undefined
    ? undefined
    : await startBaseline(prepared.databaseUrl)
  const ours = await startOurs(prepared.env)
  const baselineKind: ServerKind = before ? "before" : "baseline"
  try {
    for (const scenario of scenarios) if (scenario.method === "GET") await probe(scenario, ours.baseUrl, seeded.token)
    const readOrder: ReadonlyArray<Scenario["key"]> = ["list50", "get", "list", "counts", "create", "patch", "done"]
    const compared = before
      ? readOrder.map((key) => scenarios.find((s) => s.key === key)!)
      : scenarios.filter((s) => s.compared)
    if (baseline !== undefined) {
      // Writes: the baseline does the bare minimum (bench/baseline.ts), with bodies of its own.
      for (const scenario of compared) {
        if (scenario.method === "GET") await checkSameBodies(scenario, ours, baseline, seeded.token)
        else await probe(scenario, baseline.baseUrl, seeded.token)
      }
      // A/B rounds, alternating which side goes first.
      for (let round = 1; round <= config.rounds; round++) {
        for (const scenario of compared) {
          const order: ReadonlyArray<[ServerKind, Server]> = round % 2 === 1
            ? [[baselineKind, baseline], ["ours", ours]]
            : [["ours", ours], [baselineKind, baseline]]
          for (const [kind, server] of order) await measure(scenario, database, server, kind, round, seeded.token, prepared.databaseName)
        }
      }
    } else {
      for (const scenario of compared) await measure(scenario, database, ours, "ours", 1, seeded.token, prepared.databaseName)
    }
    // Reads first, then writes, which add rows.
    const order: ReadonlyArray<Scenario["key"]> = before ? [] : ["list", "counts"]
    for (const key of order) {
      const scenario = scenarios.find((s) => s.key === key)!
      await probe(scenario, ours.baseUrl, seeded.token)
      await measure(scenario, database, ours, "ours", 1, seeded.token, prepared.databaseName)
    }
    const errors = ours.errors()
    if (errors.count > 0) {
      log(`${database}: the service logged ${errors.count} error(s) during the run: ${ours.errorSummary().join("; ")}; the first:\n${errors.first}`)
    }
  } catch (error) {
    console.error(`service output:\n${ours.output()}`)
    throw error
  } finally {
    await ours.stop()
    if (baseline !== undefined) await baseline.stop()
  }
}

// ---- main ----

/** Generous upper bounds, in seconds, for the watchdog. */
const groupSeconds = (group: ScenarioGroup, database: string) => {
  const run = config.duration + config.warmup + 3
  switch (group) {
    case "endpoints":
      return (database === "postgres" ? 5 * 2 * config.rounds + 2 : config.beforeDist !== undefined ? 7 * 2 * config.rounds : 7) * run +
        180
    case "webhooks":
      // Runs, the fast receiver's backlog (up to 90 s a run), the wait for hanging attempts.
      return 3 * 2 * config.rounds * (run + 1) + 2 * config.rounds * 92 + 20 * config.rounds + 180
    case "export":
      return (2 * config.rounds + 1) * Math.max(30, config.exportTasks / 2000) + config.exportTasks / 1000 + 180
    case "quota-sweep":
      return config.quotaEnded * 11 * 0.01 + config.quotas / 1000 + 180
    case "ai":
      // A service start (up to 90 s) per run.
      return 2 * config.rounds * (run + 90) + 180
    case "idempotency":
      return 2 * config.idempotencyRounds * (run + 1) + 240
    case "rollover":
      return 900
    case "sse":
      return 900
    case "scale":
      // Seeding (a million rows on a server) and 3 sizes × 2 phases × 8 endpoints of at most 6 s.
      return (database === "postgres" ? 600 : 400) + 3 * 2 * (8 * 7 + 100)
    case "memory":
      return memorySeconds() + 180
    case "peer":
      // Runs once, whatever the databases.
      return database === config.databases[0] ? peerBudgetSeconds() : 0
  }
}
const GROUPS: ReadonlyArray<ScenarioGroup> = ["endpoints", "webhooks", "export", "quota-sweep", "ai", "idempotency", "rollover", "sse", "scale", "memory", "peer"]
const groups = GROUPS.filter(selected)
const budgetMs = (config.databases.reduce((s, d) => s + groups.reduce((t, g) => t + groupSeconds(g, d), 0), 0) + 300) * 1000

const runGroup = async (group: ScenarioGroup, database: Database) => {
  try {
    switch (group) {
      case "endpoints":
        return await benchEndpoints(database)
      case "webhooks":
        sections.push(await webhooksScenario(database))
        return
      case "export":
        sections.push(await exportScenario(database))
        return
      case "quota-sweep":
        sections.push(await quotaSweep(database))
        return
      case "ai":
        sections.push(await aiScenario(database))
        return
      case "idempotency":
        sections.push(await idempotencyScenario(database))
        return
      case "rollover":
        sections.push(await rolloverScenario(database))
        return
      case "sse":
        sections.push(await sseScenario(database))
        return
      case "scale":
        sections.push(await scaleScenario(database))
        return
      case "memory":
        sections.push(await memoryScenario(database))
        return
      case "peer":
        sections.push(await peerScenario())
        return
    }
  } finally {
    await cleanupAll()
  }
}

const startLoad = Os.loadavg()[0]!
let interrupted = false
const abort = async (reason: string) => {
  if (interrupted) return
  interrupted = true
  console.error(`\nbench: ${reason}; cleaning up`)
  await cleanupAll()
  process.exit(1)
}
process.on("SIGINT", () => void abort("interrupted"))
process.on("SIGTERM", () => void abort("terminated"))
const watchdog = setTimeout(() => void abort(`over the time budget of ${Math.round(budgetMs / 1000)} s`), budgetMs)
watchdog.unref()

const main = async () => {
  try {
    // The quota sweep runs the sources in-process; everything else starts the built service.
    if (!config.skipBuild && groups.some((g) => g !== "quota-sweep" && g !== "rollover")) {
      log("building (npm run build)")
      await runCommand("npm", ["run", "build"], { timeoutMs: 180_000, cwd: ROOT })
    }
    log(`scenarios ${groups.join(", ")} on ${config.databases.join(", ")}; time budget ${Math.round(budgetMs / 1000)} s`)
    for (const database of config.databases) {
      for (const group of groups) if (group !== "peer") await runGroup(group, database as Database)
    }
    // Both databases beside OpenTask, once.
    if (groups.includes("peer")) await runGroup("peer", config.databases[0] as Database)
    if (measurements.length > 0) printReport(measurements, { ...config, startLoad })
    printSections(sections)
  } finally {
    await cleanupAll()
    clearTimeout(watchdog)
  }
}

main().then(
  () => process.exit(0),
  async (error) => {
    console.error(error instanceof Error ? error.stack ?? error.message : error)
    await cleanupAll()
    process.exit(1)
  }
)
