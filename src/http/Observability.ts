import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Context, Effect } from "effect"
import type { RequestMetricsRegistry } from "./RequestMetrics.js"
import { routeOf } from "./RoutePatterns.js"

/** The label of requests no route serves (404, 405): one series, whatever the path. */
export const UNMATCHED_ROUTE = "unmatched"

/**
 * Counts every request and its latency under its route pattern. It wraps the server's whole
 * handling, the response write included, so the status is the one the client got.
 */
export const measureRequests = (registry: RequestMetricsRegistry) => <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  Effect.withFiberRuntime((fiber) => {
    const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
    const start = performance.now()
    return Effect.onExit(app, (exit) => {
      registry.record(
        request.method,
        routeOf(request.method, request.url) ?? UNMATCHED_ROUTE,
        exit._tag === "Success" ? exit.value.status : 500,
        (performance.now() - start) / 1000
      )
      return Effect.void
    })
  })

/** `GET /api/tasks/:id`: a span per route, not one name for every request of a method. */
export const requestSpanName = (request: HttpServerRequest.HttpServerRequest) =>
  `${request.method} ${routeOf(request.method, request.url) ?? UNMATCHED_ROUTE}`
