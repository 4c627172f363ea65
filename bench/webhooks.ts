import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { makeScenarios, probe, type Scenario } from "./load.js"
import { onCleanup, sleep } from "./processes.js"
import { type Database, formatTable, type Section } from "./report.js"
import { seed } from "./seed.js"
import { config, describeRun, log, measureRun, prepare, type Run, startOurs } from "./setup.js"
import { geomean, mean } from "./stats.js"

/**
 * Webhooks on vs off: POST /api/tasks and PATCH /api/tasks/{id} with the user
 * having no webhooks, three active webhooks on task.created/task.updated pointing at a fast
 * receiver on 127.0.0.1, and three pointing at a receiver that never answers (the service
 * gives up after its 10 s timeout, retries twice, and holds at most 16 deliveries in
 * flight). The outbox rows are written in the request's transaction; delivery is a
 * background fiber of the same process, so what the "on" runs cost over "off" is the
 * outbox writes plus whatever delivery work competes for the CPU.
 *
 * Variants run in interleaved rounds (BENCH_ROUNDS), the order rotating; each "on" variant
 * registers its webhooks through the API first and deletes them afterwards, which drops
 * their pending deliveries, so no backlog carries over into the next variant.
 */

type Variant = "off" | "fast" | "hanging"
const VARIANTS: ReadonlyArray<Variant> = ["off", "fast", "hanging"]
const HOOKS = 3

interface Receivers {
  readonly fastUrl: string
  readonly hangingUrl: string
  /** POSTs the fast receiver answered. */
  readonly fastCount: () => number
  /** Requests the hanging receiver took in (and never answered). */
  readonly hangingCount: () => number
  /** Requests the hanging receiver holds open now. */
  readonly hangingOpen: () => number
}

const listen = (server: Http.Server) =>
  new Promise<number>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port))
  })

const startReceivers = async (): Promise<Receivers> => {
  let fast = 0
  let hanging = 0
  const open = new Set<Http.ServerResponse>()
  const fastServer = Http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      fast++
      res.writeHead(204)
      res.end()
    })
  })
  const hangingServer = Http.createServer((req, res) => {
    hanging++
    open.add(res)
    res.on("close", () => open.delete(res))
    req.resume()
  })
  const [fastPort, hangingPort] = [await listen(fastServer), await listen(hangingServer)]
  onCleanup("stop the webhook receivers", async () => {
    for (const server of [fastServer, hangingServer]) {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
  return {
    fastUrl: `http://127.0.0.1:${fastPort}/hook`,
    hangingUrl: `http://127.0.0.1:${hangingPort}/hook`,
    fastCount: () => fast,
    hangingCount: () => hanging,
    hangingOpen: () => open.size
  }
}

const api = async (baseUrl: string, token: string, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(60_000)
  })
  const text = await res.text()
  if (res.status < 200 || res.status > 299) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 300)}`)
  return JSON.parse(text) as { data: Record<string, unknown> }
}

interface Measured {
  readonly variant: Variant
  readonly scenario: Scenario
  readonly round: number
  readonly run: Run
  /** Deliveries the receiver saw during the measured run (fast: answered; hanging: taken in). */
  readonly received: number
  /** Fast receiver: the backlog delivered after the run, and how long that took. */
  readonly drained?: { readonly count: number; readonly ms: number; readonly complete: boolean }
}

/**
 * Waits until `count` has not moved for `quietMs` (or `limitMs` passed): the deliveries
 * still queued when the load stopped, and the time they took (the quiet tail excluded).
 */
const waitForDrain = async (count: () => number, quietMs: number, limitMs: number) => {
  const start = count()
  const started = performance.now()
  let last = start
  let lastChange = started
  for (;;) {
    await sleep(100)
    const now = performance.now()
    const value = count()
    if (value !== last) {
      last = value
      lastChange = now
    }
    if (now - lastChange >= quietMs) return { count: last - start, ms: lastChange - started, complete: true }
    if (now - started >= limitMs) return { count: last - start, ms: now - started, complete: false }
  }
}

export const webhooksScenario = async (database: Database): Promise<Section> => {
  log(`${database}: webhooks: preparing a fresh database with ${config.users} users and ${config.tasks} tasks for one of them`)
  const prepared = await prepare(database, (exec) => seed(exec, { users: config.users, mainTasks: config.tasks }))
  const { seeded } = prepared
  const receivers = await startReceivers()
  const ours = await startOurs({ ...prepared.env, SERVICE_WEBHOOK_ALLOW_PRIVATE: "true", SERVICE_WEBHOOK_DISPATCH: "true" })
  const measured: Array<Measured> = []
  let notes: Array<string> = []
  try {
    const scenarios = makeScenarios(seeded).filter((s) => s.key === "create" || s.key === "patch")
    for (const scenario of scenarios) await probe(scenario, ours.baseUrl, seeded.token)
    for (let round = 1; round <= config.rounds; round++) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + round - 1) % VARIANTS.length]!)
      for (const variant of order) {
        const hookIds: Array<number> = []
        if (variant !== "off") {
          const url = variant === "fast" ? receivers.fastUrl : receivers.hangingUrl
          for (let i = 0; i < HOOKS; i++) {
            const created = await api(ours.baseUrl, seeded.token, "POST", "/api/webhooks", {
              url: `${url}/${i}`,
              events: ["task.created", "task.updated"]
            })
            hookIds.push(Number(created.data.id))
          }
        }
        for (const scenario of scenarios) {
          const count = variant === "fast" ? receivers.fastCount : receivers.hangingCount
          const before = count()
          const run = await measureRun(scenario, ours, seeded.token, prepared.databaseName)
          const received = variant === "off" ? 0 : count() - before
          // The fast receiver's backlog is delivered before the next run, so each run competes
          // only with the deliveries of its own (and its warm-up's) requests.
          const drained = variant === "fast" ? await waitForDrain(count, 2_000, 90_000) : undefined
          measured.push({ variant, scenario, round, run, received, ...(drained === undefined ? {} : { drained }) })
          log(
            `${database} webhooks ${variant.padEnd(7)} ${scenario.label.padEnd(22)} r${round} ${describeRun(run)}` +
              (variant === "off" ? "" : `; receiver got ${received}`) +
              (variant === "hanging" ? ` (${receivers.hangingOpen()} held open)` : "") +
              (drained === undefined
                ? ""
                : `; then ${drained.count} more in ${(drained.ms / 1000).toFixed(1)} s${drained.complete ? "" : " (still going)"}`)
          )
        }
        // Deactivated, the webhooks' queued deliveries are cancelled when claimed; once the
        // attempts in flight have ended (the hanging ones after the 10 s timeout) deleting
        // them drops whatever is still queued. Deleting at once would make each attempt in
        // flight fail to log itself (webhook_attempts references the deleted webhook).
        for (const id of hookIds) await api(ours.baseUrl, seeded.token, "PATCH", `/api/webhooks/${id}`, { active: false })
        if (variant !== "off") await sleep(variant === "hanging" ? 12_000 : 2_000)
        for (const id of hookIds) await api(ours.baseUrl, seeded.token, "DELETE", `/api/webhooks/${id}`)
        await sleep(1_000)
      }
    }
    const errors = ours.errors()
    if (errors.count > 0) {
      log(`${database} webhooks: the service logged ${errors.count} error(s); the first:\n${errors.first}`)
      notes.push(`The service logged ${errors.count} error(s) (UTC times):`, ...ours.errorSummary().map((line) => `    ${line}`))
    }
  } catch (error) {
    console.error(`service output:\n${ours.output()}`)
    throw error
  } finally {
    await ours.stop()
  }

  const header = [
    "scenario",
    "webhooks",
    "req/s",
    "p50 ms",
    "p99 ms",
    "CPU ms/req",
    "DB CPU ms/req",
    "delivered/s",
    "req/s on/off",
    "p99 on/off",
    "CPU on/off"
  ]
  const rows: Array<Array<string>> = []
  for (const scenario of [...new Set(measured.map((m) => m.scenario))]) {
    const off = measured.filter((m) => m.scenario === scenario && m.variant === "off")
    for (const variant of VARIANTS) {
      const list = measured.filter((m) => m.scenario === scenario && m.variant === variant)
      const rpsRatios = list.flatMap((m) => {
        const o = off.find((x) => x.round === m.round)
        return o === undefined ? [] : [m.run.result.requestsPerSecond / o.run.result.requestsPerSecond]
      })
      const p99Ratios = list.flatMap((m) => {
        const o = off.find((x) => x.round === m.round)
        return o === undefined || o.run.result.p99 === 0 ? [] : [m.run.result.p99 / o.run.result.p99]
      })
      // Server + database CPU per request: what a CPU-bound box would pay, whatever else runs.
      const cost = (m: Measured) => m.run.cpuPerRequest === undefined ? undefined : m.run.cpuPerRequest + (m.run.dbCpuPerRequest ?? 0)
      const cpuRatios = list.flatMap((m) => {
        const o = off.find((x) => x.round === m.round)
        const [a, b] = [cost(m), o === undefined ? undefined : cost(o)]
        return a === undefined || b === undefined || b === 0 ? [] : [a / b]
      })
      const cpu = list.every((m) => m.run.cpuPerRequest !== undefined) ? mean(list.map((m) => m.run.cpuPerRequest!)) : undefined
      const dbCpu = list.every((m) => m.run.dbCpuPerRequest !== undefined) ? mean(list.map((m) => m.run.dbCpuPerRequest!)) : undefined
      const bad = list.reduce((n, m) => n + m.run.result.bad, 0)
      const label = variant === "off" ? "none" : `${HOOKS} × ${variant}`
      rows.push([
        scenario.label,
        label,
        mean(list.map((m) => m.run.result.requestsPerSecond)).toFixed(0),
        mean(list.map((m) => m.run.result.p50)).toFixed(1),
        Math.max(...list.map((m) => m.run.result.p99)).toFixed(1),
        cpu === undefined ? "-" : cpu.toFixed(2),
        dbCpu === undefined ? "-" : dbCpu.toFixed(2),
        variant === "off" ? "-" : mean(list.map((m) => m.received / config.duration)).toFixed(0),
        variant === "off" ? "1.00" : `${geomean(rpsRatios).toFixed(2)} (${rpsRatios.map((r) => r.toFixed(2)).join(", ")})`,
        variant === "off" ? "1.00" : `${geomean(p99Ratios).toFixed(2)} (${p99Ratios.map((r) => r.toFixed(2)).join(", ")})`,
        variant === "off" ? "1.00" : cpuRatios.length === 0 ? "-" : geomean(cpuRatios).toFixed(2)
      ].concat(bad > 0 ? [`${bad} failed/non-2xx`] : []))
    }
  }
  const events = (variant: Variant) =>
    measured.filter((m) => m.variant === variant).reduce((n, m) => n + m.run.result.total * HOOKS, 0)
  const got = (variant: Variant) => measured.filter((m) => m.variant === variant).reduce((n, m) => n + m.received, 0)
  const drains = measured.flatMap((m) => (m.drained === undefined ? [] : [m.drained]))
  const drainedCount = drains.reduce((n, d) => n + d.count, 0)
  const drainedMs = drains.reduce((n, d) => n + d.ms, 0)
  notes = [
    `Deliveries written during the measured runs (requests × ${HOOKS}): fast ${events("fast")}, hanging ${events("hanging")}. ` +
    `The fast receiver got ${got("fast")} while the load ran; once it stopped, the backlog (warm-up included) ` +
    `went out at ${drainedMs === 0 ? "-" : (drainedCount / (drainedMs / 1000)).toFixed(0)}/s ` +
    `(${drainedCount} in ${(drainedMs / 1000).toFixed(1)} s${drains.every((d) => d.complete) ? "" : ", not all of it within 90 s"}). ` +
    `The hanging receiver took in ${got("hanging")} and answered none.`,
    ...notes
  ]
  return {
    title: `Webhooks on vs off, ${database}: ${config.connections} connections, ${config.duration} s per run after ${config.warmup} s warm-up, ` +
      `${config.rounds} interleaved round(s); ratios per round against "none" (geometric mean first); p99 is the worst round; ` +
      `CPU is the service's and (PostgreSQL) its backends' CPU time per request, delivery work included`,
    lines: [...formatTable(header, rows, (i) => i >= 2 && i <= 7), ...notes]
  }
}
