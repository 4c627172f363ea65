import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, FiberRef, HashMap } from "effect"
import * as Crypto from "node:crypto"

export const REQUEST_ID_HEADER = "x-request-id"

/**
 * An id a proxy or client already gave the request is kept, so their logs and ours line up;
 * only short ids of plain characters, so nothing odd reaches a log line or a header.
 */
const SANE_ID = /^[A-Za-z0-9._:-]{1,64}$/

// A random prefix per process and a counter: unique enough to find a request in the logs,
// and costs no entropy or clock read per request.
const prefix = Crypto.randomBytes(4).toString("hex")
let counter = 0

export const requestIdOf = (incoming: string | undefined): string =>
  incoming !== undefined && SANE_ID.test(incoming) ? incoming : `${prefix}-${(++counter).toString(36)}`

const pathOf = (url: string) => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

/**
 * Gives every request an id, sent back as `X-Request-Id` on every response, and names the
 * request (method, path without the query, id) in every log line written while it runs,
 * the 500 log of the error envelope included. Wrap it around `withErrorEnvelope`.
 *
 * The annotations are set on the request's fiber for the rest of its life rather than around
 * `app` (`Effect.annotateLogs`): a server runs each request in a fiber of its own, which ends
 * with the response, so nothing is left to restore. Setting a fiber ref copies the fiber's
 * refs; `annotateLogs` did it twice, set and restore, ~15 KB of a `GET /api/tasks/{id}`'s
 * 174 KB (docs/performance.md, "Allocation per request").
 */
export const withRequestId = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const id = requestIdOf(request.headers[REQUEST_ID_HEADER])
    return FiberRef.update(FiberRef.currentLogAnnotations, (annotations) =>
      HashMap.set(HashMap.set(HashMap.set(annotations, "request_id", id), "method", request.method), "path", pathOf(request.url))).pipe(
        Effect.zipRight(app),
        Effect.map((response) => HttpServerResponse.setHeader(response, REQUEST_ID_HEADER, id))
      )
  })
