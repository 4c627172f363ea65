import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect } from "effect"
import { Unauthorized } from "../kernel/Errors.js"
import { Authenticator } from "../accounts/Authenticator.js"
import { CalendarFeeds } from "./CalendarFeeds.js"
import { answerData } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { CalendarKey, CalendarKeyDeleted } from "./CalendarApi.js"
import { whole } from "../http/Envelope.js"
import { onlyServices } from "../http/OnlyServices.js"
import { Authentication } from "../http/Security.js"
import { Idempotency } from "../pipeline/Idempotency.js"

export const CalendarKeyHttpLive = HttpApiBuilder.group(Api, "calendarKey", (handlers) =>
  Effect.gen(function*() {
    const feeds = yield* CalendarFeeds
    const authenticator = yield* Authenticator
    return handlers
      .handle("createCalendarKey", () =>
        answerData(CalendarKey, 201)((user) =>
          Effect.gen(function*() {
            const origin = authenticator.publicOrigin(yield* HttpServerRequest.HttpServerRequest)
            const { key, created_at } = yield* feeds.createKey(user.id)
            const url = `${origin}/api/calendar.ics?key=${key}`
            return { key, url, webcal_url: url.replace(/^https?:/, "webcal:"), created_at }
          })
        ), whole)
      .handle("deleteCalendarKey", () =>
        answerData(CalendarKeyDeleted)((user) => Effect.as(feeds.revokeKey(user.id), { deleted: true as const })), whole)
  })).pipe(onlyServices(CalendarFeeds, Authenticator, Authentication, Idempotency))

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
  })).pipe(onlyServices(CalendarFeeds, Authenticator))
