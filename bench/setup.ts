import { PGlite } from "@electric-sql/pglite"
import * as ChildProcess from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import Pg from "pg"
import { drive, type LoadResult, type Scenario } from "./load.js"
import { cpuDelta, databaseBackendsCpuMs, freePort, onCleanup, runCommand, type Server, sleep, startServer } from "./processes.js"
import type { Database } from "./report.js"
import type { Exec } from "./seed.js"

/**
 * What every part of `npm run bench` shares: the settings read from the environment,
 * fresh databases (created, migrated, seeded, and removed at the end), and starting the
 * built service or the baseline on 127.0.0.1.
 */

export const ROOT = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")

const numberEnv = (name: string, fallback: number, min: number, max: number) => {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === "") return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value < min || value > max) throw new Error(`${name} must be a number from ${min} to ${max}`)
  return value
}

const listEnv = (name: string, fallback: string) =>
  (process.env[name] ?? fallback).split(",").map((s) => s.trim()).filter((s) => s !== "")

export const ALL_SCENARIOS = ["endpoints", "webhooks", "export", "quota-sweep", "ai", "idempotency", "rollover", "sse", "scale", "memory", "peer"] as const
export type ScenarioGroup = (typeof ALL_SCENARIOS)[number]

export const config = {
  duration: numberEnv("BENCH_DURATION", 10, 1, 120),
  warmup: numberEnv("BENCH_WARMUP", 2, 0, 60),
  /** Seconds a freshly started service is driven before its first measured run (compared scenarios). */
  serviceWarmup: numberEnv("BENCH_SERVICE_WARMUP", 8, 0, 120),
  connections: numberEnv("BENCH_CONNECTIONS", 32, 1, 1000),
  rounds: numberEnv("BENCH_ROUNDS", 2, 1, 10),
  /**
   * Rounds of the idempotency A/B (its own, more than `rounds`): it is judged on the median of
   * its per-round ratios, and a median needs enough rounds to leave out a run that met the
   * minute's compaction (the undo trim after ~10,000 writes, up to a second of both
   * processes' CPU inside one 10 s run).
   */
  idempotencyRounds: numberEnv("BENCH_IDEMPOTENCY_ROUNDS", 5, 1, 15),
  tasks: numberEnv("BENCH_TASKS", 10_000, 10, 200_000),
  users: 20,
  databases: listEnv("BENCH_DATABASES", "postgres,embedded"),
  scenarios: listEnv("BENCH_SCENARIOS", ALL_SCENARIOS.join(",")),
  pgUrl: process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test",
  skipBuild: process.env.BENCH_SKIP_BUILD === "1",
  /** endpoints on the embedded database: an earlier build's `dist` to compare with, in A/B rounds. */
  beforeDist: process.env.BENCH_BEFORE_DIST === undefined || process.env.BENCH_BEFORE_DIST === ""
    ? undefined
    : Path.resolve(process.env.BENCH_BEFORE_DIST),
  /** quota-sweep: quotas seeded, and how many of them have an ended period. */
  quotas: numberEnv("BENCH_QUOTAS", 100_000, 1_000, 1_000_000),
  quotaEnded: numberEnv("BENCH_QUOTA_ENDED", 1_000, 10, 100_000),
  quotaUsers: numberEnv("BENCH_QUOTA_USERS", 100, 1, 10_000),
  /** export: tasks of the exporting user. */
  exportTasks: numberEnv("BENCH_EXPORT_TASKS", 100_000, 10, 1_000_000)
}

for (const db of config.databases) {
  if (db !== "postgres" && db !== "embedded") throw new Error(`BENCH_DATABASES: unknown database "${db}"`)
}
for (const s of config.scenarios) {
  if (!(ALL_SCENARIOS as ReadonlyArray<string>).includes(s)) {
    throw new Error(`BENCH_SCENARIOS: unknown scenario "${s}" (use ${ALL_SCENARIOS.join(", ")})`)
  }
}
if (config.quotaEnded * 10 > config.quotas) throw new Error("BENCH_QUOTA_ENDED × 10 must not exceed BENCH_QUOTAS")
const pgHost = new URL(config.pgUrl).hostname
if (!["127.0.0.1", "localhost", "::1", "[::1]"].includes(pgHost)) {
  throw new Error(`BENCH_PG_URL must point at a local server (127.0.0.1), not ${pgHost}`)
}

export const selected = (group: ScenarioGroup) => config.scenarios.includes(group)

export const log = (message: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`)

/** The environment of a child process: ours, minus any database settings of the caller. */
export const childEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env }
  delete env.DATABASE_URL
  delete env.DATA_DIR
  delete env.SERVICE_NOW
  delete env.NODE_OPTIONS
  return { ...env, NODE_ENV: "production", ...(process.env.BENCH_SERVICE_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_SERVICE_NODE_OPTIONS } : {}), ...extra }
}

const withDatabaseName = (base: string, name: string) => {
  const url = new URL(base)
  url.pathname = `/${name}`
  return url.toString()
}

/** An empty database: a new PostgreSQL database, or a new embedded data directory. Removed at the end. */
export interface FreshDatabase {
  /** DATABASE_URL or DATA_DIR, for the service. */
  readonly env: Record<string, string>
  readonly databaseUrl: string | undefined
  readonly dataDir: string | undefined
  /** The PostgreSQL database's name, for reading its backends' CPU time. */
  readonly databaseName: string | undefined
}

/** Runs PostgreSQL administration statements on the server's maintenance database. */
const adminQuery = async (text: string) => {
  const admin = new Pg.Client({ connectionString: config.pgUrl })
  await admin.connect()
  try {
    await admin.query(text)
  } finally {
    await admin.end()
  }
}

export const freshDatabase = async (database: Database): Promise<FreshDatabase> => {
  if (database === "embedded") {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "steady-bench-"))
    onCleanup(`remove ${dataDir}`, async () => Fs.rmSync(dataDir, { recursive: true, force: true }))
    return { env: { DATA_DIR: dataDir }, databaseUrl: undefined, dataDir, databaseName: undefined }
  }
  const name = `steady_bench_${Crypto.randomBytes(5).toString("hex")}`
  await adminQuery(`CREATE DATABASE ${name}`)
  onCleanup(`drop database ${name}`, async () => {
    // BENCH_KEEP_DATABASE=1 leaves it for a look at its plans afterwards.
    if (process.env.BENCH_KEEP_DATABASE === "1") return log(`kept database ${name}`)
    await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    log(`dropped database ${name}`)
  })
  const databaseUrl = withDatabaseName(config.pgUrl, name)
  return { env: { DATABASE_URL: databaseUrl }, databaseUrl, dataDir: undefined, databaseName: name }
}

/**
 * A copy of a prepared database (`CREATE DATABASE … TEMPLATE`, or the data directory
 * copied), removed at the end: interleaved A/B runs each start from the same rows, instead
 * of each finding what the runs before it wrote (rows, dead tuples, a queue backlog), which
 * made whichever variant ran second in a round look slower.
 */
export const copyOf = async (prepared: FreshDatabase): Promise<FreshDatabase & { readonly remove: () => Promise<void> }> => {
  if (prepared.databaseName === undefined) {
    const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "steady-bench-copy-"))
    const remove = onCleanup(`remove ${dataDir}`, async () => Fs.rmSync(dataDir, { recursive: true, force: true }))
    Fs.cpSync(prepared.dataDir!, dataDir, { recursive: true, filter: (source) => Path.basename(source) !== "steady.lock" })
    return { env: { DATA_DIR: dataDir }, databaseUrl: undefined, dataDir, databaseName: undefined, remove }
  }
  const name = `steady_bench_${Crypto.randomBytes(5).toString("hex")}`
  await adminQuery(`CREATE DATABASE ${name} TEMPLATE ${prepared.databaseName}`)
  const remove = onCleanup(`drop database ${name}`, () => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`))
  const databaseUrl = withDatabaseName(config.pgUrl, name)
  return { env: { DATABASE_URL: databaseUrl }, databaseUrl, dataDir: undefined, databaseName: name, remove }
}

export interface Prepared<T> extends FreshDatabase {
  readonly seeded: T
}

export const migrate = (env: Record<string, string>) =>
  runCommand(process.execPath, [Path.join(ROOT, "dist/src/cli.js"), "migrate"], { env: childEnv(env), timeoutMs: 120_000 })

/**
 * A fresh database, migrated by the service's CLI, then seeded with direct SQL (through
 * `pg`, or PGlite in-process, closed again before the service opens the directory).
 */
export const prepare = async <T>(database: Database, seedWith: (exec: Exec) => Promise<T>): Promise<Prepared<T>> => {
  const fresh = await freshDatabase(database)
  await migrate(fresh.env)
  const seeded = await withExec(fresh, async (exec) => {
    const seeded = await seedWith(exec)
    await exec("VACUUM ANALYZE")
    return seeded
  })
  return { ...fresh, seeded }
}

/**
 * Runs `use` with direct SQL on a fresh database while no service holds it: through `pg`,
 * or PGlite in-process (closed again before a service opens the directory).
 */
export const withExec = async <A>(fresh: FreshDatabase, use: (exec: Exec) => Promise<A>): Promise<A> => {
  if (fresh.databaseUrl !== undefined) {
    const client = new Pg.Client({ connectionString: fresh.databaseUrl })
    await client.connect()
    try {
      return await use(async (text, params) => (await client.query(text, params === undefined ? [] : [...params])).rows)
    } finally {
      await client.end()
    }
  }
  const db = new PGlite(fresh.dataDir!)
  await db.waitReady
  try {
    await db.exec("SET TIME ZONE 'UTC'")
    return await use(async (text, params) =>
      (await db.query<Record<string, unknown>>(text, params === undefined ? [] : [...params])).rows
    )
  } finally {
    await db.close()
  }
}

/**
 * The Node flags and the environment `npm start` runs the service with, on the database that
 * `databaseUrl` selects (unset: embedded), so the bench runs the process a user runs (an
 * earlier build of `BENCH_BEFORE_DIST` too, so both run alike). Read from the package.json
 * beside `root`'s dist/: a start script through `scripts/run-node.sh` (which picks the flags by
 * database) is asked for them with STEADY_PRINT_COMMAND=1; an earlier one that named them
 * inline (`exec [NAME=value] node <flags> scripts/start.mjs`) is read from its text.
 */
export const serviceCommand = (
  root: string,
  databaseUrl: string | undefined,
  /** The environment the service will get beyond this process's (a variant's `SERVICE_SEMI_SPACE_MB`, say). */
  extraEnv: Readonly<Record<string, string>> = {}
): { readonly flags: ReadonlyArray<string>; readonly env: Record<string, string> } => {
  const start: string = JSON.parse(Fs.readFileSync(Path.join(root, "package.json"), "utf8")).scripts.start
  if (/scripts\/run-node\.sh/.test(start)) {
    const env: NodeJS.ProcessEnv = { ...process.env, ...extraEnv, STEADY_PRINT_COMMAND: "1" }
    delete env.DATABASE_URL
    if (databaseUrl !== undefined) env.DATABASE_URL = databaseUrl
    const lines = ChildProcess.execFileSync("sh", [Path.join(root, "scripts", "run-node.sh"), "ENTRY"], { env, encoding: "utf8" })
      .split("\n").filter((line) => line !== "")
    const flags = lines.filter((l) => l.startsWith("arg ")).map((l) => l.slice(4)).filter((a) => a !== "node" && a !== "ENTRY")
    return { flags, env: {} }
  }
  const command = /\bnode\s+(.*?)\s*(?:dist\/src\/main\.js|scripts\/start\.mjs)/.exec(start)
  if (command === null) throw new Error(`package.json's start script runs neither scripts/start.mjs nor dist/src/main.js: ${start}`)
  // `${NAME:-default}` (SERVICE_SEMI_SPACE_MB) as the shell would expand it, from this environment.
  const flags = command[1]!.replace(/\$\{([A-Z_][A-Z0-9_]*):-([^}]*)\}/g, (_, name: string, fallback: string) => {
    const value = extraEnv[name] ?? process.env[name]
    return value === undefined || value === "" ? fallback : value
  }).split(/\s+/).filter((flag) => flag !== "")
  const head = start.slice(0, Math.max(0, start.search(/\bnode\s/)))
  const env = Object.fromEntries([...head.matchAll(/(?:^|\s)([A-Z_][A-Z0-9_]*)=(\S+)/g)].map((m) => [m[1]!, m[2]!]))
  return { flags, env }
}

export const startOurs = async (
  env: Record<string, string>,
  dist = Path.join(ROOT, "dist"),
  /** Node flags after the start script's and BENCH_SERVICE_NODE_ARGS (a variant's, bench/variants.ts). */
  nodeArgs: ReadonlyArray<string> = []
) => {
  const port = await freePort()
  // The flags of this tree's start script for both builds, so both run alike.
  const command = serviceCommand(ROOT, env.DATABASE_URL, env)
  return startServer({
    name: dist === Path.join(ROOT, "dist") ? "steady" : "steady-before",
    // Flags Node refuses in NODE_OPTIONS (--cpu-prof) go on the command line.
    args: [
      ...command.flags,
      ...(process.env.BENCH_SERVICE_NODE_ARGS?.split(" ").filter((a) => a !== "") ?? []),
      ...nodeArgs,
      Path.join(dist, "src/main.js")
    ],
    env: childEnv({ ...command.env, ...env, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" }),
    port,
    healthPath: "/api/health",
    startTimeoutMs: 90_000
  })
}

/**
 * The earlier build of `BENCH_BEFORE_DIST` on a copy of the prepared data directory (one
 * directory holds one server), so both builds serve the same rows side by side.
 */
export const startBefore = async (prepared: FreshDatabase) => startOurs((await copyOf(prepared)).env, config.beforeDist!)

export const startBaseline = async (databaseUrl: string) => {
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

export interface Run {
  readonly result: LoadResult
  readonly rssMiB: number | undefined
  /** Server CPU time per completed request, in ms. */
  readonly cpuPerRequest: number | undefined
  /** CPU time of the database's backends per completed request, in ms (PostgreSQL only). */
  readonly dbCpuPerRequest: number | undefined
}

/**
 * Drives a freshly started service with `scenarios` (the time split between them) before
 * anything is measured: V8 is still compiling the request path for its first ~10 s, and a
 * comparison whose first run meets a colder process than the second measures the JIT.
 */
export const warmUpService = async (scenarios: ReadonlyArray<Scenario>, server: Server, token: string) => {
  if (config.serviceWarmup <= 0 || scenarios.length === 0) return
  const seconds = Math.max(1, Math.round(config.serviceWarmup / scenarios.length))
  for (const scenario of scenarios) {
    await drive(scenario, { baseUrl: server.baseUrl, token, connections: config.connections, durationSeconds: seconds })
  }
}

/** A warm-up, then one measured autocannon run, with the server's and the database's CPU time. */
export const measureRun = async (
  scenario: Scenario,
  server: Server,
  token: string,
  databaseName: string | undefined
): Promise<Run> => {
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
  return { result, rssMiB, cpuPerRequest, dbCpuPerRequest }
}

export const describeRun = (run: Run) =>
  `${run.result.requestsPerSecond.toFixed(0)} req/s p50 ${run.result.p50} ms p99 ${run.result.p99} ms` +
  (run.cpuPerRequest === undefined ? "" : ` cpu ${run.cpuPerRequest.toFixed(2)} ms/req`) +
  (run.dbCpuPerRequest === undefined ? "" : ` db cpu ${run.dbCpuPerRequest.toFixed(2)} ms/req`) +
  ` load ${Os.loadavg()[0]!.toFixed(1)}` +
  (run.result.bad > 0 ? ` (${run.result.bad} failed or non-2xx)` : "")
