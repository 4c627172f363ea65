import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import { Effect, FiberRef, Layer, Option, Tracer } from "effect"
import { AppConfig } from "./AppConfig.js"

/**
 * Query parameters that carry a credential: the calendar feed's `key`, OAuth's tokens and
 * codes, API keys, signatures of signed URLs. Matched on the lower-cased name.
 */
const SECRET_PARAM = /(?:^|[-_.])(?:key|apikey|token|secret|password|passwd|pwd|signature|sig|code|auth|session|sessionid|credential|credentials)$|token|secret|password|api[-_]?key|access[-_]?key|signature/

export const REDACTED = "REDACTED"

/** `a=1&key=s3cret` → `a=1&key=REDACTED`; names and order are kept, so the query still reads. */
export const redactQuery = (query: string): string =>
  query.split("&").map((pair) => {
    const eq = pair.indexOf("=")
    const rawName = eq < 0 ? pair : pair.slice(0, eq)
    let name = rawName
    try {
      name = decodeURIComponent(rawName.replace(/\+/g, " "))
    } catch {
      // A malformed escape: judge the name as written.
    }
    return eq >= 0 && SECRET_PARAM.test(name.toLowerCase()) ? `${rawName}=${REDACTED}` : pair
  }).join("&")

/** A URL with its credential query values and any user:password replaced; anything else unchanged. */
export const redactUrl = (text: string): string => {
  const withoutUser = text.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#@]*@/i, `$1${REDACTED}:${REDACTED}@`)
  const at = withoutUser.indexOf("?")
  if (at < 0) return withoutUser
  const hash = withoutUser.indexOf("#", at)
  const end = hash < 0 ? withoutUser.length : hash
  return `${withoutUser.slice(0, at + 1)}${redactQuery(withoutUser.slice(at + 1, end))}${withoutUser.slice(end)}`
}

/** Span attributes that hold a whole URL, and those that hold its query alone (OpenTelemetry names, old and new). */
const URL_ATTRIBUTES = new Set(["url.full", "http.url", "url.original", "http.target"])
const QUERY_ATTRIBUTES = new Set(["url.query"])

const redactAttribute = (key: string, value: unknown): unknown =>
  typeof value !== "string"
    ? value
    : URL_ATTRIBUTES.has(key)
    ? redactUrl(value)
    : QUERY_ATTRIBUTES.has(key)
    ? redactQuery(value)
    : value

/**
 * Every span's URL attributes pass through `redactUrl` before they are kept, whoever sets
 * them: the platform's server middleware writes `url.full` and `url.query` verbatim, so
 * `GET /api/calendar.ics?key=…` would send the feed's only credential to the collector.
 */
export const redactingTracer = (tracer: Tracer.Tracer): Tracer.Tracer =>
  Tracer.make({
    span(name, parent, context, links, startTime, kind, options) {
      const span = tracer.span(name, parent, context, links, startTime, kind, options)
      const set = span.attribute.bind(span)
      span.attribute = (key, value) => set(key, redactAttribute(key, value))
      return span
    },
    context: (f, fiber) => tracer.context(f, fiber)
  })

/**
 * With an OTLP endpoint configured, every span (requests, SQL statements, webhook attempts,
 * model calls, rollover sweeps) is batched and sent over OTLP/HTTP by `@effect/opentelemetry`'s
 * own exporter (no OpenTelemetry SDK). Without one, tracing is switched off altogether, so
 * `Effect.withSpan` and the SQL client's statement spans cost nothing on the hot path.
 *
 * It sets the tracer for whatever is built after it: provide it beneath the database, the
 * services and the server.
 */
export const TracingLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    Option.match(config.otlp, {
      onNone: () => Layer.setTracerEnabled(false),
      onSome: (otlp) =>
        Layer.unwrapScoped(Effect.map(
          OtlpTracer.make({
            url: otlp.tracesUrl,
            resource: { serviceName: otlp.serviceName, serviceVersion: "1.0.0" },
            headers: otlp.headers
          }),
          (tracer) => Layer.setTracer(redactingTracer(tracer))
        )).pipe(
          Layer.provide(otlp.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
          Layer.provide(FetchHttpClient.layer)
        )
    }))
)

/**
 * `Effect.withSpan` only while tracing is on. Switched off, `withSpan` still makes a no-op
 * span and provides it to the context for the run (an acquire-use-release of the context,
 * some fifteen runtime steps): measurable on a path run for every keyed write.
 */
export const spanWhenTraced = (name: string) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime((fiber) =>
    fiber.getFiberRef(FiberRef.currentTracerEnabled) ? Effect.withSpan(self, name, { captureStackTrace: false }) : self
  )
