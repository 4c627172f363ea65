import * as FileSystem from "@effect/platform/FileSystem"
import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApiError from "@effect/platform/HttpApiError"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Cause, Effect, Layer, Option, ParseResult } from "effect"
import { type AppError, envelopeOf, isAppError, statusOf } from "../kernel/Errors.js"
import { databaseUnavailable, isTransactionConflict } from "../sql/DatabaseFailures.js"
import { allowedMethods, refusedOnLiteralPath } from "./Allowed.js"
import { guardBody, isBodyTooLarge, MAX_JSON_DEPTH, mayCarryBody } from "./BodyGuard.js"
import { makeIdempotentWrites } from "./IdempotentWrites.js"
import { withRequestId } from "./RequestId.js"

export const MAX_BODY_BYTES = 1024 * 1024

const envelope = (status: number, code: string, error: string, details: Record<string, unknown> = {}) =>
  HttpServerResponse.unsafeJson({ error, code, details }, { status })

export const appErrorResponse = (error: AppError) => {
  const response = HttpServerResponse.unsafeJson(envelopeOf(error), { status: statusOf(error) })
  // RFC 6585 §4: a 429 may say how long to wait; clients (and proxies) read the header.
  return error._tag === "TooManyRequests"
    ? HttpServerResponse.setHeader(response, "retry-after", String(error.retryAfterSeconds))
    : response
}

const pathKey = (path: ReadonlyArray<PropertyKey>) => path.map(String).join(".")

/** Field path → message, from the issues HttpApi collected while decoding. */
const decodeDetails = (error: HttpApiError.HttpApiDecodeError): Record<string, string> => {
  const details: Record<string, string> = {}
  // An optional/nullable field also reports "Expected undefined" (or null) for its other
  // union members; that is noise when a real reason sits at this path or below it.
  const isNoise = (message: string) => /^Expected (undefined|null), actual/.test(message)
  const reasons = error.issues.filter((issue) => !isNoise(issue.message)).map((issue) => pathKey(issue.path) || "body")
  for (const issue of error.issues) {
    const key = pathKey(issue.path) || "body"
    if (isNoise(issue.message) && reasons.some((other) => other === key || other.startsWith(`${key}.`))) continue
    details[key] ??= issue.message
  }
  return details
}

const parseErrorDetails = (error: ParseResult.ParseError): Record<string, string> => {
  const details: Record<string, string> = {}
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    details[pathKey(issue.path) || "body"] ??= issue.message
  }
  return details
}

/** Seconds a client is asked to wait before retrying when the database is unavailable. */
export const RETRY_AFTER_SECONDS = 5

const unavailableResponse = (message: string, retryAfterSeconds: number) =>
  envelope(503, "SERVICE_UNAVAILABLE", message).pipe(HttpServerResponse.setHeader("retry-after", String(retryAfterSeconds)))

const tooLarge = () => envelope(413, "PAYLOAD_TOO_LARGE", `The request body is larger than ${MAX_BODY_BYTES} bytes`)

/** A path the API serves with other methods is a 405 naming them (RFC 9110 §15.5.6). */
const notFoundOrNotAllowed = (request: HttpServerRequest.HttpServerRequest) => {
  const allowed = allowedMethods(request.url)
  if (allowed.length === 0) return envelope(404, "NOT_FOUND", "No such endpoint")
  return notAllowed(request, allowed)
}

const notAllowed = (request: HttpServerRequest.HttpServerRequest, allowed: ReadonlyArray<string>) =>
  envelope(405, "METHOD_NOT_ALLOWED", `${request.method} is not served here; use ${allowed.join(", ")}`).pipe(
    HttpServerResponse.setHeader("allow", allowed.join(", "))
  )

/**
 * Turns whatever a request failed with into the `{error, code, details}` envelope. Made once
 * (see docs/architecture.md, "Generators on the request path").
 */
export const errorResponse = Effect.fnUntraced(function*(cause: Cause.Cause<unknown>) {
  const failure = Option.orElse(Cause.failureOption(cause), () => Cause.dieOption(cause))
  if (Option.isNone(failure)) {
    return envelope(503, "SERVICE_UNAVAILABLE", "The request was interrupted")
  }
  const error = failure.value
  if (isAppError(error)) return appErrorResponse(error)
  if (error instanceof HttpApiError.HttpApiDecodeError) {
    return envelope(400, "VALIDATION_ERROR", "Invalid request", decodeDetails(error))
  }
  if (ParseResult.isParseError(error)) {
    return envelope(400, "VALIDATION_ERROR", "Invalid request", parseErrorDetails(error))
  }
  if (HttpServerError.isServerError(error)) {
    if (error._tag === "RouteNotFound") return notFoundOrNotAllowed(error.request)
    if (error._tag === "RequestError") {
      if (isBodyTooLarge(error)) return tooLarge()
      return envelope(400, "VALIDATION_ERROR", "The request body is not valid JSON", { body: "malformed JSON" })
    }
  }
  const unavailable = databaseUnavailable(cause)
  if (Option.isSome(unavailable)) {
    if (!unavailable.value.logged) yield* Effect.logWarning(`Answered 503: ${unavailable.value.reason}`)
    return unavailableResponse("The database is unavailable; try again shortly", RETRY_AFTER_SECONDS)
  }
  if (isTransactionConflict(cause)) {
    // Still in conflict after running again (`TransactionConflicts`): nothing was written.
    yield* Effect.logWarning("Answered 503: the write kept meeting conflicting writes (deadlock or serialization failure)")
    return unavailableResponse("Concurrent writes kept this one from finishing; nothing was changed, try again", 1)
  }
  yield* Effect.logError("Unexpected failure while handling a request", cause)
  return envelope(500, "INTERNAL_ERROR", "Internal server error")
})

const MAX_BODY_SIZE = FileSystem.Size(MAX_BODY_BYTES)

/**
 * The body limit in the context a server runs its requests in (`HttpServerLive`), so that
 * `withErrorEnvelope` need not set it around each one.
 */
export const BodyLimitLive = Layer.succeed(HttpIncomingMessage.MaxBodySize, Option.some(MAX_BODY_SIZE))

/**
 * Runs around the router, before HttpApi's own error encoder, so decode errors, unknown
 * routes, malformed JSON and oversized bodies all leave in our envelope, and nothing
 * unexpected leaves as a stack trace.
 *
 * Only a request with a body gets its reader replaced (`guardBody`), and the platform's body
 * limit is set around the request only when the server did not already set it for every
 * request (`HttpServerLive` does; a host that mounts the API may not): each costs a request
 * a few KB of allocation (docs/performance.md, "Allocation per request").
 */
export const withErrorEnvelope = Effect.fnUntraced(function*<E, R>(app: HttpApp.Default<E, R>) {
  const request = yield* HttpServerRequest.HttpServerRequest
  const length = Number(request.headers["content-length"] ?? "0")
  if (Number.isFinite(length) && length > MAX_BODY_BYTES) return tooLarge()
  const refused = refusedOnLiteralPath(request.method, request.url)
  if (refused !== undefined) return notAllowed(request, refused)
  const guarded = mayCarryBody(request) ? Effect.zipRight(guardBody(request, MAX_BODY_BYTES, MAX_JSON_DEPTH), app) : app
  const limit = yield* HttpIncomingMessage.MaxBodySize
  const limited = Option.isSome(limit) && limit.value <= MAX_BODY_SIZE
    ? guarded
    : HttpIncomingMessage.withMaxBodySize(guarded, Option.some(MAX_BODY_SIZE))
  return yield* Effect.catchAllCause(limited, errorResponse)
})

/**
 * The envelope as an HttpApi-level middleware, for the server this package runs itself,
 * inside the request id so the 500 log line names the request. Keyed writes (Idempotency-Key)
 * are handled inside it, after the body limits are in place.
 */
export const ErrorEnvelopeLive = HttpApiBuilder.middleware(
  Effect.map(makeIdempotentWrites, (idempotent) => (app) => withRequestId(withErrorEnvelope(idempotent(app))))
)
