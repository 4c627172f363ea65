import autocannon from "autocannon"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { drive, makeScenarios, probe, type Scenario } from "./load.js"
import { freePort, onCleanup, readCpuMs, readMemoryMiB, type Server, sleep, startServer } from "./processes.js"
import { type Database, formatTable, type Section } from "./report.js"
import { type Seeded, seed } from "./seed.js"
import {
  childEnv,
  config,
  copyOf,
  type FreshDatabase,
  log,
  prepare,
  type Prepared,
  ROOT,
  serviceCommand
} from "./setup.js"
import { mean } from "./stats.js"

/**
 * Memory (issue "Light and quick", item 1): the resident memory of the service's process tree
 * (the Node process and any children: on PostgreSQL that is Node alone, the server's backends
 * are not counted; embedded it is Node with PGlite's WebAssembly heap inside it) around a
 * c=BENCH_CONNECTIONS mixed load over BENCH_TASKS tasks of one user (seeded as for endpoints):
 * 40 % GET /api/tasks?limit=50, 30 % GET /api/tasks/{id}, 15 % POST /api/tasks, 15 % PATCH
 * /api/tasks/{id} (priority).
 *
 *   idle      RSS once the fresh service is quiet (a few requests served, start-up work done)
 *   peak      the highest RSS sampled every 100 ms during BENCH_MEMORY_SECONDS of load
 *   settled   RSS after BENCH_MEMORY_SETTLE seconds without requests (the mean of its last 3 s)
 *   soak      BENCH_SOAK_SECONDS more of the same load on a fresh service: RSS every second,
 *             its slope in MiB/min by least squares (after the first minute or fifth, whichever
 *             is shorter), over the whole and over the second half; and each minute where the
 *             memory is (the parts below, with RssAnon), to tell a part that climbs from one
 *             that fills once
 *
 * Where the memory is (a sampler preloaded into the service, bench/memprobe.mjs, and
 * /proc/<pid>/smaps): each JavaScript thread's V8 heap (used / resident), the main thread's
 * memory outside the heap (`external`, of which array buffers), PGlite's WebAssembly heap
 * (resident pages of its linear memory; it never shrinks) and the rest (code, malloc arenas,
 * stacks, the Node binary). BENCH_MEMPROBE=0 leaves the sampler out; BENCH_MEMPROBE_KEEP=1
 * keeps its lines (one file per run in the temporary directory).
 *
 * Variants (BENCH_MEMORY_VARIANTS, ";"-separated; default one, the service as `npm start`
 * runs it): each a list of words, `name:` first to label it,
 *   --flag       Node/V8 flags; given any, they replace `npm start`'s (see below)
 *   NAME=value   environment of the service (MALLOC_ARENA_MAX=2, …); `NAME=` unsets it. The
 *                start script sees it too, so SERVICE_SEMI_SPACE_MB=16 changes its flags
 *   dist=PATH    another build (an earlier commit's dist/); it runs with the environment and
 *                (unless flags are given) the flags of the start script of the package.json
 *                beside that dist/, as `npm start` there would
 * e.g. BENCH_MEMORY_VARIANTS="semi64: --max-semi-space-size=64; semi16: --max-semi-space-size=16".
 * With two or more, each runs BENCH_ROUNDS times in interleaved order (each run a fresh
 * process on its own copy of the seeded database), and each run also drives the six
 * endpoints of ENDPOINT_KEYS one at a time (BENCH_DURATION s each after BENCH_WARMUP s) for the req/s comparison
 * (BENCH_MEMORY_ENDPOINTS=0 skips them, =1 runs them with one variant too).
 * The soak runs the first variant only (BENCH_SOAK_VARIANTS=all: every one).
 *
 * Targets: PostgreSQL (Node only) peak ≤ 200 MiB, settled ≤ 150 MiB; embedded (Node +
 * PGlite) peak ≤ 350 MiB, settled ≤ 250 MiB; soak slope ≤ 0.5 MiB/min (≈ 0) on both.
 */

export const MEMORY_TARGETS: Record<Database, { readonly peak: number; readonly settled: number }> = {
  postgres: { peak: 200, settled: 150 },
  embedded: { peak: 350, settled: 250 }
}
/** "≈ 0": at most this many MiB a minute, i.e. 5 MiB over the 10-minute soak. */
export const SOAK_SLOPE_TARGET = 0.5

const numberEnv = (name: string, fallback: number) => {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === "") return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a number ≥ 0`)
  return value
}

const LOAD_SECONDS = numberEnv("BENCH_MEMORY_SECONDS", 60)
const SETTLE_SECONDS = numberEnv("BENCH_MEMORY_SETTLE", 30)
const SOAK_SECONDS = numberEnv("BENCH_SOAK_SECONDS", 600)
const WITH_PROBE = process.env.BENCH_MEMPROBE !== "0"
const PROBE = Path.join(ROOT, "bench", "memprobe.mjs")

/** A generous bound on the scenario's time on one database, for bench/run.ts's watchdog (seeding not included). */
export const memorySeconds = () => {
  const variants = parseVariants(process.env.BENCH_MEMORY_VARIANTS)
  const compare = variants.length > 1
  const rounds = compare ? config.rounds : 1
  const endpoints = process.env.BENCH_MEMORY_ENDPOINTS === "1" || (compare && process.env.BENCH_MEMORY_ENDPOINTS !== "0")
  const run = 90 + 30 + LOAD_SECONDS + SETTLE_SECONDS + 15 + (endpoints ? 4 * (config.duration + config.warmup + 2) : 0)
  const soaks = SOAK_SECONDS === 0 ? 0 : process.env.BENCH_SOAK_VARIANTS === "all" ? variants.length : 1
  return rounds * variants.length * run + soaks * (90 + 30 + 10 + SOAK_SECONDS + 15) + 120
}

// ---- variants ----

interface Variant {
  readonly label: string
  readonly dist: string
  readonly args: ReadonlyArray<string>
  readonly env: Readonly<Record<string, string>>
}

export const parseVariants = (spec: string | undefined, database: Database = "embedded"): ReadonlyArray<Variant> => {
  const entries = (spec ?? "").split(";").map((s) => s.trim()).filter((s) => s !== "")
  if (entries.length === 0) entries.push("npm start:")
  return entries.map((entry) => {
    const named = /^([^:=]+):\s*(.*)$/.exec(entry)
    const words = (named === null ? entry : named[2]!).split(/\s+/).filter((w) => w !== "")
    let dist = Path.join(ROOT, "dist")
    const args: Array<string> = []
    const env: Record<string, string> = {}
    for (const word of words) {
      if (word.startsWith("dist=")) dist = Path.resolve(word.slice(5))
      else if (word.startsWith("-")) args.push(word)
      else if (/^[A-Z_][A-Z0-9_]*=/.test(word)) env[word.slice(0, word.indexOf("="))] = word.slice(word.indexOf("=") + 1)
      else throw new Error(`BENCH_MEMORY_VARIANTS: cannot read "${word}" in "${entry}"`)
    }
    if (!Fs.existsSync(Path.join(dist, "src", "main.js"))) throw new Error(`BENCH_MEMORY_VARIANTS: no ${dist}/src/main.js`)
    const root = Path.dirname(dist)
    // The variant's environment decides the start script's flags too (SERVICE_SEMI_SPACE_MB).
    const command = serviceCommand(root, database === "postgres" ? "postgres://" : undefined, env)
    const flags = args.length > 0 ? args : command.flags
    const allEnv = { ...command.env, ...env }
    const label = named?.[1]!.trim() ??
      [dist === Path.join(ROOT, "dist") ? "" : `dist=${dist}`, ...Object.entries(allEnv).map(([k, v]) => `${k}=${v}`), ...flags]
        .filter((w) => w !== "").join(" ")
    return { label: label === "" ? "no flags" : label, dist, args: flags, env: allEnv }
  })
}

// ---- reading memory ----

/** The pid and its descendants, from /proc/<pid>/stat's parent field. */
const processTree = (root: number): Array<number> => {
  const parents = new Map<number, number>()
  for (const name of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = Fs.readFileSync(`/proc/${name}/stat`, "utf8")
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]))
    } catch {
      // gone meanwhile
    }
  }
  const tree = [root]
  for (let i = 0; i < tree.length; i++) {
    for (const [pid, parent] of parents) if (parent === tree[i]) tree.push(pid)
  }
  return tree
}

/** RSS of a process tree in MiB; the tree's members are looked up again every few seconds. */
const treeReader = (root: number) => {
  let members = processTree(root)
  let at = Date.now()
  return (): number | undefined => {
    if (Date.now() - at > 5_000) {
      members = processTree(root)
      at = Date.now()
    }
    let total = 0
    let any = false
    for (const pid of members) {
      const memory = readMemoryMiB(pid)
      if (memory === undefined) continue
      any = true
      total += memory.rss
    }
    return any ? total : undefined
  }
}

/**
 * Resident MiB of WebAssembly linear memories in /proc/<pid>/smaps: V8 reserves each one's
 * address space whole (about 10 GiB with its guard region) and makes the used part readable,
 * so it is a read-write anonymous mapping directly followed by the inaccessible rest.
 */
const wasmResidentMiB = (pid: number): number | undefined => {
  let text: string
  try {
    text = Fs.readFileSync(`/proc/${pid}/smaps`, "utf8")
  } catch {
    return undefined
  }
  interface Mapping {
    start: bigint
    end: bigint
    perms: string
    anonymous: boolean
    rssKiB: number
  }
  const maps: Array<Mapping> = []
  for (const line of text.split("\n")) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ (\d+)\s*(.*)$/.exec(line)
    if (header !== null) {
      maps.push({
        start: BigInt(`0x${header[1]}`),
        end: BigInt(`0x${header[2]}`),
        perms: header[3]!,
        anonymous: header[4] === "0" && header[5] === "",
        rssKiB: 0
      })
    } else if (line.startsWith("Rss:") && maps.length > 0) {
      maps[maps.length - 1]!.rssKiB = Number(/(\d+)/.exec(line)![1])
    }
  }
  let kib = 0
  for (let i = 0; i + 1 < maps.length; i++) {
    const m = maps[i]!
    const next = maps[i + 1]!
    if (!m.anonymous || !m.perms.startsWith("rw") || next.start !== m.end || next.perms !== "---p") continue
    if (next.end - m.start >= 4n << 30n) kib += m.rssKiB
  }
  return kib / 1024
}

interface ProbeLine {
  readonly t: number
  readonly thread: number
  readonly rss: number
  readonly heapTotal: number
  readonly heapUsed: number
  readonly external: number
  readonly arrayBuffers: number
  readonly spaces: Record<string, number>
}

const readProbe = (file: string): Array<ProbeLine> => {
  try {
    return Fs.readFileSync(file, "utf8").split("\n").filter((l) => l !== "").flatMap((l) => {
      try {
        return [JSON.parse(l) as ProbeLine]
      } catch {
        return []
      }
    })
  } catch {
    return []
  }
}

/** What the process's memory is made of at one moment. */
interface Breakdown {
  readonly rss: number
  readonly mainHeapUsed: number | undefined
  readonly mainHeap: number | undefined
  readonly mainYoung: number | undefined
  readonly mainExternal: number | undefined
  readonly mainArrayBuffers: number | undefined
  readonly workerHeapUsed: number | undefined
  readonly workerHeap: number | undefined
  readonly wasm: number | undefined
}

const resident = (line: ProbeLine) => Object.values(line.spaces).reduce((a, b) => a + b, 0)

/** RSS not in a part the sampler names: code, malloc's arenas, stacks, the Node binary. */
const restOf = (b: Breakdown) => b.rss - ((b.mainHeap ?? 0) + (b.mainExternal ?? 0) + (b.workerHeap ?? 0) + (b.wasm ?? 0))

/** The probe's lines nearest to `t` for the main thread and the (busiest) other thread. */
const breakdownAt = (lines: ReadonlyArray<ProbeLine>, t: number, rss: number, wasm: number | undefined): Breakdown => {
  const nearest = (list: ReadonlyArray<ProbeLine>) =>
    list.reduce<ProbeLine | undefined>((best, l) => (best === undefined || Math.abs(l.t - t) < Math.abs(best.t - t) ? l : best), undefined)
  const main = nearest(lines.filter((l) => l.thread === 0 && Math.abs(l.t - t) < 2_500))
  const others = lines.filter((l) => l.thread !== 0 && Math.abs(l.t - t) < 2_500)
  const worker = nearest(others)
  return {
    rss,
    mainHeapUsed: main?.heapUsed,
    mainHeap: main === undefined ? undefined : resident(main),
    mainYoung: main === undefined ? undefined : (main.spaces.new ?? 0) + (main.spaces.new_large_object ?? 0),
    mainExternal: main?.external,
    mainArrayBuffers: main?.arrayBuffers,
    workerHeapUsed: worker?.heapUsed,
    workerHeap: worker === undefined ? undefined : resident(worker),
    wasm
  }
}

// ---- load ----

const pick = (list: ReadonlyArray<number>, n: number) => list[n % list.length]!

/** The n-th request of the mix: 8 in 20 list a page, 6 read a task, 3 create, 3 set a priority. */
const mixed = (seeded: Seeded, n: number): { method: string; path: string; body?: string } => {
  const slot = n % 20
  if (slot < 8) return { method: "GET", path: "/api/tasks?limit=50" }
  if (slot < 14) return { method: "GET", path: `/api/tasks/${pick(seeded.readIds, n * 7)}` }
  if (slot < 17) {
    return {
      method: "POST",
      path: "/api/tasks",
      body: JSON.stringify({ title: `Memory bench task ${n}`, priority: n % 5, labels: n % 2 === 0 ? ["bench"] : [] })
    }
  }
  return { method: "PATCH", path: `/api/tasks/${pick(seeded.patchIds, n * 3)}`, body: JSON.stringify({ priority: n % 5 }) }
}

interface MixedResult {
  /** The service's CPU time per request, ms (steadier than req/s on a shared machine). */
  readonly cpu: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly total: number
  readonly bad: number
}

const driveMixed = (seeded: Seeded, server: Server, seconds: number, first = 0) =>
  new Promise<MixedResult>((resolve, reject) => {
    let counter = first
    const cpuBefore = server.cpuMs() ?? Number.NaN
    const auth = { authorization: `Bearer ${seeded.token}` }
    const json = { ...auth, "content-type": "application/json" }
    autocannon({
      url: server.baseUrl,
      connections: config.connections,
      duration: seconds,
      timeout: 10,
      requests: [{
        method: "GET",
        headers: auth,
        setupRequest: (request) => {
          const next = mixed(seeded, counter++)
          return next.body === undefined
            ? { ...request, method: next.method, path: next.path, headers: auth, body: "" }
            : { ...request, method: next.method, path: next.path, headers: json, body: next.body }
        }
      }]
    }, (error, result) =>
      error
        ? reject(error)
        : resolve({
          cpu: ((server.cpuMs() ?? Number.NaN) - cpuBefore) / result.requests.total,
          rps: result.requests.total / result.duration,
          p50: result.latency.p50,
          p99: result.latency.p99,
          total: result.requests.total,
          bad: result.errors + result.timeouts + result.non2xx
        }))
  })

/** Samples `read` every `everyMs` until stopped; each sample with its time. */
const sampler = (read: () => number | undefined, everyMs: number) => {
  const samples: Array<{ readonly t: number; readonly value: number }> = []
  const take = () => {
    const value = read()
    if (value !== undefined) samples.push({ t: Date.now(), value })
  }
  take()
  const timer = setInterval(take, everyMs)
  return {
    samples,
    stop: () => {
      clearInterval(timer)
      take()
      return samples
    }
  }
}

/** Least-squares slope of value over time, per minute. */
const slopePerMinute = (samples: ReadonlyArray<{ readonly t: number; readonly value: number }>) => {
  if (samples.length < 3) return Number.NaN
  const xs = samples.map((s) => (s.t - samples[0]!.t) / 60_000)
  const ys = samples.map((s) => s.value)
  const mx = mean(xs)
  const my = mean(ys)
  let num = 0
  let den = 0
  for (let i = 0; i < xs.length; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my)
    den += (xs[i]! - mx) ** 2
  }
  return den === 0 ? Number.NaN : num / den
}

/** Waits until the service is quiet (under 5 % of a core for a second), at most 30 s. */
const quiet = async (pid: number) => {
  const deadline = performance.now() + 30_000
  while (performance.now() < deadline) {
    const before = readCpuMs(pid)
    await sleep(1_000)
    const after = readCpuMs(pid)
    if (before === undefined || after === undefined || after - before < 50) return
  }
}

// ---- one run ----

interface Started {
  readonly server: Server
  readonly probeFile: string | undefined
  readonly tree: () => number | undefined
  readonly stop: () => Promise<void>
}

/** `NAME=` in a variant unsets NAME (one the start script sets, say). */
const withoutEmpty = (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv =>
  Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ""))

const start = async (variant: Variant, prepared: FreshDatabase, tag: string): Promise<Started> => {
  const copy = await copyOf(prepared)
  const probeFile = WITH_PROBE ? Path.join(Os.tmpdir(), `steady-bench-memprobe-${process.pid}-${tag}.jsonl`) : undefined
  // BENCH_MEMPROBE_KEEP=1 leaves the sampler's lines in the temporary directory, to look at afterwards.
  const removeProbe = probeFile === undefined || process.env.BENCH_MEMPROBE_KEEP === "1"
    ? async () => {}
    : onCleanup(`remove ${probeFile}`, async () => Fs.rmSync(probeFile, { force: true }))
  const port = await freePort()
  const server = await startServer({
    name: `steady (${variant.label})`,
    args: [
      ...variant.args,
      ...(probeFile === undefined ? [] : ["--import", PROBE]),
      ...(process.env.BENCH_SERVICE_NODE_ARGS?.split(" ").filter((a) => a !== "") ?? []),
      Path.join(variant.dist, "src/main.js")
    ],
    env: withoutEmpty(childEnv({
      ...copy.env,
      ...variant.env,
      ...(probeFile === undefined ? {} : { BENCH_MEMPROBE_FILE: probeFile }),
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn"
    })),
    port,
    healthPath: "/api/health",
    startTimeoutMs: 90_000
  })
  return {
    server,
    probeFile,
    tree: treeReader(server.pid),
    stop: async () => {
      await server.stop()
      await copy.remove()
      await removeProbe()
    }
  }
}

interface Measured {
  readonly variant: Variant
  readonly round: number
  readonly idle: Breakdown
  readonly peak: Breakdown
  readonly settled: Breakdown
  readonly hwm: number | undefined
  readonly load: MixedResult
  readonly endpoints: ReadonlyArray<
    { readonly label: string; readonly rps: number; readonly cpu: number; readonly p99: number; readonly bad: number }
  >
  readonly errors: number
}

/**
 * The endpoints each variant is timed on. The default page and the counts read most of the main
 * user's rows: they show what a smaller buffer pool (`EMBEDDED_SHARED_BUFFERS`) costs, which the
 * short reads do not.
 */
const ENDPOINT_KEYS: ReadonlyArray<Scenario["key"]> = ["list50", "get", "list", "counts", "create", "patch"]

const measureVariant = async (
  database: Database,
  variant: Variant,
  round: number,
  prepared: Prepared<Seeded>,
  withEndpoints: boolean
): Promise<Measured> => {
  const seeded = prepared.seeded
  const run = await start(variant, prepared, `${database}-${round}-${variant.label.replace(/\W+/g, "_")}`)
  const { server } = run
  try {
    const scenarios = makeScenarios(seeded)
    for (const key of ENDPOINT_KEYS) await probe(scenarios.find((s) => s.key === key)!, server.baseUrl, seeded.token)
    await quiet(server.pid)
    const lines = () => (run.probeFile === undefined ? [] : readProbe(run.probeFile))
    await sleep(1_500)
    const idleRss = run.tree() ?? Number.NaN
    const idle = breakdownAt(lines(), Date.now(), idleRss, wasmResidentMiB(server.pid))

    // The load: RSS every 100 ms, the WebAssembly heap's every 2 s (it only grows).
    const rss = sampler(run.tree, 100)
    const wasm = sampler(() => wasmResidentMiB(server.pid), 2_000)
    const load = await driveMixed(seeded, server, LOAD_SECONDS)
    const loadSamples = rss.stop()
    const wasmSamples = wasm.stop()
    const top = loadSamples.reduce((a, b) => (b.value > a.value ? b : a))
    const wasmAt = (t: number) => wasmSamples.filter((s) => s.t <= t + 2_000).at(-1)?.value
    const peak = breakdownAt(lines(), top.t, top.value, wasmAt(top.t))

    const after = sampler(run.tree, 250)
    await sleep(SETTLE_SECONDS * 1000)
    const settleSamples = after.stop()
    const last = settleSamples.filter((s) => s.t >= Date.now() - 3_000)
    const settledRss = mean((last.length > 0 ? last : settleSamples.slice(-1)).map((s) => s.value))
    const settled = breakdownAt(lines(), Date.now() - 1_000, settledRss, wasmResidentMiB(server.pid))
    const hwm = readMemoryMiB(server.pid)?.hwm

    const endpoints: Array<Measured["endpoints"][number]> = []
    if (withEndpoints) {
      for (const key of ENDPOINT_KEYS) {
        const scenario = scenarios.find((s) => s.key === key)!
        const options = { baseUrl: server.baseUrl, token: seeded.token, connections: config.connections }
        await sleep(500)
        if (config.warmup > 0) await drive(scenario, { ...options, durationSeconds: config.warmup })
        const cpuBefore = server.cpuMs() ?? Number.NaN
        const result = await drive(scenario, { ...options, durationSeconds: config.duration })
        const cpu = ((server.cpuMs() ?? Number.NaN) - cpuBefore) / result.total
        endpoints.push({ label: scenario.label, rps: result.requestsPerSecond, cpu, p99: result.p99, bad: result.bad })
      }
    }
    const errors = server.errors().count
    if (errors > 0) log(`${database} memory ${variant.label}: the service logged ${errors} error(s): ${server.errorSummary().join("; ")}`)
    const measured: Measured = { variant, round, idle, peak, settled, hwm, load, endpoints, errors }
    log(
      `${database} memory ${variant.label} r${round}: idle ${idle.rss.toFixed(0)} MiB, peak ${peak.rss.toFixed(0)}, ` +
        `settled ${settled.rss.toFixed(0)} (VmHWM ${hwm?.toFixed(0) ?? "-"}); mixed ${load.rps.toFixed(0)} req/s p99 ${load.p99} ms ` +
        `${load.cpu.toFixed(2)} ms CPU/req load ${Os.loadavg()[0]!.toFixed(1)}` +
        (load.bad > 0 ? ` (${load.bad} failed or non-2xx)` : "") +
        (endpoints.length > 0 ? `; ${endpoints.map((e) => `${e.label} ${e.rps.toFixed(0)}`).join(", ")}` : "")
    )
    return measured
  } catch (error) {
    console.error(`service output:\n${server.output()}`)
    throw error
  } finally {
    await run.stop()
  }
}

interface Soak {
  readonly variant: Variant
  readonly seconds: number
  readonly first: number
  readonly last: number
  readonly max: number
  readonly slope: number
  readonly slopeSecondHalf: number
  readonly load: MixedResult
  readonly settled: Breakdown
  /** Where the memory is at the end of each minute (and at the soak's start). */
  readonly series: ReadonlyArray<{ readonly minute: number; readonly at: Breakdown; readonly anon: number | undefined }>
}

const seriesLine = (point: Soak["series"][number]) => {
  const at = point.at
  return `min ${String(point.minute).padStart(2)}: RSS ${f0(at.rss)} (anon ${f0(point.anon)}), main heap ${pair(at.mainHeapUsed, at.mainHeap)}, ` +
    `external ${f0(at.mainExternal)}, worker heap ${pair(at.workerHeapUsed, at.workerHeap)}, WASM ${f0(at.wasm)}, rest ${f0(restOf(at))}`
}

const soakVariant = async (database: Database, variant: Variant, prepared: Prepared<Seeded>): Promise<Soak> => {
  const seeded = prepared.seeded
  const run = await start(variant, prepared, `${database}-soak-${variant.label.replace(/\W+/g, "_")}`)
  const { server } = run
  try {
    await quiet(server.pid)
    // Warm: the first seconds are V8 compiling and the heap growing to its working size.
    await driveMixed(seeded, server, 10, 10_000_000)
    const rss = sampler(run.tree, 1_000)
    // Each minute: where the memory is (the probe's lines are read once the soak is over).
    const points: Array<{ minute: number; t: number; rss: number; wasm: number | undefined; anon: number | undefined }> = []
    const point = () => {
      const now = rss.samples.filter((s) => s.t >= Date.now() - 5_000)
      points.push({
        minute: points.length,
        t: Date.now(),
        rss: mean(now.map((s) => s.value)),
        wasm: wasmResidentMiB(server.pid),
        anon: readMemoryMiB(server.pid)?.anon
      })
    }
    point()
    const minutes = setInterval(point, 60_000)
    log(`${database} memory soak ${variant.label}: ${SOAK_SECONDS} s of mixed load`)
    const load = await driveMixed(seeded, server, SOAK_SECONDS, 20_000_000).finally(() => clearInterval(minutes))
    const samples = rss.stop()
    const skip = Math.min(60, SOAK_SECONDS / 5) * 1000
    const kept = samples.filter((s) => s.t - samples[0]!.t >= skip)
    const half = kept.filter((s) => s.t - kept[0]!.t >= (kept.at(-1)!.t - kept[0]!.t) / 2)
    const window = (list: typeof samples) => mean(list.map((s) => s.value))
    await sleep(1_000)
    const probeLines = run.probeFile === undefined ? [] : readProbe(run.probeFile)
    const settled = breakdownAt(probeLines, Date.now() - 500, run.tree() ?? Number.NaN, wasmResidentMiB(server.pid))
    const soak: Soak = {
      variant,
      seconds: SOAK_SECONDS,
      first: window(kept.filter((s) => s.t - kept[0]!.t < 10_000)),
      last: window(kept.filter((s) => kept.at(-1)!.t - s.t < 10_000)),
      max: Math.max(...samples.map((s) => s.value)),
      slope: slopePerMinute(kept),
      slopeSecondHalf: slopePerMinute(half),
      load,
      settled,
      series: points.map((p) => ({
        minute: p.minute,
        anon: p.anon,
        at: breakdownAt(probeLines, p.t, p.rss, p.wasm)
      }))
    }
    for (const p of soak.series) log(`${database} memory soak ${variant.label}: ${seriesLine(p)}`)
    log(
      `${database} memory soak ${variant.label}: RSS ${soak.first.toFixed(0)} → ${soak.last.toFixed(0)} MiB (max ${soak.max.toFixed(0)}), ` +
        `slope ${soak.slope.toFixed(2)} MiB/min (second half ${soak.slopeSecondHalf.toFixed(2)}), ${load.rps.toFixed(0)} req/s`
    )
    return soak
  } catch (error) {
    console.error(`service output:\n${server.output()}`)
    throw error
  } finally {
    await run.stop()
  }
}

// ---- the scenario ----

const f0 = (n: number | undefined) => (n === undefined || Number.isNaN(n) ? "-" : n.toFixed(0))
const pair = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? "-" : `${f0(a)} / ${f0(b)}`)

export const memoryScenario = async (database: Database): Promise<Section> => {
  const variants = parseVariants(process.env.BENCH_MEMORY_VARIANTS, database)
  const compare = variants.length > 1
  const withEndpoints = process.env.BENCH_MEMORY_ENDPOINTS === "1" || (compare && process.env.BENCH_MEMORY_ENDPOINTS !== "0")
  const rounds = compare ? config.rounds : 1
  log(`${database}: memory: preparing a fresh database with ${config.users} users and ${config.tasks} tasks for one of them`)
  const prepared = await prepare(database, (exec) => seed(exec, { users: config.users, mainTasks: config.tasks }))
  log(`${database}: memory: variants ${variants.map((v) => `"${v.label}"`).join(", ")}, ${rounds} round(s)`)

  const measured: Array<Measured> = []
  for (let round = 1; round <= rounds; round++) {
    const order = round % 2 === 1 ? variants : [...variants].reverse()
    for (const variant of order) measured.push(await measureVariant(database, variant, round, prepared, withEndpoints))
  }
  const soaks: Array<Soak> = []
  if (SOAK_SECONDS > 0) {
    const soaked = process.env.BENCH_SOAK_VARIANTS === "all" ? variants : variants.slice(0, 1)
    for (const variant of soaked) soaks.push(await soakVariant(database, variant, prepared))
  }

  const targets = MEMORY_TARGETS[database]
  const tree = database === "postgres" ? "Node only; the PostgreSQL server's backends are not counted" : "Node + PGlite, one process"
  const lines: Array<string> = []
  const byVariant = variants.map((variant) => ({ variant, runs: measured.filter((m) => m.variant === variant) }))

  // RSS around the load, per variant (mean of the rounds; the worst round's peak in brackets).
  lines.push(
    ...formatTable(
      ["variant", "idle", "peak", "settled", "VmHWM", "peak − idle", "mixed req/s", "CPU ms/req", "p99 ms", "failed", "target peak/settled"],
      byVariant.map(({ runs, variant }) => {
        const peak = mean(runs.map((r) => r.peak.rss))
        const worstPeak = Math.max(...runs.map((r) => r.peak.rss))
        const settled = mean(runs.map((r) => r.settled.rss))
        const worstSettled = Math.max(...runs.map((r) => r.settled.rss))
        const met = worstPeak <= targets.peak && worstSettled <= targets.settled
        return [
          variant.label,
          f0(mean(runs.map((r) => r.idle.rss))),
          runs.length > 1 ? `${f0(peak)} (${f0(worstPeak)})` : f0(peak),
          runs.length > 1 ? `${f0(settled)} (${f0(worstSettled)})` : f0(settled),
          f0(Math.max(...runs.map((r) => r.hwm ?? Number.NaN))),
          f0(mean(runs.map((r) => r.peak.rss - r.idle.rss))),
          f0(mean(runs.map((r) => r.load.rps))),
          mean(runs.map((r) => r.load.cpu)).toFixed(2),
          f0(Math.max(...runs.map((r) => r.load.p99))),
          String(runs.reduce((n, r) => n + r.load.bad + r.errors, 0)),
          `${met ? "MET" : "NOT MET"} (≤ ${targets.peak} / ≤ ${targets.settled})`
        ]
      }),
      (c) => c >= 1 && c <= 9
    )
  )

  // Where it is, at the peak and settled (each variant's last round).
  lines.push("")
  lines.push(`Where the memory is (MiB, ${variants.length > 1 ? "each variant's last round" : "the run above"}): V8 heap used / resident of the main thread` +
    ` (young generation of it), main thread's external (array buffers), the embedded database thread's V8 heap, PGlite's WebAssembly heap` +
    ` resident, and the rest (code, malloc, stacks, the Node binary)`)
  const breakdownRows: Array<Array<string>> = []
  for (const { runs, variant } of byVariant) {
    const r = runs.at(-1)!
    for (const [moment, b] of [["idle", r.idle], ["peak", r.peak], ["settled", r.settled]] as const) {
      breakdownRows.push([
        variant.label,
        moment,
        f0(b.rss),
        pair(b.mainHeapUsed, b.mainHeap),
        f0(b.mainYoung),
        `${f0(b.mainExternal)} (${f0(b.mainArrayBuffers)})`,
        pair(b.workerHeapUsed, b.workerHeap),
        f0(b.wasm),
        f0(restOf(b))
      ])
    }
  }
  lines.push(...formatTable(
    ["variant", "at", "RSS", "main heap", "young", "main external", "db thread heap", "WASM heap", "rest"],
    breakdownRows,
    (c) => c >= 2
  ))

  if (withEndpoints) {
    lines.push("")
    lines.push(`Endpoints one at a time, req/s and the service's CPU ms per request (${config.connections} connections, ` +
      `${config.duration} s after ${config.warmup} s, mean of ${rounds} round(s)${compare ? `; in brackets the ratio to "${variants[0]!.label}"` : ""}):`)
    const labels = measured[0]!.endpoints.map((e) => e.label)
    const of = (runs: ReadonlyArray<Measured>, label: string, pick: (e: Measured["endpoints"][number]) => number) =>
      mean(runs.map((r) => pick(r.endpoints.find((e) => e.label === label)!)))
    const cell = (i: number, label: string, pick: (e: Measured["endpoints"][number]) => number, digits: number) => {
      const value = of(byVariant[i]!.runs, label, pick)
      const base = of(byVariant[0]!.runs, label, pick)
      return i === 0 ? value.toFixed(digits) : `${value.toFixed(digits)} (${(value / base).toFixed(2)})`
    }
    lines.push(...formatTable(
      ["endpoint", ...variants.flatMap((v) => [`${v.label} req/s`, "CPU ms/req"])],
      labels.map((label) => [
        label,
        ...byVariant.flatMap((_, i) => [cell(i, label, (e) => e.rps, 0), cell(i, label, (e) => e.cpu, 2)])
      ]),
      (c) => c >= 1
    ))
  }

  for (const soak of soaks) {
    lines.push("")
    const met = soak.slope <= SOAK_SLOPE_TARGET
    lines.push(
      `Soak "${soak.variant.label}": ${soak.seconds} s of the mixed load on a fresh service (${soak.load.rps.toFixed(0)} req/s, ` +
        `p99 ${soak.load.p99} ms${soak.load.bad > 0 ? `, ${soak.load.bad} failed` : ""}); RSS ${f0(soak.first)} → ${f0(soak.last)} MiB ` +
        `(max ${f0(soak.max)}); slope ${soak.slope.toFixed(2)} MiB/min, second half ${soak.slopeSecondHalf.toFixed(2)}: ` +
        `${met ? "MET" : "NOT MET"} (≤ ${SOAK_SLOPE_TARGET} MiB/min); at its end: main heap ${pair(soak.settled.mainHeapUsed, soak.settled.mainHeap)}, ` +
        `WASM heap ${f0(soak.settled.wasm)}`
    )
    lines.push("Where it is, each minute (MiB; main heap and worker heap used / resident; rest: code, malloc, stacks):")
    for (const point of soak.series) lines.push(`  ${seriesLine(point)}`)
  }
  return {
    title: `Memory, ${database}: RSS of the service's process tree in MiB (${tree}), ${config.connections} connections of mixed load ` +
      `(40 % GET ?limit=50, 30 % GET by id, 15 % POST, 15 % PATCH priority) over ${prepared.seeded.taskCount} tasks: ` +
      `idle before, peak during ${LOAD_SECONDS} s, settled ${SETTLE_SECONDS} s after` +
      (rounds > 1 ? `; ${rounds} interleaved rounds, each a fresh process (worst round in brackets)` : ""),
    lines
  }
}
