import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"

export const HealthOk = Schema.Struct({ status: Schema.Literal("ok") })
export const HealthDown = Schema.Struct({ status: Schema.Literal("error"), message: Schema.String }).annotations({
  identifier: "HealthDown"
})

const FiberState = Schema.Literal("running", "disabled", "stopped", "not_started")

const readiness = {
  database: Schema.Struct({ status: Schema.Literal("ok", "error"), message: Schema.optional(Schema.String) }),
  migrations: Schema.Struct({
    applied: Schema.Int,
    latest: Schema.NullOr(Schema.String),
    pending: Schema.Array(Schema.String)
  }),
  fibers: Schema.Record({ key: Schema.String, value: FiberState })
}
export const Ready = Schema.Struct({ status: Schema.Literal("ready"), ...readiness }).annotations({ identifier: "Ready" })
export const NotReady = Schema.Struct({ status: Schema.Literal("not_ready"), ...readiness }).annotations({
  identifier: "NotReady"
})

/** Prometheus text exposition; the handler sends the text itself. */
export const PrometheusText = Schema.String.annotations({ description: "Prometheus text format 0.0.4" }).pipe(
  HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/plain" })
)

/**
 * This document, in YAML: described as the object it is (a parser hands clients an object,
 * not a string). The handler sends the text itself; the schema is the contract only.
 */
export const OpenApiDocument = Schema.Unknown.annotations({
  jsonSchema: {
    type: "object",
    description: "An OpenAPI 3.1 document",
    required: ["openapi", "info", "paths"],
    properties: { openapi: { type: "string" }, info: { type: "object" }, paths: { type: "object" } }
  }
}).pipe(HttpApiSchema.withEncoding({ kind: "Json", contentType: "text/yaml" }))

/**
 * Pages for people, public like `/api/health`: a front page and the API reference. Plain
 * routes beside the API rather than endpoints of it, so the document describes the JSON
 * interface only and stays as it is.
 */
export const DOOR_ROUTES: ReadonlyArray<{ readonly method: "GET"; readonly path: "/" | "/docs" }> = [
  { method: "GET", path: "/" },
  { method: "GET", path: "/docs" }
]

/** Public endpoints: no authentication, no `{data}` envelope (spec §1, §4.1). */
export class SystemApi extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("health", "/api/health")
      .addSuccess(HealthOk)
      .addError(HealthDown, { status: 503 })
  )
  .add(
    HttpApiEndpoint.get("ready", "/api/health/ready")
      .addSuccess(Ready)
      .addError(NotReady, { status: 503 })
      .annotate(OpenApi.Description, "Ready to serve: the database answers, every migration is applied, the background fibers run.")
  )
  .add(
    HttpApiEndpoint.get("openapi", "/api/openapi").addSuccess(OpenApiDocument)
  )
  .add(
    HttpApiEndpoint.get("metrics", "/metrics")
      .addSuccess(PrometheusText)
      .annotate(OpenApi.Description, "Prometheus metrics. With SERVICE_METRICS_TOKEN set, send it as a Bearer token (else 401).")
  )
{}
