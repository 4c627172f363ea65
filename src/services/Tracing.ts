import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { FetchHttpClient } from "@effect/platform"
import { Effect, FiberRef, Layer, Option } from "effect"
import { AppConfig } from "./AppConfig.js"

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
        OtlpTracer.layer({
          url: otlp.tracesUrl,
          resource: { serviceName: otlp.serviceName, serviceVersion: "1.0.0" },
          headers: otlp.headers
        }).pipe(
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
