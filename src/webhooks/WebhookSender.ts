import * as HttpBody from "@effect/platform/HttpBody"
import * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Duration, Effect, Stream } from "effect"
import * as Crypto from "node:crypto"
import * as Dns from "node:dns"
import * as Net from "node:net"
import { AppConfig } from "../kernel/AppConfig.js"
import { REFUSAL_TEXT, type Refusal, refusalOf } from "./WebhookNetwork.js"

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
  constructor(readonly refusal: Refusal) {
    super(REFUSAL_TEXT[refusal])
  }
}

/** The address is left out: for a host name it is what DNS said, which the user did not type. */
const blocked = (refusal: Refusal) => `blocked: ${REFUSAL_TEXT[refusal]}`

/** DNS resolution that refuses forbidden addresses, so the check holds at connect time. */
const guardedLookup = (allowPrivate: boolean): Net.LookupFunction => (hostname, options, callback) => {
  Dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return (callback as (e: Error) => void)(error)
    const list = addresses as Array<Dns.LookupAddress>
    for (const a of list) {
      const refusal = refusalOf(a.address, allowPrivate)
      if (refusal !== undefined) return (callback as (e: Error) => void)(new Blocked(refusal))
    }
    if (options.all) return (callback as (e: null, a: Array<Dns.LookupAddress>) => void)(null, list)
    const first = list[0]
    if (first === undefined) return (callback as (e: Error) => void)(new Error("host not found"))
    return (callback as (e: null, a: string, f: number) => void)(null, first.address, first.family)
  })
}

/**
 * The delivery log is read by the webhook's owner, who may point it anywhere: it says only
 * refused, not found, blocked or "connection failed", never a socket error's own text.
 * A reset, a non-HTTP answer or a TLS failure would each tell what listens on a port.
 */
const describe = (error: unknown): string => {
  if (error instanceof Blocked) return blocked(error.refusal)
  const code = (error as NodeJS.ErrnoException)?.code
  switch (code) {
    case "ECONNREFUSED":
      return "connection refused"
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return "host not found"
    case "ETIMEDOUT":
      return "timeout"
    default:
      return "connection failed"
  }
}

/** What an attempt that got no answer says, from the error under the client's. */
const failureOf = (error: HttpClientError.HttpClientError): AttemptResult => ({
  statusCode: null,
  error: describe(error._tag === "RequestError" && error.cause !== undefined ? error.cause : error)
})

/**
 * The webhook client: `@effect/platform`'s HttpClient over node:http and node:https
 * agents whose `lookup` is the SSRF guard, so a host name is checked at connect time on the
 * address really dialled (a name that resolves to a private address later is still refused).
 * Connections are not kept: each delivery dials again and is checked again. Redirects are
 * not followed (the client follows none unless told to).
 */
export class WebhookSender extends Effect.Service<WebhookSender>()("steady/WebhookSender", {
  scoped: Effect.gen(function*() {
    const config = yield* AppConfig
    const allowPrivate = config.webhookAllowPrivate
    const agent = yield* NodeHttpClient.makeAgent({ lookup: guardedLookup(allowPrivate), keepAlive: false })
    // No client span: a webhook URL's path or query is often the receiver's credential
    // (Slack, Discord, Home Assistant), and without the span no traceparent goes out either.
    const client = (yield* Effect.provideService(NodeHttpClient.make, NodeHttpClient.HttpAgent, agent)).pipe(
      HttpClient.withTracerDisabledWhen(() => true)
    )

    /**
     * One POST of frozen body bytes. A literal IP is checked here (no lookup runs for
     * one), a host name at DNS resolution. The answer's body is drained, never kept.
     */
    const post = (url: string, headers: Record<string, string>, body: string): Effect.Effect<AttemptResult> =>
      Effect.suspend((): Effect.Effect<AttemptResult> => {
        let target: URL
        try {
          target = new URL(url)
        } catch {
          return Effect.succeed({ statusCode: null, error: "invalid URL" })
        }
        const host = target.hostname.replace(/^\[|\]$/g, "")
        if (Net.isIP(host) !== 0) {
          const refusal = refusalOf(host, allowPrivate)
          if (refusal !== undefined) return Effect.succeed({ statusCode: null, error: blocked(refusal) })
        }
        const { "content-type": contentType = "application/json", ...rest } = headers
        const request = HttpClientRequest.post(target, {
          headers: rest,
          body: HttpBody.text(body, contentType)
        })
        return client.execute(request).pipe(
          Effect.flatMap((response) =>
            Stream.runDrain(response.stream).pipe(
              Effect.ignore,
              Effect.as<AttemptResult>({ statusCode: response.status, error: null })
            )
          ),
          Effect.catchAll((error) => Effect.succeed(failureOf(error))),
          Effect.scoped
        )
      }).pipe(
        Effect.timeoutTo({
          duration: WEBHOOK_TIMEOUT,
          onSuccess: (result) => result,
          onTimeout: (): AttemptResult => ({ statusCode: null, error: "timeout" })
        }),
        Effect.withSpan("WebhookSender.post")
      )

    return { post } as const
  })
}) {}
