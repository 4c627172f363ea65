import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Cookies } from "@effect/platform"
import { Duration, Effect } from "effect"
import { Authenticator } from "../services/Authenticator.js"
import { Credentials, SESSION_COOKIE, SESSION_LIFETIME_DAYS } from "../services/Credentials.js"
import { CurrentUser, type CurrentUserShape } from "../services/CurrentUser.js"
import { PreferencesService } from "../services/PreferencesService.js"
import { Api } from "./Api.js"
import { sendData, whole } from "./Envelope.js"

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
      .handle("me", () => Effect.flatMap(CurrentUser, me).pipe(Effect.map((body) => sendData(body))), whole)
      .handle("preferences", () => Effect.flatMap(CurrentUser, preferences.get).pipe(Effect.map((p) => sendData(p))), whole)
      .handle("updatePreferences", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => preferences.update(user, payload)).pipe(Effect.map((p) => sendData(p))), whole)
      .handle("tokens", () =>
        Effect.flatMap(CurrentUser, (user) => credentials.listTokens(user.id)).pipe(
          Effect.map((tokens) => sendData({ tokens }))
        ), whole)
      .handle("createToken", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => credentials.createCappedToken(user.id, payload.name.trim())).pipe(
          Effect.map((token) => sendData(token, 201))
        ), whole)
      .handle("deleteToken", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => credentials.deleteToken(user.id, path.id)).pipe(
          Effect.as(sendData({ deleted: true }))
        ), whole)
  }))

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
          return yield* HttpServerResponse.setCookie(sendData(body), SESSION_COOKIE, session.secret, {
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
          return yield* HttpServerResponse.expireCookie(sendData({ signed_out: true }), SESSION_COOKIE, { path: "/" }).pipe(
            Effect.orDie
          )
        }), whole)
  }))
