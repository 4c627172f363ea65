import type { HttpServerRequest } from "@effect/platform"
import { Cookies } from "@effect/platform"
import { Effect, Option } from "effect"
import * as Net from "node:net"
import { Unauthorized } from "../domain/Errors.js"
import { AppConfig, type Cidr } from "./AppConfig.js"
import { Credentials, SESSION_COOKIE } from "./Credentials.js"
import type { CurrentUserShape } from "./CurrentUser.js"
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

    const bearer = (value: string) => {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(value)
      if (match === null) return Effect.fail(unauthorized("Malformed Authorization header; expected Bearer <token>"))
      return Effect.flatMap(credentials.verifyToken(match[1]!), (found) =>
        Option.match(found, {
          onNone: () => Effect.fail(unauthorized("Invalid API token")),
          onSome: Effect.succeed
        }))
    }

    /** Resolves the token behind a Bearer header, for minting a session cookie. */
    const bearerToken = (request: HttpServerRequest.HttpServerRequest) => {
      const header = request.headers["authorization"]
      return header === undefined ? Effect.fail(unauthorized("A Bearer token is required")) : bearer(header)
    }

    const authenticate = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<CurrentUserShape, Unauthorized> =>
      Effect.gen(function*() {
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
          const user = yield* credentials.verifySession(cookie)
          if (Option.isSome(user)) return user.value
          return yield* Effect.fail(unauthorized("Session expired or signed out"))
        }
        return yield* Effect.fail(unauthorized("Authentication required"))
      })

    return { authenticate, bearerToken } as const
  })
}) {}
