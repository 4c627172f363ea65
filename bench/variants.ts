import * as Fs from "node:fs"
import * as Path from "node:path"
import { drive, loadGenerator } from "./load.js"
import { ROWS, startSteady } from "./peer.js"
import { cleanupAll, cpuDelta, databaseBackendsCpuMs, type Server, sleep } from "./processes.js"
import type { Database } from "./report.js"
import { copyOf, log, ROOT, startOurs } from "./setup.js"
import { geomean, median } from "./stats.js"

/**
 * Variants of the service side by side, in fine interleaved rounds:
 *
 *   VARIANTS='[{"name":"base"},{"name":"semi4","env":{"SERVICE_SEMI_SPACE_MB":"4"}}]' \
 *     VARIANT_ROWS=create,patch VARIANT_ROUNDS=8 npx tsx bench/variants.ts
 *
 * A variant is `{ name, dist?, args?, env? }`: a build's `dist/` (default this tree's; an
 * earlier build's needs its `migrations/` and package.json beside it, as a worktree has),
 * Node flags after the start script's, and the service's environment. The peer scenario's
 * seed (bench/peer.ts) is written once through the API of this tree's service on
 * `VARIANT_DATABASE` (postgres, the default, or embedded); every variant then serves its own
 * copy of it, all started at once, and each row runs on each variant in turn, round after
 * round (the order rotating), VARIANT_SECONDS (5) measured after a second's warm-up.
 *
 * Why not the peer table's two 10 s rounds: this machine's speed drifts by a third within
 * minutes (docs/performance.md), so a difference of a few percent shows only between
 * measurements seconds apart, many times over. Printed per row and variant: the median req/s,
 * p50 and p99, CPU per request of the service and of its PostgreSQL backends, the machine's
 * idle share, and the geometric mean of the per-round ratios to the first variant.
 */

interface Variant {
  readonly name: string
  readonly dist?: string
  readonly args?: ReadonlyArray<string>
  readonly env?: Readonly<Record<string, string>>
}

const variants: ReadonlyArray<Variant> = JSON.parse(process.env.VARIANTS ?? '[{"name":"this tree"}]')
const rowKeys = (process.env.VARIANT_ROWS ?? "create,patch").split(",").map((s) => s.trim())
const rounds = Number(process.env.VARIANT_ROUNDS ?? 8)
const seconds = Number(process.env.VARIANT_SECONDS ?? 5)
const database = (process.env.VARIANT_DATABASE ?? "postgres") as Database

/** Idle and total jiffies of the whole machine, from /proc/stat (idle + iowait). */
const machineTimes = () => {
  const cpu = Fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number)
  return { idle: cpu[3]! + cpu[4]!, total: cpu.reduce((a, b) => a + b, 0) }
}

/** One service per variant: its build, its Node flags after the start script's, its environment. */
const startVariant = (variant: Variant, env: Record<string, string>): Promise<Server> =>
  startOurs({ ...env, ...variant.env }, variant.dist === undefined ? Path.join(ROOT, "dist") : Path.resolve(variant.dist), variant.args)

interface Sample {
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly svc: number
  readonly db: number
  readonly idle: number
}

const main = async () => {
  const rows = rowKeys.map((key) => {
    const row = ROWS.find((r) => r.key === key)
    if (row === undefined) throw new Error(`no row ${key}; rows: ${ROWS.map((r) => r.key).join(", ")}`)
    return row
  })
  log(`variants: ${variants.map((v) => v.name).join(" | ")}; rows ${rowKeys.join(", ")}; ${rounds} rounds of ${seconds} s; ${loadGenerator()}`)
  const { fresh, side, seeded } = await startSteady(database, new Date())
  await side.server.stop()
  const servers = await Promise.all(variants.map(async (variant) => {
    const copy = await copyOf(fresh)
    return { copy, server: await startVariant(variant, copy.env) }
  }))
  // Each variant's first requests compile its routes: a few seconds of every row first.
  for (const row of rows) {
    for (const { server } of servers) {
      await drive(row.scenario(seeded), { baseUrl: server.baseUrl, token: seeded.token, connections: row.connections ?? 32, durationSeconds: 5 })
    }
  }
  const samples = new Map<string, Array<Sample>>()
  for (let round = 0; round < rounds; round++) {
    for (const row of rows) {
      const order = servers.map((_, i) => (i + round) % servers.length)
      for (const i of order) {
        const { copy, server } = servers[i]!
        const options = { baseUrl: server.baseUrl, token: seeded.token, connections: row.connections ?? 32 }
        await sleep(300)
        await drive(row.scenario(seeded), { ...options, durationSeconds: 1 })
        const cpu0 = server.cpuMs() ?? 0
        const db0 = copy.databaseName === undefined ? undefined : databaseBackendsCpuMs(copy.databaseName)
        const m0 = machineTimes()
        const result = await drive(row.scenario(seeded), { ...options, durationSeconds: seconds })
        const m1 = machineTimes()
        const cpu1 = server.cpuMs() ?? 0
        const db = db0 === undefined ? 0 : cpuDelta(db0, databaseBackendsCpuMs(copy.databaseName!))
        const per = (ms: number) => (result.total === 0 ? 0 : ms / result.total)
        const key = `${row.key}\u0000${i}`
        samples.set(key, [...(samples.get(key) ?? []), {
          rps: result.requestsPerSecond,
          p50: result.p50,
          p99: result.p99,
          svc: per(cpu1 - cpu0),
          db: per(db),
          idle: (m1.idle - m0.idle) / Math.max(1, m1.total - m0.total)
        }])
      }
    }
    log(`variants: round ${round + 1} of ${rounds} done`)
  }
  const f = (n: number, digits = 2) => n.toFixed(digits)
  for (const row of rows) {
    console.log(`\n${row.label}${row.connections === undefined ? "" : ` (c=${row.connections})`}, ${rounds} rounds of ${seconds} s, ${loadGenerator()}`)
    console.log("| variant | req/s | ratio | p50 ms | p99 ms | p99/p50 | svc ms/req | db ms/req | idle |")
    console.log("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    const base = samples.get(`${row.key}\u00000`)!
    variants.forEach((variant, i) => {
      const own = samples.get(`${row.key}\u0000${i}`)!
      const ratio = geomean(own.map((x, k) => x.rps / base[k]!.rps))
      const m = (pick: (s: Sample) => number) => median(own.map(pick))
      console.log(`| ${variant.name} | ${Math.round(m((s) => s.rps))} | ${f(ratio, 3)} | ${f(m((s) => s.p50))} | ${f(m((s) => s.p99))} | ${f(m((s) => s.p99 / Math.max(0.001, s.p50)), 1)} | ${f(m((s) => s.svc), 3)} | ${f(m((s) => s.db), 3)} | ${f(100 * m((s) => s.idle), 0)} % |`)
    })
  }
}

main()
  .then(() => cleanupAll())
  .catch(async (error) => {
    console.error(error)
    await cleanupAll()
    process.exit(1)
  })
