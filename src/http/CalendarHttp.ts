import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { Unauthorized } from "../domain/Errors.js"
import { Authenticator } from "../services/Authenticator.js"
import { CalendarFeeds } from "../services/CalendarFeeds.js"
import { CurrentUser } from "../services/CurrentUser.js"
import { Api } from "./Api.js"
import { sendData, whole } from "./Envelope.js"

export const CalendarKeyHttpLive = HttpApiBuilder.group(Api, "calendarKey", (handlers) =>
  Effect.gen(function*() {
    const feeds = yield* CalendarFeeds
    const authenticator = yield* Authenticator
    return handlers
      .handle("createCalendarKey", () =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const origin = authenticator.publicOrigin(yield* HttpServerRequest.HttpServerRequest)
          const { key, created_at } = yield* feeds.createKey(user.id)
          const url = `${origin}/api/calendar.ics?key=${key}`
          return sendData({ key, url, webcal_url: url.replace(/^https?:/, "webcal:"), created_at }, 201)
        }), whole)
      .handle("deleteCalendarKey", () =>
        Effect.flatMap(CurrentUser, (user) => feeds.revokeKey(user.id)).pipe(Effect.as(sendData({ deleted: true }))), whole)
  }))

export const CalendarFeedHttpLive = HttpApiBuilder.group(Api, "calendarFeed", (handlers) =>
  Effect.gen(function*() {
    const feeds = yield* CalendarFeeds
    const authenticator = yield* Authenticator
    return handlers.handle("calendarFeed", ({ urlParams }) =>
      Effect.gen(function*() {
        const key = urlParams.key?.trim() ?? ""
        if (key === "") return yield* Effect.fail(new Unauthorized({ message: "A calendar key is required (?key=…)" }))
        const request = yield* HttpServerRequest.HttpServerRequest
        const body = yield* feeds.feed(key, authenticator.publicOrigin(request))
        return HttpServerResponse.text(body, {
          contentType: "text/calendar; charset=utf-8",
          // The key is in the URL: keep the answer out of shared caches.
          headers: { "cache-control": "private, no-store" }
        })
      }), whole)
  }))
