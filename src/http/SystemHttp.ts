import { HttpApiBuilder, HttpServerResponse, OpenApi } from "@effect/platform"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import * as Yaml from "yaml"
import { AppConfig } from "../services/AppConfig.js"
import { Api } from "./Api.js"
import { sendBare, whole } from "./Envelope.js"

type JsonObject = { [k: string]: unknown }

/**
 * HttpApi documents its built-in decode error on every endpoint; we answer those with our
 * own 400 envelope, so the document says that instead.
 */
const dropBuiltInDecodeError = (node: unknown): unknown => {
  if (Array.isArray(node)) {
    return node
      .filter((item) => !(typeof item === "object" && item !== null && (item as JsonObject).$ref === "#/components/schemas/HttpApiDecodeError"))
      .map(dropBuiltInDecodeError)
  }
  if (typeof node !== "object" || node === null) return node
  const out: JsonObject = {}
  for (const [key, value] of Object.entries(node as JsonObject)) {
    if (key === "HttpApiDecodeError") continue
    const cleaned = dropBuiltInDecodeError(value)
    // A union left with a single member is that member.
    if ((key === "anyOf" || key === "oneOf") && Array.isArray(cleaned) && cleaned.length === 1) {
      Object.assign(out, cleaned[0] as JsonObject)
      continue
    }
    out[key] = cleaned
  }
  return out
}

export const openApiDocument = (): JsonObject => dropBuiltInDecodeError(OpenApi.fromApi(Api)) as JsonObject

export const SystemHttpLive = HttpApiBuilder.group(Api, "system", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const yaml = Yaml.stringify(openApiDocument(), { aliasDuplicateObjects: false })

    return handlers
      .handle("health", () =>
        sql`SELECT 1`.pipe(
          // Requests run uninterruptibly; the health probe alone may be cut off by its timeout.
          Effect.interruptible,
          Effect.timeoutFail({ duration: config.healthTimeout, onTimeout: () => new Error("timed out") }),
          Effect.as(sendBare({ status: "ok" })),
          Effect.catchAllCause(() =>
            Effect.succeed(sendBare({ status: "error", message: "The database is unavailable" }, 503))
          )
        ), whole)
      .handle("openapi", () => Effect.succeed(HttpServerResponse.text(yaml, { contentType: "text/yaml" })), whole)
  }))
