import { HttpApiMiddleware, HttpServerRequest } from "@effect/platform"
import { Effect, FiberRef, Layer, Schema } from "effect"
import { ForbiddenWire, UnauthorizedWire } from "../kernel/Errors.js"
import { Authenticator } from "../accounts/Authenticator.js"
import { CurrentUser, type CurrentUserShape } from "../kernel/CurrentUser.js"

/**
 * Resolves the caller (Bearer, then trusted proxy header, then session cookie) and
 * provides `CurrentUser` to the handlers behind it. 403: a cookie-authenticated write that
 * does not come from our own origin as JSON (see `Authenticator`).
 */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("steady/Authentication", {
  provides: CurrentUser,
  failure: Schema.Union(UnauthorizedWire, ForbiddenWire)
}) {}

/** The caller, when code around the router (Idempotency-Key) already authenticated this request. */
export const preAuthenticated = FiberRef.unsafeMake<CurrentUserShape | undefined>(undefined)

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(Authenticator, (authenticator) =>
    Effect.flatMap(FiberRef.get(preAuthenticated), (known) =>
      known === undefined
        ? Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => authenticator.authenticate(request))
        : Effect.succeed(known)))
)
