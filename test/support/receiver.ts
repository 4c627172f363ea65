import * as Crypto from "node:crypto"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

/**
 * A real webhook receiver on 127.0.0.1 for the tests: records every request (raw body
 * bytes included) and answers as scripted.
 */
export interface Received {
  readonly path: string
  readonly method: string
  readonly headers: Http.IncomingHttpHeaders
  /** The body bytes exactly as they arrived. */
  readonly raw: Buffer
  readonly body: any
  /** Arrival time (ms, wall clock), taken when the whole body was in. */
  readonly at: number
}

/** A status to answer with, "hang" to never answer, or a status with a delay and extra headers. */
export type Reply =
  | number
  | "hang"
  | { readonly status: number; readonly delayMs?: number; readonly headers?: Record<string, string> }

export interface Receiver {
  readonly port: number
  /** `http://127.0.0.1:<port><path>` */
  readonly url: (path?: string) => string
  readonly received: Array<Received>
  /** How to answer the n-th request (0-based); the default answers 200. */
  script: (request: Received, index: number) => Reply
  /** Resolves once at least `n` requests (matching `filter`) have arrived. */
  readonly waitFor: (n: number, timeoutMs?: number, filter?: (r: Received) => boolean) => Promise<Array<Received>>
  readonly close: () => Promise<void>
}

export const startReceiver = async (script: (request: Received, index: number) => Reply = () => 200): Promise<Receiver> => {
  const received: Array<Received> = []
  const waiters = new Set<() => void>()
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const raw = Buffer.concat(chunks)
      let body: unknown = undefined
      try {
        body = JSON.parse(raw.toString("utf8"))
      } catch {
        body = undefined
      }
      const entry: Received = { path: req.url ?? "", method: req.method ?? "", headers: req.headers, raw, body, at: Date.now() }
      const index = received.length
      received.push(entry)
      for (const wake of [...waiters]) wake()
      const reply = receiver.script(entry, index)
      if (reply === "hang") return
      const answer = (status: number, headers: Record<string, string> = {}) => {
        res.writeHead(status, { "content-type": "text/plain", ...headers })
        res.end(status >= 200 && status < 300 ? "ok" : "no")
      }
      if (typeof reply === "number") answer(reply)
      else setTimeout(() => answer(reply.status, reply.headers), reply.delayMs ?? 0)
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => resolve())
  })
  const port = (server.address() as AddressInfo).port
  const receiver: Receiver = {
    port,
    url: (path = "/hook") => `http://127.0.0.1:${port}${path}`,
    received,
    script,
    waitFor: (n, timeoutMs = 15_000, filter = () => true) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const matching = received.filter(filter)
          if (matching.length >= n) {
            clearTimeout(timer)
            waiters.delete(check)
            resolve(matching)
            return true
          }
          return false
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`receiver: expected ${n} requests within ${timeoutMs} ms, got ${received.filter(filter).length}`))
        }, timeoutMs)
        if (!check()) waiters.add(check)
      }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
  return receiver
}

/** A port on 127.0.0.1 that nothing listens on (taken and released at once). */
export const closedPort = async (): Promise<number> => {
  const server = Http.createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const port = (server.address() as AddressInfo).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

const header = (r: Received, name: string): string => {
  const value = r.headers[name]
  return Array.isArray(value) ? value.join(",") : value ?? ""
}

/** `sha256=<hex>` of the raw body bytes, keyed with the secret (spec §6). */
export const expectedServiceSignature = (secret: string, raw: Buffer) =>
  `sha256=${Crypto.createHmac("sha256", Buffer.from(secret, "utf8")).update(raw).digest("hex")}`

/** Standard Webhooks: `v1,<base64 HMAC of id.timestamp.body>` (the Standard Webhooks signature scheme). */
export const expectedStandardSignature = (secret: string, id: string, timestamp: string, raw: Buffer) =>
  `v1,${
    Crypto.createHmac("sha256", Buffer.from(secret, "utf8"))
      .update(Buffer.concat([Buffer.from(`${id}.${timestamp}.`, "utf8"), raw]))
      .digest("base64")
  }`

/** Checks both signatures of one received request the way a receiver would, in constant time. */
export const verifySignatures = (secret: string, r: Received): { service: boolean; standard: boolean } => {
  const same = (a: string, b: string) => {
    const x = Buffer.from(a)
    const y = Buffer.from(b)
    return x.length === y.length && Crypto.timingSafeEqual(x, y)
  }
  const id = header(r, "webhook-id")
  const timestamp = header(r, "webhook-timestamp")
  // Standard Webhooks allows several space-separated signatures; any v1 match counts.
  const standard = header(r, "webhook-signature").split(" ").some((s) => same(s, expectedStandardSignature(secret, id, timestamp, r.raw)))
  return { service: same(header(r, "x-service-signature"), expectedServiceSignature(secret, r.raw)), standard }
}

export { header }

/** Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs`. */
export const eventually = async <A>(probe: () => Promise<A | undefined>, timeoutMs = 15_000, what = "condition"): Promise<A> => {
  const until = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
