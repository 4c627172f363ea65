import * as Os from "node:os"
import { type LoadResult, loadGenerator, type Scenario } from "./load.js"
import { geomean, mean } from "./stats.js"

/** The report of bench/run.ts: one row per scenario, database and server, then the targets. */

export type Database = "postgres" | "embedded"
/** `baseline`: the bare `node:http` + `pg` server; `before`: an earlier build (BENCH_BEFORE_DIST). */
export type ServerKind = "ours" | "baseline" | "before"

export interface Measurement {
  readonly scenario: Scenario
  readonly database: Database
  readonly server: ServerKind
  readonly round: number
  readonly result: LoadResult
  readonly rssMiB: number | undefined
  /** Server CPU time per completed request, in ms. */
  readonly cpuPerRequest: number | undefined
  /** CPU time of the database's backends per completed request, in ms (PostgreSQL only). */
  readonly dbCpuPerRequest: number | undefined
}

export interface ReportSettings {
  readonly connections: number
  readonly duration: number
  readonly warmup: number
  readonly tasks: number
  /** The 1-minute load average when the run started. */
  readonly startLoad: number
}

export const TARGET_RATIO = 0.6
export const TARGET_P99_MS = 50
/** The goal for a single-task write: at least half the req/s of a bare token lookup + INSERT/UPDATE. */
export const TARGET_WRITE_RATIO = 0.5

interface Row {
  readonly scenario: Scenario
  readonly database: Database
  readonly server: ServerKind
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly rss: number | undefined
  readonly cpu: number | undefined
  readonly dbCpu: number | undefined
  readonly bad: number
  readonly ratio: number | undefined
  readonly roundRatios: ReadonlyArray<number>
}

const summarize = (measurements: ReadonlyArray<Measurement>): Array<Row> => {
  const rows: Array<Row> = []
  const groups = new Map<string, Array<Measurement>>()
  for (const m of measurements) {
    const key = `${m.database}|${m.scenario.key}|${m.server}`
    groups.set(key, [...(groups.get(key) ?? []), m])
  }
  for (const list of groups.values()) {
    const { database, scenario, server } = list[0]!
    let roundRatios: Array<number> = []
    if (server === "ours") {
      const base = measurements.filter((m) => m.database === database && m.scenario.key === scenario.key && m.server !== "ours")
      roundRatios = list.flatMap((m) => {
        const b = base.find((x) => x.round === m.round)
        return b === undefined || b.result.requestsPerSecond === 0 ? [] : [m.result.requestsPerSecond / b.result.requestsPerSecond]
      })
    }
    rows.push({
      scenario,
      database,
      server,
      rps: mean(list.map((m) => m.result.requestsPerSecond)),
      p50: mean(list.map((m) => m.result.p50)),
      p99: Math.max(...list.map((m) => m.result.p99)),
      rss: list.at(-1)!.rssMiB,
      cpu: list.every((m) => m.cpuPerRequest !== undefined) ? mean(list.map((m) => m.cpuPerRequest!)) : undefined,
      dbCpu: list.every((m) => m.dbCpuPerRequest !== undefined) ? mean(list.map((m) => m.dbCpuPerRequest!)) : undefined,
      bad: list.reduce((n, m) => n + m.result.bad, 0),
      ratio: roundRatios.length > 0 ? geomean(roundRatios) : undefined,
      roundRatios
    })
  }
  return rows
}

export const printReport = (measurements: ReadonlyArray<Measurement>, config: ReportSettings) => {
  const rows = summarize(measurements)
  const header = ["scenario", "database", "server", "req/s", "p50 ms", "p99 ms", "RSS MiB", "CPU ms/req", "DB CPU ms/req", "ours/baseline or before"]
  const cells = rows.map((r) => [
    r.scenario.label,
    r.database,
    r.server,
    r.rps.toFixed(0),
    r.p50.toFixed(1),
    r.p99.toFixed(1),
    r.rss === undefined ? "-" : r.rss.toFixed(0),
    r.cpu === undefined ? "-" : r.cpu.toFixed(2),
    r.dbCpu === undefined ? "-" : r.dbCpu.toFixed(2),
    r.ratio === undefined ? "" : `${r.ratio.toFixed(2)} (${r.roundRatios.map((x) => x.toFixed(2)).join(", ")})`
  ].concat(r.bad > 0 ? [`${r.bad} failed/non-2xx`] : []))
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)))
  const line = (c: ReadonlyArray<string>) =>
    c.map((v, i) => (i >= 3 && i <= 8 ? v.padStart(widths[i]!) : v.padEnd(widths[i] ?? 0))).join("  ").trimEnd()
  console.log("")
  console.log(
    `Steady benchmark: ${config.connections} connections (${loadGenerator()}), ${config.duration} s per run after ${config.warmup} s warm-up, ` +
      `${config.tasks} tasks for the measured user; ratios are per A/B round (geometric mean first); p99 is the worst round; ` +
      `CPU ms/req is the server process's CPU time per request; DB CPU ms/req that of the PostgreSQL backends ` +
      `serving it (for the embedded database it is inside the server's).`
  )
  console.log(
    `Machine: ${Os.cpus().length} CPUs, load average ${config.startLoad.toFixed(1)} at the start, ` +
      `${Os.loadavg()[0]!.toFixed(1)} at the end (the benchmark itself adds about 2).`
  )
  console.log(line(header))
  console.log(widths.map((w) => "-".repeat(w)).join("  "))
  for (const c of cells) console.log(line(c))

  const pg = rows.filter((r) => r.database === "postgres" && r.server === "ours")
  if (pg.length === 0) return
  const reads = pg.filter((r) => r.scenario.compared && r.scenario.method === "GET")
  const writes = pg.filter((r) => r.scenario.compared && r.scenario.method !== "GET")
  const mark = (met: boolean) => (met ? "MET    " : "NOT MET")
  console.log("")
  console.log(`Targets on PostgreSQL (the compared scenarios, concurrency ${config.connections}):`)
  let allMet = true
  for (const r of reads) {
    const met = r.ratio !== undefined && r.ratio >= TARGET_RATIO
    allMet &&= met
    console.log(`  ${mark(met)}  ${r.scenario.label}: ours/baseline ${r.ratio?.toFixed(2) ?? "-"} >= ${TARGET_RATIO}`)
  }
  for (const r of reads) {
    const met = r.p99 < TARGET_P99_MS && r.bad === 0
    allMet &&= met
    console.log(
      `  ${mark(met)}  ${r.scenario.label}: p99 ${r.p99.toFixed(1)} ms < ${TARGET_P99_MS} ms` +
        (r.bad > 0 ? ` (but ${r.bad} requests failed)` : "")
    )
  }
  for (const r of writes) {
    const met = r.ratio !== undefined && r.ratio >= TARGET_WRITE_RATIO
    allMet &&= met
    console.log(`  ${mark(met)}  ${r.scenario.label}: ours/baseline ${r.ratio?.toFixed(2) ?? "-"} >= ${TARGET_WRITE_RATIO}`)
  }
  console.log(allMet ? "All targets met." : "Some targets are not met.")
  // Throughput ratios move with whatever else the machine runs; CPU per request barely does.
  const costs = [...reads, ...writes].flatMap((r) => {
    const base = rows.find((b) => b.database === "postgres" && b.server === "baseline" && b.scenario.key === r.scenario.key)
    if (base === undefined || r.cpu === undefined || r.dbCpu === undefined || base.cpu === undefined || base.dbCpu === undefined) {
      return []
    }
    return [`${r.scenario.label} ${((base.cpu + base.dbCpu) / (r.cpu + r.dbCpu)).toFixed(2)}`]
  })
  if (costs.length > 0) {
    console.log(`CPU cost per request, baseline/ours (server + database; the ratio a CPU-bound box would show): ${costs.join(", ")}`)
  }
  const others = pg.filter((r) => !r.scenario.compared)
  if (others.length > 0) {
    console.log(`Other scenarios (no target), p99 against ${TARGET_P99_MS} ms for reference:`)
    for (const r of others) {
      console.log(
        `  ${r.p99 < TARGET_P99_MS ? "under" : "over "}  ${r.scenario.label}: p99 ${r.p99.toFixed(1)} ms` +
          (r.bad > 0 ? ` (${r.bad} requests failed)` : "")
      )
    }
  }
}

/** A scenario's own block of the report: a title and preformatted lines. */
export interface Section {
  readonly title: string
  readonly lines: ReadonlyArray<string>
}

/** A plain text table; columns for which `numeric` holds are right-aligned. */
export const formatTable = (
  header: ReadonlyArray<string>,
  rows: ReadonlyArray<ReadonlyArray<string>>,
  numeric: (column: number) => boolean
): Array<string> => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    cells.map((v, i) => (i >= widths.length ? v : numeric(i) ? v.padStart(widths[i]!) : v.padEnd(widths[i]!))).join("  ").trimEnd()
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...rows.map(line)]
}

export const printSections = (sections: ReadonlyArray<Section>) => {
  for (const section of sections) {
    console.log("")
    console.log(section.title)
    for (const line of section.lines) console.log(line)
  }
}
