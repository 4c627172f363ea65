import { HttpApiMiddleware, HttpServerRequest } from "@effect/platform"
import { Effect, Layer } from "effect"
import { UnauthorizedWire } from "../domain/Errors.js"
import { Authenticator } from "../services/Authenticator.js"
import { CurrentUser } from "../services/CurrentUser.js"

/**
 * Resolves the caller (Bearer, then trusted proxy header, then session cookie) and
 * provides `CurrentUser` to the handlers behind it.
 */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("steady/Authentication", {
  provides: CurrentUser,
  failure: UnauthorizedWire
}) {}

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(Authenticator, (authenticator) =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => authenticator.authenticate(request)))
)
