import * as HttpApi from "@effect/platform/HttpApi"
import * as OpenApi from "@effect/platform/OpenApi"
import { SESSION_COOKIE } from "../accounts/Credentials.js"
import { Api } from "./Api.js"
import { declareIdempotencyKey } from "../pipeline/IdempotencyDoc.js"
import { Authentication } from "./Security.js"

const REF = "#/components/schemas/"

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

const isObject = (node: unknown): node is JsonObject => typeof node === "object" && node !== null && !Array.isArray(node)

/** Every component schema a part of the document refers to, directly or through others. */
const referencedFrom = (root: unknown, schemas: JsonObject): Set<string> => {
  const used = new Set<string>()
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit)
    if (!isObject(node)) return
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref" && typeof value === "string" && value.startsWith(REF)) {
        const name = value.slice(REF.length)
        if (!used.has(name)) {
          used.add(name)
          visit(schemas[name])
        }
      } else visit(value)
    }
  }
  visit(root)
  return used
}

/**
 * Unknown body fields are ignored (README), so request bodies do not say
 * `additionalProperties: false`; responses keep it, they are exactly what we send. A
 * component that responses use too keeps it as well.
 */
const allowUnknownBodyFields = (doc: JsonObject): JsonObject => {
  const schemas = ((doc.components as JsonObject | undefined)?.schemas ?? {}) as JsonObject
  const operations = Object.values(doc.paths as JsonObject).flatMap((ops) => Object.values(ops as JsonObject)) as Array<JsonObject>
  const inResponses = referencedFrom(operations.map((op) => op.responses), schemas)
  const loosen = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(loosen)
    if (!isObject(node)) return node
    const out: JsonObject = {}
    for (const [key, value] of Object.entries(node)) {
      if (key === "additionalProperties" && value === false) continue
      out[key] = loosen(value)
    }
    return out
  }
  const bodies = operations.map((op) => op.requestBody)
  const loosened = { ...schemas }
  for (const name of referencedFrom(bodies, schemas)) if (!inResponses.has(name)) loosened[name] = loosen(schemas[name])
  const paths = Object.fromEntries(Object.entries(doc.paths as JsonObject).map(([path, ops]) => [
    path,
    Object.fromEntries(Object.entries(ops as JsonObject).map(([method, op]) => {
      const operation = op as JsonObject
      return [method, operation.requestBody === undefined ? operation : { ...operation, requestBody: loosen(operation.requestBody) }]
    }))
  ]))
  return { ...doc, paths, components: { ...(doc.components as JsonObject), schemas: loosened } }
}

/** Drops component schemas nothing refers to any more (the decode error's `Issue`, …). */
const dropUnreferencedSchemas = (doc: JsonObject): JsonObject => {
  const schemas = ((doc.components as JsonObject | undefined)?.schemas ?? {}) as JsonObject
  const used = referencedFrom(doc.paths, schemas)
  const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name)))
  return { ...doc, components: { ...(doc.components as JsonObject), schemas: kept } }
}

/** "METHOD /path/{param}" of every operation behind `Authentication`. */
const authenticated = (): Set<string> => {
  const out = new Set<string>()
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, middleware }) => {
      if ([...middleware].some((tag) => tag.key === Authentication.key)) out.add(`${endpoint.method} ${endpoint.path.replace(/:(\w+)/g, "{$1}")}`)
    }
  })
  return out
}

/**
 * Our authentication is a plain middleware, so HttpApi documents none; the document names
 * the Bearer token and the session cookie on every operation that needs one of them (the
 * proxy header is a deployment's choice, see the README).
 */
const declareAuthentication = (doc: JsonObject): JsonObject => {
  const needs = authenticated()
  // Minting a session checks the Bearer token in its handler, not through the middleware.
  const bearerOnly = new Set(["POST /api/auth/session"])
  // The calendar feed's only credential is the key in its URL, so calendar apps can subscribe.
  const calendarKey = new Set(["GET /api/calendar.ics"])
  const paths = Object.fromEntries(Object.entries(doc.paths as JsonObject).map(([path, ops]) => [
    path,
    Object.fromEntries(Object.entries(ops as JsonObject).map(([method, op]) => [
      method,
      needs.has(`${method.toUpperCase()} ${path}`)
        ? { ...(op as JsonObject), security: [{ bearer: [] }, { session: [] }] }
        : bearerOnly.has(`${method.toUpperCase()} ${path}`)
        ? { ...(op as JsonObject), security: [{ bearer: [] }] }
        : calendarKey.has(`${method.toUpperCase()} ${path}`)
        ? { ...(op as JsonObject), security: [{ calendar_key: [] }] }
        : op
    ]))
  ]))
  const securitySchemes = {
    bearer: { type: "http", scheme: "bearer", description: "An API token (64 hex characters)" },
    session: { type: "apiKey", in: "cookie", name: SESSION_COOKIE, description: "Minted by POST /api/auth/session" },
    calendar_key: { type: "apiKey", in: "query", name: "key", description: "Made by POST /api/calendar/key" }
  }
  return { ...doc, paths, components: { ...(doc.components as JsonObject), securitySchemes } }
}

/**
 * A `text/event-stream` answer described per event, as OpenAPI 3.2's `itemSchema` does and
 * as 3.1 tools read `schema` for that media type (one parsed event: `data`, `id`, `event`),
 * where HttpApi can only say "a string".
 */
const declareEventStream = (doc: JsonObject): JsonObject => {
  const events = ["paths", "/api/events", "get", "responses", "200", "content", "text/event-stream"].reduce<unknown>(
    (node, key) => (isObject(node) ? node[key] : undefined),
    doc
  )
  if (!isObject(events)) return doc
  const declared = isObject(events.schema) ? events.schema.description : undefined
  events.schema = {
    type: "object",
    description: declared ?? "One Server-Sent Event",
    required: ["data"],
    properties: {
      data: { type: "string", contentMediaType: "application/json", description: "The Change as JSON" },
      id: { type: "string", description: "The change's cursor (send it back as Last-Event-ID to resume)" },
      event: { type: "string", description: "Always the default, message" },
      retry: { type: "integer" }
    }
  }
  return doc
}

/** The served document: HttpApi's, adjusted to what the service really does. */
export const openApiDocument = (): JsonObject =>
  declareEventStream(declareIdempotencyKey(declareAuthentication(
    allowUnknownBodyFields(dropUnreferencedSchemas(dropBuiltInDecodeError(OpenApi.fromApi(Api)) as JsonObject))
  )))

