import * as HttpApiMiddleware from "@effect/platform/HttpApiMiddleware"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Effect, Layer, Schema } from "effect"
import { ForbiddenWire, UnauthorizedWire } from "../kernel/Errors.js"
import { Authenticator } from "../accounts/Authenticator.js"
import { CurrentUser } from "../kernel/CurrentUser.js"

/**
 * Resolves the caller (Bearer, then trusted proxy header, then session cookie) and
 * provides `CurrentUser` to the handlers behind it. 403: a cookie-authenticated write that
 * does not come from our own origin as JSON (see `Authenticator`).
 */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("steady/Authentication", {
  provides: CurrentUser,
  failure: Schema.Union(UnauthorizedWire, ForbiddenWire)
}) {}

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(Authenticator, (authenticator) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => authenticator.authenticate(request)))
)
