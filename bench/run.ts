/**
 * `npm run bench`: seeds a fresh database (20 users, 10,000 tasks for one of them), starts
 * the built service on it and drives six scenarios with autocannon; on PostgreSQL it also
 * runs a bare `node:http` + `pg` baseline (bench/baseline.ts) over the same SQL for the two
 * read scenarios, in interleaved A/B rounds, and reports ours/baseline ratios.
 *
 * Everything stays on 127.0.0.1; child servers, the created database and the temporary data
 * directories are removed however the run ends.
 *
 * Environment (all optional):
 *   BENCH_DURATION     seconds per measured scenario run   (10)
 *   BENCH_WARMUP       seconds of warm-up before each run    (2)
 *   BENCH_CONNECTIONS  concurrent connections               (32)
 *   BENCH_ROUNDS       A/B rounds for the compared scenarios (2)
 *   BENCH_DATABASES    "postgres,embedded", or one of them
 *   BENCH_PG_URL       admin URL of the PostgreSQL server  (postgres://postgres@127.0.0.1:5432/test)
 *   BENCH_TASKS        tasks of the main user              (10000)
 *   BENCH_SKIP_BUILD   1 to use the existing dist/
 */
import { PGlite } from "@electric-sql/pglite"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import Pg from "pg"
import { drive, makeScenarios, probe, type Scenario } from "./load.js"
import {
  cleanupAll,
  cpuDelta,
  databaseBackendsCpuMs,
  freePort,
  onCleanup,
  runCommand,
  type Server,
  sleep,
  startServer
} from "./processes.js"
import { type Database, type Measurement, printReport, type ServerKind } from "./report.js"
import { type Exec, seed, type Seeded } from "./seed.js"

const ROOT = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")

const numberEnv = (name: string, fallback: number, min: number, max: number) => {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === "") return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value < min || value > max) throw new Error(`${name} must be a number from ${min} to ${max}`)
  return value
}

const config = {
  duration: numberEnv("BENCH_DURATION", 10, 1, 120),
  warmup: numberEnv("BENCH_WARMUP", 2, 0, 60),
  connections: numberEnv("BENCH_CONNECTIONS", 32, 1, 1000),
  rounds: numberEnv("BENCH_ROUNDS", 2, 1, 10),
  tasks: numberEnv("BENCH_TASKS", 10_000, 10, 200_000),
  users: 20,
  databases: (process.env.BENCH_DATABASES ?? "postgres,embedded").split(",").map((s) => s.trim()).filter((s) => s !== ""),
  pgUrl: process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test",
  skipBuild: process.env.BENCH_SKIP_BUILD === "1"
}

for (const db of config.databases) {
  if (db !== "postgres" && db !== "embedded") throw new Error(`BENCH_DATABASES: unknown database "${db}"`)
}
const pgHost = new URL(config.pgUrl).hostname
if (!["127.0.0.1", "localhost", "::1", "[::1]"].includes(pgHost)) {
  throw new Error(`BENCH_PG_URL must point at a local server (127.0.0.1), not ${pgHost}`)
}

const measurements: Array<Measurement> = []

const log = (message: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`)

/** The environment of a child process: ours, minus any database settings of the caller. */
const childEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env }
  delete env.DATABASE_URL
  delete env.DATA_DIR
  delete env.SERVICE_NOW
  delete env.NODE_OPTIONS
  return { ...env, NODE_ENV: "production", ...extra }
}

const withDatabaseName = (base: string, name: string) => {
  const url = new URL(base)
  url.pathname = `/${name}`
  return url.toString()
}

interface Prepared {
  readonly env: Record<string, string>
  readonly seeded: Seeded
  readonly databaseUrl: string | undefined
  /** The PostgreSQL database's name, for reading its backends' CPU time. */
  readonly databaseName: string | undefined
}

const migrate = (env: Record<string, string>) =>
  runCommand(process.execPath, [Path.join(ROOT, "dist/src/cli.js"), "migrate"], { env: childEnv(env), timeoutMs: 120_000 })

const seedOptions = () => ({ users: config.users, mainTasks: config.tasks })

/** A fresh PostgreSQL database, migrated by the service's CLI, then seeded; dropped at the end. */
const preparePostgres = async (): Promise<Prepared> => {
  const name = `steady_bench_${Crypto.randomBytes(5).toString("hex")}`
  const admin = new Pg.Client({ connectionString: config.pgUrl })
  await admin.connect()
  try {
    await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  onCleanup(`drop database ${name}`, async () => {
    const client = new Pg.Client({ connectionString: config.pgUrl })
    await client.connect()
    try {
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    } finally {
      await client.end()
    }
    log(`dropped database ${name}`)
  })
  const databaseUrl = withDatabaseName(config.pgUrl, name)
  const env = { DATABASE_URL: databaseUrl }
  await migrate(env)
  const client = new Pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const exec: Exec = async (text, params) => (await client.query(text, params === undefined ? [] : [...params])).rows
    const seeded = await seed(exec, seedOptions())
    await client.query("VACUUM ANALYZE")
    return { env, seeded, databaseUrl, databaseName: name }
  } finally {
    await client.end()
  }
}

/** A fresh embedded data directory, migrated by the CLI, seeded in-process with PGlite, then closed. */
const prepareEmbedded = async (): Promise<Prepared> => {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "steady-bench-"))
  onCleanup(`remove ${dataDir}`, async () => Fs.rmSync(dataDir, { recursive: true, force: true }))
  const env = { DATA_DIR: dataDir }
  await migrate(env)
  const db = new PGlite(dataDir)
  await db.waitReady
  try {
    await db.exec("SET TIME ZONE 'UTC'")
    const exec: Exec = async (text, params) =>
      (await db.query<Record<string, unknown>>(text, params === undefined ? [] : [...params])).rows
    const seeded = await seed(exec, seedOptions())
    await db.exec("VACUUM ANALYZE")
    return { env, seeded, databaseUrl: undefined, databaseName: undefined }
  } finally {
    await db.close()
  }
}

const startOurs = async (env: Record<string, string>) => {
  const port = await freePort()
  return startServer({
    name: "steady",
    args: [Path.join(ROOT, "dist/src/main.js")],
    env: childEnv({ ...env, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" }),
    port,
    healthPath: "/api/health",
    startTimeoutMs: 90_000
  })
}

const startBaseline = async (databaseUrl: string) => {
  const port = await freePort()
  return startServer({
    name: "baseline",
    args: ["--import", "tsx", Path.join(ROOT, "bench/baseline.ts")],
    env: childEnv({ DATABASE_URL: databaseUrl, PORT: String(port), HOST: "127.0.0.1" }),
    port,
    healthPath: "/health",
    startTimeoutMs: 30_000
  })
}

const measure = async (
  scenario: Scenario,
  database: Database,
  server: Server,
  kind: ServerKind,
  round: number,
  token: string,
  databaseName: string | undefined
) => {
  const options = { baseUrl: server.baseUrl, token, connections: config.connections }
  // Let the previous run's dropped connections and cancelled queries settle first.
  await sleep(500)
  if (config.warmup > 0) await drive(scenario, { ...options, durationSeconds: config.warmup })
  const cpuBefore = server.cpuMs()
  const dbBefore = databaseName === undefined ? undefined : databaseBackendsCpuMs(databaseName)
  const result = await drive(scenario, { ...options, durationSeconds: config.duration })
  const cpuAfter = server.cpuMs()
  const dbAfter = databaseName === undefined ? undefined : databaseBackendsCpuMs(databaseName)
  const rssMiB = server.rssMiB()
  const cpuPerRequest = cpuBefore === undefined || cpuAfter === undefined || result.total === 0
    ? undefined
    : (cpuAfter - cpuBefore) / result.total
  const dbCpuPerRequest = dbBefore === undefined || dbAfter === undefined || result.total === 0
    ? undefined
    : cpuDelta(dbBefore, dbAfter) / result.total
  measurements.push({ scenario, database, server: kind, round, result, rssMiB, cpuPerRequest, dbCpuPerRequest })
  log(
    `${database} ${kind.padEnd(8)} ${scenario.label.padEnd(24)} r${round} ` +
      `${result.requestsPerSecond.toFixed(0)} req/s p50 ${result.p50} ms p99 ${result.p99} ms` +
      (cpuPerRequest === undefined ? "" : ` cpu ${cpuPerRequest.toFixed(2)} ms/req`) +
      (dbCpuPerRequest === undefined ? "" : ` db cpu ${dbCpuPerRequest.toFixed(2)} ms/req`) +
      ` load ${Os.loadavg()[0]!.toFixed(1)}` +
      (result.bad > 0 ? ` (${result.bad} failed or non-2xx)` : "")
  )
}

/** Same SQL, same data: the baseline must send exactly the service's bytes. */
const checkSameBodies = async (scenario: Scenario, ours: Server, baseline: Server, token: string) => {
  const [a, b] = await Promise.all([probe(scenario, ours.baseUrl, token), probe(scenario, baseline.baseUrl, token)])
  if (a !== b) throw new Error(`${scenario.label}: the baseline's body differs from the service's`)
}

const benchDatabase = async (database: Database) => {
  log(`${database}: preparing a fresh database with ${config.users} users and ${config.tasks} tasks for one of them`)
  const prepared = database === "postgres" ? await preparePostgres() : await prepareEmbedded()
  const { seeded } = prepared
  log(`${database}: seeded ${seeded.taskCount} tasks`)
  const scenarios = makeScenarios(seeded)
  const ours = await startOurs(prepared.env)
  const baseline = prepared.databaseUrl === undefined ? undefined : await startBaseline(prepared.databaseUrl)
  try {
    for (const scenario of scenarios) if (scenario.method === "GET") await probe(scenario, ours.baseUrl, seeded.token)
    const compared = scenarios.filter((s) => s.compared)
    if (baseline !== undefined) {
      for (const scenario of compared) await checkSameBodies(scenario, ours, baseline, seeded.token)
      // A/B rounds, alternating which side goes first.
      for (let round = 1; round <= config.rounds; round++) {
        for (const scenario of compared) {
          const order: ReadonlyArray<[ServerKind, Server]> = round % 2 === 1
            ? [["baseline", baseline], ["ours", ours]]
            : [["ours", ours], ["baseline", baseline]]
          for (const [kind, server] of order) await measure(scenario, database, server, kind, round, seeded.token, prepared.databaseName)
        }
      }
    } else {
      for (const scenario of compared) await measure(scenario, database, ours, "ours", 1, seeded.token, prepared.databaseName)
    }
    // Reads first, then writes, which add rows.
    const order: ReadonlyArray<Scenario["key"]> = ["list", "counts", "create", "patch"]
    for (const key of order) {
      const scenario = scenarios.find((s) => s.key === key)!
      await probe(scenario, ours.baseUrl, seeded.token)
      await measure(scenario, database, ours, "ours", 1, seeded.token, prepared.databaseName)
    }
    const errors = ours.errors()
    if (errors.count > 0) {
      log(`${database}: the service logged ${errors.count} error(s) during the run; the first:\n${errors.first}`)
    }
  } catch (error) {
    console.error(`service output:\n${ours.output()}`)
    throw error
  } finally {
    await ours.stop()
    if (baseline !== undefined) await baseline.stop()
    await cleanupAll()
  }
}

// ---- main ----

const perDatabaseSeconds = (database: string) => {
  const runs = database === "postgres" ? 2 * 2 * config.rounds + 4 : 6
  return runs * (config.duration + config.warmup + 3) + 180
}
const budgetMs = (config.databases.reduce((s, d) => s + perDatabaseSeconds(d), 0) + 300) * 1000

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
    if (!config.skipBuild) {
      log("building (npm run build)")
      await runCommand("npm", ["run", "build"], { timeoutMs: 180_000, cwd: ROOT })
    }
    for (const database of config.databases) await benchDatabase(database as Database)
    printReport(measurements, { ...config, startLoad })
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
