import * as Crypto from "node:crypto"
import Pg from "pg"
import { PGlite } from "@electric-sql/pglite"
import { probe, type Scenario } from "./load.js"
import { sleep } from "./processes.js"
import { type Database, formatTable, type Section } from "./report.js"
import { seed } from "./seed.js"
import { config, describeRun, log, measureRun, prepare, type Run, startOurs, warmUpService } from "./setup.js"
import { mean, median } from "./stats.js"

/**
 * Idempotency-Key cost: POST /api/tasks without a key and with a fresh key on
 * every request (what a client sends for new writes), on one service, in interleaved rounds
 * with the order rotating. A keyed create also takes the key's lock, records the answer in
 * the same transaction, and runs the pipeline's transaction as a savepoint.
 * Target: req/s with/without ≥ 0.90 in the median round (ratios: with/without of each round).
 */

type Variant = "without" | "with"
const VARIANTS: ReadonlyArray<Variant> = ["without", "with"]
export const IDEMPOTENCY_TARGET_RATIO = 0.9

const create = (variant: Variant): Scenario => ({
  key: "create",
  label: `POST /api/tasks (${variant} key)`,
  method: "POST",
  compared: false,
  request: (n) => ({
    path: "/api/tasks",
    body: JSON.stringify({ title: `idempotency bench ${n}`, priority: n % 5 }),
    ...(variant === "with" ? { headers: { "idempotency-key": Crypto.randomUUID() } } : {})
  })
})

/** Records written, to check every keyed request really went through the key path. */
const countRecords = async (databaseUrl: string | undefined, dataDir: string | undefined): Promise<number | undefined> => {
  const text = "SELECT count(*)::int AS n FROM idempotency_keys"
  if (databaseUrl !== undefined) {
    const client = new Pg.Client({ connectionString: databaseUrl })
    await client.connect()
    try {
      return (await client.query<{ n: number }>(text)).rows[0]!.n
    } finally {
      await client.end()
    }
  }
  if (dataDir === undefined) return undefined
  const db = new PGlite(dataDir)
  try {
    return (await db.query<{ n: number }>(text)).rows[0]!.n
  } finally {
    await db.close()
  }
}

export const idempotencyScenario = async (database: Database): Promise<Section> => {
  log(`${database}: idempotency: preparing a fresh database with ${config.users} users and 1000 tasks for one of them`)
  const prepared = await prepare(database, (exec) => seed(exec, { users: config.users, mainTasks: 1000 }))
  const { seeded } = prepared
  const measured: Array<{ variant: Variant; round: number; run: Run }> = []
  const ours = await startOurs(prepared.env)
  try {
    for (const variant of VARIANTS) await probe(create(variant), ours.baseUrl, seeded.token)
    await warmUpService(VARIANTS.map(create), ours, seeded.token)
    for (let round = 1; round <= config.idempotencyRounds; round++) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + round - 1) % VARIANTS.length]!)
      for (const variant of order) {
        const run = await measureRun(create(variant), ours, seeded.token, prepared.databaseName)
        measured.push({ variant, round, run })
        log(`${database} idempotency ${variant.padEnd(7)} r${round} ${describeRun(run)}`)
        await sleep(500)
      }
    }
  } finally {
    await ours.stop()
  }
  const keyed = measured.filter((m) => m.variant === "with").reduce((n, m) => n + m.run.result.total, 0)
  const records = await countRecords(prepared.databaseUrl, prepared.dataDir)
  const without = measured.filter((m) => m.variant === "without")
  const ratioOf = (m: { round: number; run: Run }, pick: (run: Run) => number | undefined) => {
    const base = without.find((x) => x.round === m.round)
    const a = pick(m.run)
    const b = base === undefined ? undefined : pick(base.run)
    return a === undefined || b === undefined ? undefined : a / b
  }
  const rows = VARIANTS.map((variant) => {
    const list = measured.filter((m) => m.variant === variant)
    const ratios = list.flatMap((m) => {
      const r = ratioOf(m, (run) => run.result.requestsPerSecond)
      return r === undefined ? [] : [r]
    })
    const cpuRatios = list.flatMap((m) => {
      const r = ratioOf(m, (run) => run.cpuPerRequest)
      return r === undefined ? [] : [r]
    })
    // Service and database share this machine's cores: their sum is what a request costs it.
    const allCpuRatios = list.flatMap((m) => {
      const r = ratioOf(m, (run) =>
        run.cpuPerRequest === undefined || run.dbCpuPerRequest === undefined ? undefined : run.cpuPerRequest + run.dbCpuPerRequest)
      return r === undefined ? [] : [r]
    })
    // Judged on the median round: a run that met the minute's compaction is one round, not the verdict.
    const ratio = ratios.length === 0 ? Number.NaN : median(ratios)
    return [
      variant,
      mean(list.map((m) => m.run.result.requestsPerSecond)).toFixed(0),
      mean(list.map((m) => m.run.result.p50)).toFixed(1),
      Math.max(...list.map((m) => m.run.result.p99)).toFixed(1),
      list.every((m) => m.run.cpuPerRequest !== undefined) ? mean(list.map((m) => m.run.cpuPerRequest!)).toFixed(2) : "-",
      list.every((m) => m.run.dbCpuPerRequest !== undefined) ? mean(list.map((m) => m.run.dbCpuPerRequest!)).toFixed(2) : "-",
      variant === "without" || cpuRatios.length === 0 ? "1.00" : median(cpuRatios).toFixed(2),
      allCpuRatios.length === 0 ? "-" : variant === "without" ? "1.00" : median(allCpuRatios).toFixed(2),
      variant === "without"
        ? "1.00"
        : `${ratio.toFixed(2)} (${ratios.map((r) => r.toFixed(2)).join(", ")}) ${
          ratio >= IDEMPOTENCY_TARGET_RATIO ? "ok" : `below ${IDEMPOTENCY_TARGET_RATIO}`
        }`
    ]
  })
  return {
    title: `Idempotency-Key, ${database}: POST /api/tasks without a key vs a fresh key per request, ${config.connections} ` +
      `connections, ${config.duration} s per run, ${config.idempotencyRounds} interleaved round(s); target: the median round's req/s with/without ≥ ` +
      `${IDEMPOTENCY_TARGET_RATIO}; ${records ?? "?"} records kept for ≥ ${keyed} keyed requests measured`,
    lines: formatTable(
      ["key", "req/s", "p50 ms", "p99 ms", "CPU ms/req", "database CPU ms/req", "CPU with/without", "both with/without", "req/s with/without (median; rounds)"],
      rows,
      (c) => c >= 1 && c <= 7
    )
  }
}
