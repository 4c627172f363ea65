import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Duration, Effect } from "effect"
import { decodeCursor, encodeCursor, type Position } from "./ChangeCursor.js"
import { ValidationError } from "../kernel/Errors.js"
import { type Bound, ChangeFeed, changeJson, checkCursor } from "./ChangeFeed.js"
import { ChangeHub } from "./ChangeHub.js"
import { CurrentUser } from "../kernel/CurrentUser.js"
import { bareResponse, jsonTextResponse } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { ChangePage, CursorExpiredWire, DEFAULT_CHANGES_LIMIT } from "./ChangesApi.js"
import { whole } from "../http/Envelope.js"
import { whenDraining } from "../http/GracefulStop.js"
import { onlyServices } from "../http/OnlyServices.js"
import { Authentication } from "../http/Security.js"

const expired = (b: Bound) =>
  bareResponse(CursorExpiredWire, {
    error: "The cursor is older than the change feed keeps; resume from oldest_cursor after a full sync",
    code: "GONE",
    details: { oldest_cursor: encodeCursor(b.horizon) }
  }, 410)

/** Where to read from: the cursor given, else `fallback`; 400 for a cursor we never issued. */
const startOf = (field: string, cursor: string | undefined, b: Bound, fallback: Position) => {
  const from = cursor === undefined ? fallback : decodeCursor(cursor)
  const check = from === undefined ? "unknown" : checkCursor(from, b)
  if (check === "unknown") return Effect.fail(ValidationError.field(field, "is not a cursor issued by this feed"))
  return Effect.succeed(check === "expired" ? undefined : from!)
}

/**
 * How long a stream stays open for a client that did not ask for `text/event-stream`.
 * EventSource (and any SSE client) sends that Accept and gets a stream that lasts; a generic
 * HTTP client (a fuzzer, a script reading the whole body) would otherwise wait for an answer
 * that never ends. It gets what commits within this window, then a finished response.
 */
export const UNNEGOTIATED_STREAM = Duration.seconds(3)

const asksForEventStream = (accept: string | undefined) =>
  accept !== undefined && /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept)

export const ChangesHttpLive = HttpApiBuilder.group(Api, "changes", (handlers) =>
  Effect.gen(function*() {
    const feed = yield* ChangeFeed
    const hub = yield* ChangeHub

    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const b = yield* feed.settledBound
          // Without a cursor: everything still kept, so a new client can page through it.
          const from = yield* startOf("since", urlParams.since, b, b.horizon)
          if (from === undefined) return expired(b)
          const page = yield* feed.page(user.id, from, urlParams.limit ?? DEFAULT_CHANGES_LIMIT, b)
          const changes = page.rows.map((row) => changeJson(row, user.id)).join(",")
          return jsonTextResponse(
            ChangePage,
            `{"data":{"changes":[${changes}],"next_cursor":"${encodeCursor(page.next)}","has_more":${page.hasMore}}}`
          )
        }), whole)
      .handle("events", ({ headers, urlParams }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const b = yield* feed.bound
          const given = headers["last-event-id"] || urlParams.since
          const field = headers["last-event-id"] ? "Last-Event-ID" : "since"
          // Without a cursor a stream starts now, as EventSource clients expect.
          const from = yield* startOf(field, given, b, { xid: b.xmin, id: 0n })
          if (from === undefined) return expired(b)
          // A stop signal ends the stream at once (clients reconnect elsewhere with Last-Event-ID)
          // instead of holding the drain for its whole grace period.
          const request = yield* HttpServerRequest.HttpServerRequest
          const draining = Effect.promise(whenDraining)
          const endAfter = asksForEventStream(request.headers["accept"])
            ? draining
            : Effect.race(draining, Effect.sleep(UNNEGOTIATED_STREAM))
          const body = yield* hub.stream(user, from, endAfter)
          return HttpServerResponse.raw(body, {
            contentType: "text/event-stream",
            headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
          })
        }), whole)
  })).pipe(onlyServices(ChangeFeed, ChangeHub, Authentication))
