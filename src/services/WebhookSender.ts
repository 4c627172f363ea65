import { Duration, Effect } from "effect"
import * as Crypto from "node:crypto"
import * as Dns from "node:dns"
import * as Http from "node:http"
import * as Https from "node:https"
import * as Net from "node:net"
import { refusedAddress } from "./WebhookNetwork.js"

/** Spec §6: 10 seconds per request. */
export const WEBHOOK_TIMEOUT = Duration.seconds(10)

export interface AttemptResult {
  readonly statusCode: number | null
  readonly error: string | null
}

/** `sha256=<hex>` over the raw body (spec §6). */
export const serviceSignature = (secret: string, body: string) =>
  `sha256=${Crypto.createHmac("sha256", Buffer.from(secret, "utf8")).update(body, "utf8").digest("hex")}`

/** Standard Webhooks `v1,<base64>` over `id.timestamp.body` (CONTRACT §9). */
export const standardSignature = (secret: string, id: string, timestamp: number, body: string) =>
  `v1,${Crypto.createHmac("sha256", Buffer.from(secret, "utf8")).update(`${id}.${timestamp}.${body}`, "utf8").digest("base64")}`

class Blocked extends Error {
  override readonly name = "Blocked"
}

/** DNS resolution that refuses forbidden addresses, so the check holds at connect time. */
const guardedLookup = (allowPrivate: boolean): Net.LookupFunction => (hostname, options, callback) => {
  Dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return (callback as (e: Error) => void)(error)
    const list = addresses as Array<Dns.LookupAddress>
    for (const a of list) {
      const reason = refusedAddress(a.address, allowPrivate)
      if (reason !== undefined) return (callback as (e: Error) => void)(new Blocked(reason))
    }
    if (options.all) return (callback as (e: null, a: Array<Dns.LookupAddress>) => void)(null, list)
    const first = list[0]
    if (first === undefined) return (callback as (e: Error) => void)(new Error("host not found"))
    return (callback as (e: null, a: string, f: number) => void)(null, first.address, first.family)
  })
}

const describe = (error: unknown): string => {
  if (error instanceof Blocked) return `blocked: ${error.message}`
  const code = (error as NodeJS.ErrnoException)?.code
  switch (code) {
    case "ECONNREFUSED":
      return "connection refused"
    case "ECONNRESET":
      return "connection reset"
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "host not found"
    case "EHOSTUNREACH":
    case "ENETUNREACH":
      return "host unreachable"
    default:
      return error instanceof Error ? error.message : String(error)
  }
}

/**
 * One POST of frozen body bytes. Redirects are not followed (node:http never does); a
 * literal IP is checked here, a host name at DNS resolution.
 */
export const postOnce = (
  url: string,
  headers: Record<string, string>,
  body: string,
  allowPrivate: boolean
): Effect.Effect<AttemptResult> =>
  Effect.async<AttemptResult>((resume) => {
    let target: URL
    try {
      target = new URL(url)
    } catch {
      resume(Effect.succeed({ statusCode: null, error: "invalid URL" }))
      return
    }
    const host = target.hostname.replace(/^\[|\]$/g, "")
    if (Net.isIP(host) !== 0) {
      const reason = refusedAddress(host, allowPrivate)
      if (reason !== undefined) {
        resume(Effect.succeed({ statusCode: null, error: `blocked: ${reason}` }))
        return
      }
    }
    const client = target.protocol === "https:" ? Https : Http
    const request = client.request(target, {
      method: "POST",
      headers: { ...headers, "content-length": String(Buffer.byteLength(body, "utf8")) },
      lookup: guardedLookup(allowPrivate),
      agent: false
    }, (response) => {
      response.resume()
      const done = () => resume(Effect.succeed({ statusCode: response.statusCode ?? null, error: null }))
      response.once("end", done)
      response.once("error", done)
    })
    request.once("error", (error) => resume(Effect.succeed({ statusCode: null, error: describe(error) })))
    request.end(body)
    return Effect.sync(() => request.destroy())
  }).pipe(
    Effect.timeoutTo({
      duration: WEBHOOK_TIMEOUT,
      onSuccess: (result) => result,
      onTimeout: (): AttemptResult => ({ statusCode: null, error: "timeout" })
    })
  )
