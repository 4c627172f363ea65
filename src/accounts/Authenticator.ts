import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Cookies from "@effect/platform/Cookies"
import { Effect, Option } from "effect"
import * as Net from "node:net"
import { Forbidden, Unauthorized } from "../kernel/Errors.js"
import { AppConfig, type Cidr, DEFAULT_PROXY_TRUSTED_IPS } from "../kernel/AppConfig.js"
import { Credentials, SESSION_COOKIE } from "./Credentials.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { Users } from "./Users.js"

const unauthorized = (message: string) => new Unauthorized({ message })

const makeTrust = (blocks: ReadonlyArray<Cidr>) => {
  const list = new Net.BlockList()
  for (const block of blocks) list.addSubnet(block.address, block.prefix, block.family)
  return (address: string): boolean => {
    // IPv4 peers on a dual-stack socket arrive as ::ffff:a.b.c.d.
    const plain = address.startsWith("::ffff:") && Net.isIPv4(address.slice(7)) ? address.slice(7) : address
    const family = Net.isIPv4(plain) ? "ipv4" : Net.isIPv6(plain) ? "ipv6" : undefined
    return family !== undefined && list.check(plain, family)
  }
}

const MAX_USERNAME = 100

const READS = new Set(["GET", "HEAD", "OPTIONS"])

const PLAIN_HOST = /^(?:[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?|\[[0-9a-f:.]{2,45}\])(?::\d{1,5})?$/

/**
 * The value the trusted proxy itself added: a proxy that appends to a client's own
 * `X-Forwarded-*` header puts its value last, so the earlier ones are the client's word.
 */
const lastValue = (header: string | undefined) => header?.split(",").at(-1)?.trim().toLowerCase()

/**
 * `GET /api/review` starts a review session, replacing the user's live one (spec §4.4 makes
 * it a GET), so a cookie request for it is judged like a write: a cross-site link would
 * otherwise void the session the user is about to execute.
 */
const startsReviewSession = (method: string, url: string) =>
  (method === "GET" || method === "HEAD") && url.split("?")[0] === "/api/review"

const hostOf = (origin: string): string | undefined => {
  try {
    return new URL(origin).host.toLowerCase()
  } catch {
    return undefined
  }
}

/**
 * A browser attaches the cookie to requests other pages make, even pages of a sibling
 * host on the same site, which SameSite=Lax lets through. So a cookie-authenticated write
 * must come from our own origin as far as the browser says (`Sec-Fetch-Site`, `Origin`),
 * and carry JSON: a form or a "simple" fetch cannot send `application/json` cross-origin
 * without a CORS preflight, which we never grant. A write without a body (DELETE, POST
 * …/done) needs no content type. Clients that send neither header (curl) are not browsers.
 */
const crossSiteReason = (request: HttpServerRequest.HttpServerRequest, forwardedHost: string | undefined) => {
  if (READS.has(request.method) && !startsReviewSession(request.method, request.url)) return undefined
  const site = request.headers["sec-fetch-site"]?.trim().toLowerCase()
  if (site !== undefined && site !== "same-origin" && site !== "none") {
    return `Cookie-authenticated writes must come from this origin (Sec-Fetch-Site: ${site})`
  }
  const origin = request.headers["origin"]
  if (origin !== undefined) {
    const host = hostOf(origin)
    const own = request.headers["host"]?.trim().toLowerCase()
    if (host === undefined || (host !== own && host !== forwardedHost)) {
      return "Cookie-authenticated writes must come from this origin (Origin does not match Host)"
    }
  }
  const type = request.headers["content-type"]
  const length = request.headers["content-length"]
  const hasBody = (length !== undefined && length.trim() !== "0") || request.headers["transfer-encoding"] !== undefined
  if ((type !== undefined || hasBody) && type?.split(";")[0]?.trim().toLowerCase() !== "application/json") {
    return "Cookie-authenticated writes must send Content-Type: application/json"
  }
  return undefined
}

/**
 * CONTRACT §4 order: a Bearer header decides alone; else the proxy header, believed only
 * from trusted addresses; else the session cookie; else 401.
 */
export class Authenticator extends Effect.Service<Authenticator>()("steady/Authenticator", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const credentials = yield* Credentials
    const users = yield* Users
    const trusted = makeTrust(config.proxyTrustedIps)
    const proxyHeader = Option.map(config.proxyAuthHeader, (h) => h.toLowerCase())
    const trustList = config.proxyTrustedIps.map((b) => `${b.address}/${b.prefix}`).join(",")
    if (Option.isSome(config.proxyAuthHeader) && trustList === DEFAULT_PROXY_TRUSTED_IPS) {
      // Loopback holds every local process, and a proxy on it that passes a client's own
      // header through lets that client name any user.
      yield* Effect.logWarning(
        `SERVICE_PROXY_AUTH_HEADER=${config.proxyAuthHeader.value} with the default SERVICE_PROXY_TRUSTED_IPS ` +
          `(${DEFAULT_PROXY_TRUSTED_IPS}): any local process can act as any user, and the proxy must overwrite ` +
          `(never pass through) that header; set SERVICE_PROXY_TRUSTED_IPS to the proxy's own address`
      )
    }

    const bearer = (value: string) => {
      // "Bearer" with nothing after it is what a script sends when its token variable is empty.
      if (/^\s*(Bearer)?\s*$/i.test(value)) return Effect.fail(unauthorized("Missing token: the Authorization header has no Bearer token"))
      const match = /^Bearer\s+(\S+)\s*$/i.exec(value)
      if (match === null) return Effect.fail(unauthorized("Malformed Authorization header; expected Bearer <token>"))
      return Effect.flatMap(credentials.verifyToken(match[1]!), (found) =>
        Option.match(found, {
          onNone: () => Effect.fail(unauthorized("Invalid API token")),
          onSome: Effect.succeed
        }))
    }

    /**
     * Only an operator who put a proxy in front (proxy auth, or a trust list of their own)
     * gets `X-Forwarded-*` believed. The default trust list is loopback, so without this any
     * local process could name the Host the cookie Origin check compares with, and the scheme.
     */
    const proxyConfigured = Option.isSome(config.proxyAuthHeader) || config.proxyTrustedIpsSet

    const forwarded = (request: HttpServerRequest.HttpServerRequest, name: "x-forwarded-host" | "x-forwarded-proto") => {
      if (!proxyConfigured) return undefined
      const peer = Option.getOrUndefined(request.remoteAddress)
      return peer !== undefined && trusted(peer) ? lastValue(request.headers[name]) : undefined
    }

    /** HTTPS as far as we can know: we serve plain HTTP, so only a trusted proxy can say so. */
    const viaHttps = (request: HttpServerRequest.HttpServerRequest) => forwarded(request, "x-forwarded-proto") === "https"

    /**
     * Where clients reach us, for links we hand out (the calendar feed): a configured and
     * trusted proxy's X-Forwarded-Proto/Host, else our Host header; a value that is not a plain host[:port]
     * is ignored, so a forged header cannot inject text into a link.
     */
    const publicOrigin = (request: HttpServerRequest.HttpServerRequest): string => {
      const host = [forwarded(request, "x-forwarded-host"), request.headers["host"]?.trim().toLowerCase()].find((h) =>
        h !== undefined && PLAIN_HOST.test(h)
      )
      return `${viaHttps(request) ? "https" : "http"}://${host ?? "localhost"}`
    }

    /** Resolves the token behind a Bearer header, for minting a session cookie. */
    const bearerToken = (request: HttpServerRequest.HttpServerRequest) => {
      const header = request.headers["authorization"]
      return header === undefined ? Effect.fail(unauthorized("A Bearer token is required")) : bearer(header)
    }

    // Made once (see docs/architecture.md, "Generators on the request path").
    const authenticate: (
      request: HttpServerRequest.HttpServerRequest
    ) => Effect.Effect<CurrentUserShape, Unauthorized | Forbidden> = Effect.fnUntraced(
      function*(request: HttpServerRequest.HttpServerRequest) {
        const authorization = request.headers["authorization"]
        if (authorization !== undefined) return (yield* bearer(authorization)).user

        if (Option.isSome(proxyHeader)) {
          const name = request.headers[proxyHeader.value]?.trim()
          const peer = Option.getOrUndefined(request.remoteAddress)
          if (name !== undefined && name !== "" && peer !== undefined && trusted(peer)) {
            if (name.length > MAX_USERNAME || /[\u0000-\u001f]/.test(name)) {
              return yield* Effect.fail(unauthorized("Invalid proxy user name"))
            }
            return yield* users.findOrCreate(name, config.defaultTimezone)
          }
        }

        const cookie = Cookies.parseHeader(request.headers["cookie"] ?? "")[SESSION_COOKIE]
        if (cookie !== undefined && cookie !== "") {
          const refusal = crossSiteReason(request, forwarded(request, "x-forwarded-host"))
          if (refusal !== undefined) return yield* Effect.fail(new Forbidden({ message: refusal }))
          const user = yield* credentials.verifySession(cookie)
          if (Option.isSome(user)) return user.value
          return yield* Effect.fail(unauthorized("Session expired or signed out"))
        }
        return yield* Effect.fail(unauthorized("Missing credentials: send Authorization: Bearer <token>"))
      }
    )

    return { authenticate, bearerToken, viaHttps, publicOrigin } as const
  })
}) {}
