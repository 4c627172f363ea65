import * as Crypto from "node:crypto"
import * as Http from "node:http"
import { DEFAULT_PREFERENCES } from "../src/accounts/Preferences.js"
import { INBOX_NAME } from "../src/slots/Slots.js"
import { sleep } from "./processes.js"
import { type Database, formatTable, type Section } from "./report.js"
import type { Exec } from "./seed.js"
import { log, prepare, startOurs } from "./setup.js"

/**
 * Change streams: one instance holds BENCH_SSE_STREAMS open GET /api/events
 * streams (loopback clients, 10 per user) while a writer creates tasks at BENCH_SSE_RATE
 * per second, round-robin over the users; each change reaches the 10 streams of its user.
 * Reported: delivery latency (event received − write sent, so it includes the write's own
 * time; p50/p99/max over every delivery), events lost or repeated, and the server's RSS
 * growth per open stream, and the server's CPU per write (the write and its fan-out). Target: p99 < 100 ms.
 */

export const SSE_TARGET_P99_MS = 100
const STREAMS = Number(process.env.BENCH_SSE_STREAMS ?? 1000)
const PER_USER = 10
const RATE = Number(process.env.BENCH_SSE_RATE ?? 100)
const SECONDS = Number(process.env.BENCH_SSE_SECONDS ?? 20)

const sha256 = (text: string) => Crypto.createHash("sha256").update(text, "utf8").digest("hex")

const seedUsers = async (exec: Exec, count: number) => {
  const at = new Date().toISOString()
  const tokens: Array<string> = []
  for (let n = 0; n < count; n++) {
    const [user] = await exec(
      `INSERT INTO users (username, timezone, preferences, created_at) VALUES ($1, 'UTC', $2::jsonb, $3::timestamptz) RETURNING id`,
      [`sse_user_${n}`, JSON.stringify(DEFAULT_PREFERENCES), at]
    )
    const userId = Number(user!.id)
    await exec(
      `INSERT INTO projects (owner_id, name, is_inbox, sort_order, created_at, updated_at)
       VALUES ($1, $2, true, 0, $3::timestamptz, $3::timestamptz)`,
      [userId, INBOX_NAME, at]
    )
    const token = Crypto.randomBytes(32).toString("hex")
    await exec(
      `INSERT INTO api_tokens (user_id, name, token_hash, token_preview, created_at) VALUES ($1, 'bench', $2, $3, $4::timestamptz)`,
      [userId, sha256(token), token.slice(-8), at]
    )
    tokens.push(token)
  }
  return tokens
}

const quantile = (sorted: ReadonlyArray<number>, q: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!

export const sseScenario = async (database: Database): Promise<Section> => {
  const users = Math.max(1, Math.round(STREAMS / PER_USER))
  log(`${database}: sse: preparing ${users} users`)
  const prepared = await prepare(database, (exec) => seedUsers(exec, users))
  const tokens = prepared.seeded
  const ours = await startOurs(prepared.env)
  const agent = new Http.Agent({ keepAlive: true, maxSockets: Infinity })
  const writeAgent = new Http.Agent({ keepAlive: true, maxSockets: 16 })
  const url = new URL(ours.baseUrl)
  const requests: Array<Http.ClientRequest> = []
  /** Sequence number → when its write was sent, and when its answer came back. */
  const sent = new Map<number, number>()
  const answered = new Map<number, number>()
  const latencies: Array<number> = []
  /** Delivery after the write was answered (≈ after commit); 0 when the event came first. */
  const afterAnswer: Array<number> = []
  const seen = new Map<number, number>()
  let repeats = 0
  let opened = 0
  try {

    // The writer: RATE creates per second on a fixed schedule, round-robin over the users.
    const writePhase = async (first: number) => {
      const total = RATE * SECONDS
      const writeLatencies: Array<number> = []
      let failed = 0
      const cpuBefore = ours.cpuMs()
      const started = performance.now()
      const writes: Array<Promise<void>> = []
      for (let i = 0; i < total; i++) {
        const n = first + i
        const due = started + (i * 1000) / RATE
        const wait = due - performance.now()
        if (wait > 0) await sleep(wait)
        const body = JSON.stringify({ title: `sse ${n}` })
        const at = performance.now()
        sent.set(n, at)
        writes.push(
          new Promise<void>((resolve) => {
            const req = Http.request({
              host: url.hostname,
              port: url.port,
              path: "/api/tasks",
              method: "POST",
              agent: writeAgent,
              headers: { authorization: `Bearer ${tokens[n % users]!}`, "content-type": "application/json" }
            }, (res) => {
              res.resume()
              res.on("end", () => {
                if (res.statusCode !== 201) failed++
                answered.set(n, performance.now())
                writeLatencies.push(performance.now() - at)
                resolve()
              })
            })
            req.on("error", () => {
              failed++
              resolve()
            })
            req.end(body)
          })
        )
      }
      await Promise.all(writes)
      const seconds = (performance.now() - started) / 1000
      const cpuAfter = ours.cpuMs()
      const cpuPerWrite = cpuBefore === undefined || cpuAfter === undefined ? NaN : (cpuAfter - cpuBefore) / total
      writeLatencies.sort((a, b) => a - b)
      return { total, failed, seconds, writeP99: quantile(writeLatencies, 0.99), cpuPerWrite }
    }

    /** RSS is noisy (the heap grows and shrinks with GC): the median of several readings. */
    const rssNow = async () => {
      const samples: Array<number> = []
      for (let i = 0; i < 9; i++) {
        samples.push(ours.rssMiB()!)
        await sleep(300)
      }
      return samples.sort((a, b) => a - b)[4]!
    }
    // RSS per stream on the fresh service, before any write has grown the heap.
    await sleep(3_000)
    const rssBefore = await rssNow()

    /** Opens stream `i` and resolves once the server says it is subscribed; a 503 is retried like a client would. */
    const openStream = (i: number, attempt = 0): Promise<void> =>
      new Promise<void>((resolve, reject) => {
        const token = tokens[i % users]!
        const req = Http.get({
          host: url.hostname,
          port: url.port,
          path: "/api/events",
          agent,
          headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" }
        }, (res) => {
          if (res.statusCode === 503 && attempt < 5) {
            res.resume()
            return void sleep(500 * (attempt + 1)).then(() => openStream(i, attempt + 1)).then(resolve, reject)
          }
          if (res.statusCode !== 200) return reject(new Error(`GET /api/events answered ${res.statusCode}`))
          res.setEncoding("utf8")
          let buffer = ""
          let ready = false
          res.on("data", (chunk: string) => {
            buffer += chunk
            let cut: number
            while ((cut = buffer.indexOf("\n\n")) >= 0) {
              const block = buffer.slice(0, cut)
              buffer = buffer.slice(cut + 2)
              if (!ready && block.startsWith(": stream open")) {
                ready = true
                opened++
                resolve()
                continue
              }
              const data = block.split("\n").find((line) => line.startsWith("data: "))
              if (data === undefined) continue
              const match = /"title":"sse (\d+)"/.exec(data)
              if (match === null) continue
              const n = Number(match[1])
              const at = sent.get(n)
              const now = performance.now()
              if (at !== undefined) latencies.push(now - at)
              const done = answered.get(n)
              afterAnswer.push(done === undefined ? 0 : Math.max(0, now - done))
              const count = (seen.get(n) ?? 0) + 1
              seen.set(n, count)
              if (count > PER_USER) repeats++
            }
          })
        })
        req.on("error", (error) => reject(error))
        requests.push(req)
      })
    const openAll = async () => {
      // In waves of 50, as clients arrive, not 1,000 in the same millisecond.
      for (let first = 0; first < users * PER_USER; first += 50) {
        await Promise.all(Array.from({ length: Math.min(50, users * PER_USER - first) }, (_, k) => openStream(first + k)))
      }
    }
    await openAll()
    await sleep(2_000)
    const rssOpen = await rssNow()
    log(`${database}: sse: ${opened} streams open; RSS ${rssBefore.toFixed(1)} → ${rssOpen.toFixed(1)} MiB`)
    const streamCount = opened

    // The same writes with no stream open: what the fan-out adds is measured against this.
    for (const req of requests.splice(0)) req.destroy()
    await sleep(2_000)
    const quiet = await writePhase(1_000_000)
    log(`${database}: sse: no streams: ${(quiet.total / quiet.seconds).toFixed(0)} writes/s, write p99 ${quiet.writeP99.toFixed(1)} ms, ${quiet.cpuPerWrite.toFixed(2)} CPU ms/write`)
    opened = 0
    await openAll()
    await sleep(1_000)
    seen.clear()
    latencies.length = 0
    afterAnswer.length = 0

    const loud = await writePhase(0)
    const { failed, total } = loud
    for (let i = 0; i < 50 && latencies.length < (total - failed) * PER_USER; i++) await sleep(100)
    const rssEnd = ours.rssMiB()!

    const sorted = [...latencies].sort((a, b) => a - b)
    const sortedAfter = [...afterAnswer].sort((a, b) => a - b)
    const expected = (total - failed) * PER_USER
    const lost = expected - latencies.length + repeats
    const p99 = quantile(sorted, 0.99)
    const perStreamKiB = ((rssOpen - rssBefore) * 1024) / streamCount
    const rows = [[
      String(opened),
      `${(total / loud.seconds).toFixed(0)}/s`,
      String(latencies.length),
      quantile(sorted, 0.5).toFixed(1),
      `${p99.toFixed(1)} ${p99 < SSE_TARGET_P99_MS ? "ok" : `over ${SSE_TARGET_P99_MS}`}`,
      (sorted.at(-1) ?? NaN).toFixed(1),
      `${quantile(sortedAfter, 0.5).toFixed(1)} / ${quantile(sortedAfter, 0.99).toFixed(1)}`,
      `${quiet.writeP99.toFixed(1)} / ${loud.writeP99.toFixed(1)}`,
      String(Math.max(0, lost)),
      String(repeats),
      `${rssBefore.toFixed(1)} / ${rssOpen.toFixed(1)} / ${rssEnd.toFixed(1)}`,
      perStreamKiB.toFixed(1),
      `${quiet.cpuPerWrite.toFixed(2)} / ${loud.cpuPerWrite.toFixed(2)} (${(loud.cpuPerWrite / quiet.cpuPerWrite).toFixed(2)}×)`
    ]]
    log(`${database}: sse: ${latencies.length} deliveries, p99 ${p99.toFixed(1)} ms, ${perStreamKiB.toFixed(1)} KiB RSS per stream`)
    return {
      title: `Change streams, ${database}: ${opened} open GET /api/events streams (${PER_USER} per user), ${RATE} creates/s for ` +
        `${SECONDS} s, each reaching its user's ${PER_USER} streams; delivery = event received − write sent (includes the ` +
        `write; "after answer" = event received − write answered, 0 if the event came first); target p99 < ${SSE_TARGET_P99_MS} ms${failed > 0 ? `; ${failed} writes failed` : ""}`,
      lines: formatTable(
        ["streams", "writes", "deliveries", "p50 ms", "p99 ms", "max ms", "after answer p50/p99 ms", "write p99 ms 0/N streams", "lost", "repeated", "RSS MiB idle/open/end", "KiB/stream", "CPU ms/write 0/N streams"],
        rows,
        (c) => c >= 1 && c <= 12
      )
    }
  } finally {
    for (const req of requests) req.destroy()
    agent.destroy()
    writeAgent.destroy()
    await ours.stop()
  }
}
