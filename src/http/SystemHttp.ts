import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option, Redacted } from "effect"
import * as Crypto from "node:crypto"
import * as Yaml from "yaml"
import { Unauthorized } from "../domain/Errors.js"
import { AppConfig } from "../services/AppConfig.js"
import { giveUpAfter } from "../services/DatabaseFailures.js"
import { renderMetrics } from "../services/MetricsReport.js"
import { checkReadiness } from "../services/Readiness.js"
import { bareResponse } from "./Answer.js"
import { Api } from "./Api.js"
import { whole } from "./Envelope.js"
import { HealthDown, HealthOk, NotReady, Ready } from "./SystemApi.js"
import { openApiDocument } from "./OpenApiDocument.js"

/** Open when no token is configured; else only `Authorization: Bearer <token>`, compared in constant time. */
const metricsAllowed = (token: Option.Option<Redacted.Redacted>, authorization: string | undefined) => {
  if (Option.isNone(token)) return true
  const match = /^Bearer\s+(.+)$/i.exec(authorization ?? "")
  if (match === null) return false
  const given = Crypto.createHash("sha256").update(match[1]!.trim()).digest()
  const wanted = Crypto.createHash("sha256").update(Redacted.value(token.value).trim()).digest()
  return Crypto.timingSafeEqual(given, wanted)
}

export const SystemHttpLive = HttpApiBuilder.group(Api, "system", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const yaml = Yaml.stringify(openApiDocument(), { aliasDuplicateObjects: false })

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
      .handle("openapi", () => Effect.succeed(HttpServerResponse.text(yaml, { contentType: "text/yaml" })), whole)
      .handle("metrics", ({ request }) =>
        metricsAllowed(config.metricsToken, request.headers.authorization)
          ? Effect.map(renderMetrics({ timeout: config.healthTimeout, embedded: Option.isNone(config.databaseUrl) }), (text) =>
            HttpServerResponse.text(text, { contentType: "text/plain; version=0.0.4; charset=utf-8" }))
          : Effect.fail(new Unauthorized({ message: "A valid metrics token is required" })), whole)
  }))
