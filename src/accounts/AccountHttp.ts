import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cookies from "@effect/platform/Cookies"
import { Duration, Effect } from "effect"
import { Authenticator } from "./Authenticator.js"
import { Credentials, SESSION_COOKIE, SESSION_LIFETIME_DAYS } from "./Credentials.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { Preferences } from "./Preferences.js"
import { PreferencesService } from "./PreferencesService.js"
import { CreatedToken, Me, SessionCreated, SessionDeleted, TokenDeleted, TokenList } from "./AccountApi.js"
import { answerData, dataResponse } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { whole } from "../http/Envelope.js"
import { onlyServices } from "../http/OnlyServices.js"
import { Authentication } from "../http/Security.js"
import { Idempotency } from "../pipeline/Idempotency.js"

const meOf = (preferences: PreferencesService) => (user: CurrentUserShape) =>
  Effect.map(preferences.get(user), (prefs) => ({
    id: user.id,
    username: user.username,
    timezone: prefs.timezone,
    week_start: prefs.week_start
  }))

export const AccountHttpLive = HttpApiBuilder.group(Api, "account", (handlers) =>
  Effect.gen(function*() {
    const preferences = yield* PreferencesService
    const credentials = yield* Credentials
    const me = meOf(preferences)
    return handlers
      .handle("me", () => answerData(Me)(me), whole)
      .handle("preferences", () => answerData(Preferences)(preferences.get), whole)
      .handle("updatePreferences", ({ payload }) => answerData(Preferences)((user) => preferences.update(user, payload)), whole)
      .handle("tokens", () =>
        answerData(TokenList)((user) => Effect.map(credentials.listTokens(user.id), (tokens) => ({ tokens }))), whole)
      .handle("createToken", ({ payload }) =>
        answerData(CreatedToken, 201)((user) => credentials.createCappedToken(user.id, payload.name.trim())), whole)
      .handle("deleteToken", ({ path }) =>
        answerData(TokenDeleted)((user) => Effect.as(credentials.deleteToken(user.id, path.id), { deleted: true as const })), whole)
  })).pipe(onlyServices(Credentials, PreferencesService, Authentication, Idempotency))

export const SessionHttpLive = HttpApiBuilder.group(Api, "session", (handlers) =>
  Effect.gen(function*() {
    const authenticator = yield* Authenticator
    const credentials = yield* Credentials
    const preferences = yield* PreferencesService
    const me = meOf(preferences)
    return handlers
      .handle("createSession", () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const { tokenId, user } = yield* authenticator.bearerToken(request)
          const session = yield* credentials.createSession(user.id, tokenId)
          const body = { user: yield* me(user), expires_at: session.expires.toISOString() }
          return yield* HttpServerResponse.setCookie(dataResponse(SessionCreated, body), SESSION_COOKIE, session.secret, {
            httpOnly: true,
            sameSite: "lax",
            path: "/",
            secure: authenticator.viaHttps(request),
            // A lifetime, not a date: the service clock may be shifted (SERVICE_NOW), the browser's is not.
            maxAge: Duration.days(SESSION_LIFETIME_DAYS)
          }).pipe(Effect.orDie)
        }), whole)
      .handle("deleteSession", () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const secret = Cookies.parseHeader(request.headers["cookie"] ?? "")[SESSION_COOKIE]
          if (secret !== undefined && secret !== "") yield* credentials.deleteSession(secret)
          return yield* HttpServerResponse.expireCookie(dataResponse(SessionDeleted, { signed_out: true }), SESSION_COOKIE, { path: "/" }).pipe(
            Effect.orDie
          )
        }), whole)
  })).pipe(onlyServices(Credentials, Authenticator, PreferencesService))
