import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as OpenApi from "@effect/platform/OpenApi"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer, Option, Redacted } from "effect"
import * as Crypto from "node:crypto"
import * as Yaml from "yaml"
import { Unauthorized } from "../kernel/Errors.js"
import { AppConfig } from "../kernel/AppConfig.js"
import { giveUpAfter } from "../sql/DatabaseFailures.js"
import { renderMetrics } from "./MetricsReport.js"
import { checkReadiness } from "./Readiness.js"
import { bareResponse } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { whole } from "../http/Envelope.js"
import { HealthDown, HealthOk, NotReady, Ready } from "./SystemApi.js"
import { openApiDocument } from "../http/OpenApiDocument.js"
import { DatabaseMaintenance } from "./DatabaseMaintenance.js"
import { Liveness } from "./Liveness.js"
import { onlyServices } from "../http/OnlyServices.js"
import { RequestMetrics } from "../http/RequestMetrics.js"

/** Open when no token is configured; else only `Authorization: Bearer <token>`, compared in constant time. */
const metricsAllowed = (token: Option.Option<Redacted.Redacted>, authorization: string | undefined) => {
  if (Option.isNone(token)) return true
  const match = /^Bearer\s+(.+)$/i.exec(authorization ?? "")
  if (match === null) return false
  const given = Crypto.createHash("sha256").update(match[1]!.trim()).digest()
  const wanted = Crypto.createHash("sha256").update(Redacted.value(token.value).trim()).digest()
  return Crypto.timingSafeEqual(given, wanted)
}

const lazily = <A>(make: () => A) => {
  let value: { readonly a: A } | undefined
  return () => (value ??= { a: make() }).a
}
/** The served document, built once: the API reference embeds the same one. */
const servedDocument = lazily(openApiDocument)
/** Written on first request: the YAML alone took a quarter of a second of every start. */
const documentYaml = lazily(() => Yaml.stringify(servedDocument(), { aliasDuplicateObjects: false }))
const documentJson = lazily(() => JSON.stringify(servedDocument()))

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json$/
const YAML_TYPE = /^(?:text|application)\/(?:x-)?yaml$/

/**
 * JSON when the Accept header asks for it (`application/json`, or a `+json` type) above
 * any YAML type it names; YAML otherwise, as before (wildcards and no header included).
 */
export const wantsJson = (accept: string | undefined) => {
  let json = 0
  let yaml = 0
  for (const part of (accept ?? "").split(",")) {
    const [range, ...params] = part.split(";").map((s) => s.trim().toLowerCase())
    const q = params.map((p) => /^q=([\d.]+)$/.exec(p)).find((m) => m !== null)
    const weight = q === undefined || q === null ? 1 : Number(q[1])
    if (!Number.isFinite(weight)) continue
    if (JSON_TYPE.test(range ?? "")) json = Math.max(json, weight)
    else if (YAML_TYPE.test(range ?? "")) yaml = Math.max(yaml, weight)
  }
  return json > 0 && json > yaml
}

const openApiResponse = (accept: string | undefined) =>
  HttpServerResponse.setHeader(
    wantsJson(accept)
      ? HttpServerResponse.text(documentJson(), { contentType: "application/json" })
      : HttpServerResponse.text(documentYaml(), { contentType: "text/yaml" }),
    "vary",
    "Accept"
  )

export const SystemHttpLive = HttpApiBuilder.group(Api, "system", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig

    return handlers
      .handle("health", () =>
        sql`SELECT 1`.pipe(
          giveUpAfter(config.healthTimeout),
          Effect.as(bareResponse(HealthOk, { status: "ok" })),
          Effect.catchAllCause(() =>
            Effect.succeed(bareResponse(HealthDown, { status: "error", message: "The database is unavailable" }, 503))
          )
        ), whole)
      .handle("ready", () =>
        Effect.map(checkReadiness(config.healthTimeout), ({ status, ...report }) =>
          status === "ready"
            ? bareResponse(Ready, { status, ...report })
            : bareResponse(NotReady, { status, ...report }, 503)), whole)
      .handle("openapi", ({ request }) => Effect.sync(() => openApiResponse(request.headers.accept)), whole)
      .handle("metrics", ({ request }) =>
        metricsAllowed(config.metricsToken, request.headers.authorization)
          ? Effect.map(renderMetrics({ timeout: config.healthTimeout, embedded: Option.isNone(config.databaseUrl) }), (text) =>
            HttpServerResponse.text(text, { contentType: "text/plain; version=0.0.4; charset=utf-8" }))
          : Effect.fail(new Unauthorized({ message: "A valid metrics token is required" })), whole)
  })).pipe(
    // Liveness and DatabaseMaintenance are optional (`Effect.serviceOption`: an embedding
    // program may run without the background fibers), so their types do not ask for them.
    onlyServices(AppConfig, RequestMetrics, SqlClient.SqlClient, Liveness, DatabaseMaintenance)
  )

const FRONT_PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Steady</title>
  </head>
  <body>
    <h1>Steady</h1>
    <p>A self-hosted task service with a JSON REST API.</p>
    <ul>
      <li><a href="/docs">API reference</a> (interactive)</li>
      <li><a href="/api/openapi">OpenAPI document</a> (YAML; JSON with <code>Accept: application/json</code>)</li>
      <li><a href="/api/health">Health</a></li>
    </ul>
  </body>
</html>
`

/**
 * Scalar's reference page for the served document. Its bundle (`@effect/platform`'s
 * HttpApiScalar inlines it: ~3.4 MB of module source, ~13 MiB of heap once loaded and put in
 * the page) is loaded on the first `GET /docs`, not at start: most instances never serve it.
 * HttpApiScalar only offers a layer that registers a route, so that layer is built once on a
 * router of its own, and each `GET /docs` is answered by that router (its page is one
 * prebuilt response).
 */
const scalarReference = (api: HttpApi.Api["Type"]) =>
  Effect.scoped(Effect.gen(function*() {
    const HttpApiScalar = yield* Effect.promise(() => import("@effect/platform/HttpApiScalar"))
    const built = yield* Layer.build(
      HttpApiScalar.layer({ path: "/docs", scalar: { withDefaultFonts: false } }).pipe(
        Layer.provideMerge(HttpApiBuilder.Router.Live),
        Layer.provide(Layer.succeed(HttpApi.Api, api))
      )
    )
    return yield* Effect.provide(HttpApiBuilder.Router.router, built)
  }))

/**
 * `GET /` and `GET /docs` (see `DOOR_ROUTES`) on the router the API is served from, so the
 * error envelope, request ids and metrics cover them, while no group's authentication does.
 * It takes the API from the layer that registers it (`ApiLive`).
 * The reference is Scalar's bundle as `@effect/platform` ships it, inlined in the page (no
 * CDN), showing the served document rather than HttpApi's raw one; its default fonts would
 * come from fonts.scalar.com, so the page uses the browser's.
 */
export const DoorLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const { api, context } = yield* HttpApi.Api
    // The API with the served document as its OpenAPI rendering, so the reference shows
    // what `/api/openapi` serves.
    const reference = yield* Effect.cached(scalarReference({ api: api.annotate(OpenApi.Transform, servedDocument), context }))
    yield* router.get("/", Effect.succeed(HttpServerResponse.html(FRONT_PAGE)))
    yield* router.get("/docs", Effect.orDie(Effect.flatten(reference)))
  })
)
