import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import { probe, type Scenario } from "./load.js"
import { onCleanup, sleep } from "./processes.js"
import { type Database, formatTable, type Section } from "./report.js"
import { seed } from "./seed.js"
import { config, copyOf, describeRun, log, measureRun, prepare, type Run, startOurs, warmUpService } from "./setup.js"
import { geomean, mean } from "./stats.js"

/**
 * AI on vs off: POST /api/tasks with a title only, the create that triggers
 * enrichment, on a service with AI off and on one whose provider is a fake OpenAI-compatible
 * server on 127.0.0.1 answering after 20 ms. Enrichment must add nothing to the create: the
 * request only writes the queue row, and the worker's model calls and enrich steps compete
 * for the same CPU in the background. Target: req/s on/off ≥ 0.95.
 *
 * Each run gets a freshly started service (the embedded database takes one process at a
 * time) on its own copy of the prepared database, variants in interleaved rounds with the
 * order rotating. On one shared database each run found the rows (and, after AI on, the
 * queue backlog) of the runs before it, and the second run of a round read ~10% slower
 * whichever variant it was.
 */

type Variant = "off" | "on"
const VARIANTS: ReadonlyArray<Variant> = ["off", "on"]
export const AI_TARGET_RATIO = 0.95

const titleOnly: Scenario = {
  key: "create",
  label: "POST /api/tasks (title only)",
  method: "POST",
  compared: false,
  request: (n) => ({ path: "/api/tasks", body: JSON.stringify({ title: `call the plumber about the sink ${n}` }) })
}

const startFakeProvider = async () => {
  let calls = 0
  const server = Http.createServer((req, res) => {
    req.resume()
    req.on("end", () => {
      calls++
      setTimeout(() => {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({
          id: "chatcmpl-bench",
          object: "chat.completion",
          created: 0,
          model: "bench",
          choices: [{ index: 0, message: { role: "assistant", content: "{\"title\":\"Call the plumber\",\"priority\":1,\"labels\":[\"home\"]}" }, finish_reason: "stop" }]
        }))
      }, 20)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  onCleanup("stop the fake AI provider", async () => {
    server.closeAllConnections()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, calls: () => calls }
}

export const aiScenario = async (database: Database): Promise<Section> => {
  log(`${database}: ai: preparing a fresh database with ${config.users} users and 1000 tasks for one of them`)
  const prepared = await prepare(database, (exec) => seed(exec, { users: config.users, mainTasks: 1000 }))
  const { seeded } = prepared
  const provider = await startFakeProvider()
  const measured: Array<{ variant: Variant; round: number; run: Run; calls: number }> = []
  for (let round = 1; round <= config.rounds; round++) {
    const order = VARIANTS.map((_, i) => VARIANTS[(i + round - 1) % VARIANTS.length]!)
    for (const variant of order) {
      const copy = await copyOf(prepared)
      const env = variant === "off"
        ? { ...copy.env, SERVICE_AI_PROVIDER: "off" }
        : { ...copy.env, SERVICE_AI_PROVIDER: "openai", SERVICE_AI_BASE_URL: provider.url, SERVICE_AI_MODEL: "bench" }
      const ours = await startOurs(env)
      try {
        await probe(titleOnly, ours.baseUrl, seeded.token)
        await warmUpService([titleOnly], ours, seeded.token)
        const before = provider.calls()
        const run = await measureRun(titleOnly, ours, seeded.token, copy.databaseName)
        const calls = provider.calls() - before
        measured.push({ variant, round, run, calls })
        log(`${database} ai ${variant.padEnd(3)} r${round} ${describeRun(run)}${variant === "on" ? `; ${calls} model calls meanwhile` : ""}`)
      } finally {
        await ours.stop()
        await copy.remove()
      }
      await sleep(500)
    }
  }
  const off = measured.filter((m) => m.variant === "off")
  const rows = VARIANTS.map((variant) => {
    const list = measured.filter((m) => m.variant === variant)
    const ratios = list.flatMap((m) => {
      const o = off.find((x) => x.round === m.round)
      return o === undefined ? [] : [m.run.result.requestsPerSecond / o.run.result.requestsPerSecond]
    })
    const ratio = geomean(ratios)
    return [
      variant,
      mean(list.map((m) => m.run.result.requestsPerSecond)).toFixed(0),
      mean(list.map((m) => m.run.result.p50)).toFixed(1),
      Math.max(...list.map((m) => m.run.result.p99)).toFixed(1),
      list.every((m) => m.run.cpuPerRequest !== undefined) ? mean(list.map((m) => m.run.cpuPerRequest!)).toFixed(2) : "-",
      variant === "off" ? "-" : String(list.reduce((n, m) => n + m.calls, 0)),
      variant === "off"
        ? "1.00"
        : `${ratio.toFixed(2)} (${ratios.map((r) => r.toFixed(2)).join(", ")}) ${ratio >= AI_TARGET_RATIO ? "ok" : `below ${AI_TARGET_RATIO}`}`
    ]
  })
  return {
    title: `AI on vs off, ${database}: title-only POST /api/tasks, ${config.connections} connections, ${config.duration} s per run, ` +
      `${config.rounds} interleaved round(s); target req/s on/off ≥ ${AI_TARGET_RATIO}`,
    lines: formatTable(["AI", "req/s", "p50 ms", "p99 ms", "CPU ms/req", "model calls", "req/s on/off"], rows, (c) => c >= 1 && c <= 5)
  }
}
