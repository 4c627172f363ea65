import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { Schema } from "effect"

/** `details` is always an object; for validation errors it maps field paths to messages. */
export const ErrorDetails = Schema.Record({ key: Schema.String, value: Schema.Unknown })

export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", {
  message: Schema.String,
  details: ErrorDetails
}) {
  static readonly status = 400
  static readonly code = "VALIDATION_ERROR"
  /** A 400 about one field. */
  static field(field: string, message: string) {
    return new ValidationError({ message, details: { [field]: message } })
  }
  static of(message: string, details: Record<string, unknown> = {}) {
    return new ValidationError({ message, details })
  }
}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  message: Schema.String
}) {
  static readonly status = 401
  static readonly code = "UNAUTHORIZED"
}

export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", {
  message: Schema.String
}) {
  static readonly status = 403
  static readonly code = "FORBIDDEN"
}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  message: Schema.String
}) {
  static readonly status = 404
  static readonly code = "NOT_FOUND"
  static of(what: string) {
    return new NotFound({ message: `${what} not found` })
  }
}

export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", {
  message: Schema.String
}) {
  static readonly status = 409
  static readonly code = "CONFLICT"
}

/**
 * A per-user rate limit (the AI endpoints that reach the model on demand): the client waits
 * `retryAfterSeconds`, sent as `Retry-After` and as `details.retry_after`.
 */
export class TooManyRequests extends Schema.TaggedError<TooManyRequests>()("TooManyRequests", {
  message: Schema.String,
  retryAfterSeconds: Schema.Int
}) {
  static readonly status = 429
  static readonly code = "TOO_MANY_REQUESTS"
}

export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", {
  message: Schema.String,
  /** Why, when there is more to say (an AI provider's failure). */
  details: Schema.optional(ErrorDetails)
}) {
  static readonly status = 503
  static readonly code = "SERVICE_UNAVAILABLE"
}

/** Every error a user can be answered with, keyed for the wire. */
export type AppError =
  | ValidationError
  | Unauthorized
  | Forbidden
  | NotFound
  | Conflict
  | TooManyRequests
  | ServiceUnavailable

const appErrorClasses = {
  ValidationError,
  Unauthorized,
  Forbidden,
  NotFound,
  Conflict,
  TooManyRequests,
  ServiceUnavailable
} as const

export const isAppError = (u: unknown): u is AppError =>
  typeof u === "object" && u !== null && "_tag" in u &&
  typeof (u as { _tag: unknown })._tag === "string" &&
  (u as { _tag: string })._tag in appErrorClasses &&
  u instanceof appErrorClasses[(u as { _tag: keyof typeof appErrorClasses })._tag]

export const statusOf = (error: AppError): number => appErrorClasses[error._tag].status
export const codeOf = (error: AppError): string => appErrorClasses[error._tag].code

/** The `{error, code, details}` body every error response carries. */
export const ErrorEnvelope = Schema.Struct({
  error: Schema.String,
  code: Schema.String,
  details: ErrorDetails
})
export type ErrorEnvelope = typeof ErrorEnvelope.Type

const detailsOf = (error: AppError): Record<string, unknown> => {
  switch (error._tag) {
    case "ValidationError":
      return error.details
    case "ServiceUnavailable":
      return error.details ?? {}
    case "TooManyRequests":
      return { retry_after: error.retryAfterSeconds }
    default:
      return {}
  }
}

export const envelopeOf = (error: AppError): ErrorEnvelope => ({
  error: error.message,
  code: codeOf(error),
  details: detailsOf(error)
})

/**
 * The wire schema of an error: the envelope on the wire, the tagged error at run time,
 * carrying the status for HttpApi and the OpenAPI document.
 */
const wire = <Self extends AppError, I>(
  errorSchema: Schema.Schema<Self, I>,
  status: number,
  code: string,
  make: (envelope: ErrorEnvelope) => Self
) =>
  Schema.transform(ErrorEnvelope, Schema.typeSchema(errorSchema), {
    strict: true,
    decode: (envelope) => make(envelope),
    encode: (error) => envelopeOf(error)
  }).annotations(HttpApiSchema.annotations({ status, description: code }))

export const ValidationErrorWire = wire(ValidationError, 400, "VALIDATION_ERROR", (e) =>
  new ValidationError({ message: e.error, details: e.details }))
export const UnauthorizedWire = wire(Unauthorized, 401, "UNAUTHORIZED", (e) => new Unauthorized({ message: e.error }))
export const ForbiddenWire = wire(Forbidden, 403, "FORBIDDEN", (e) => new Forbidden({ message: e.error }))
export const NotFoundWire = wire(NotFound, 404, "NOT_FOUND", (e) => new NotFound({ message: e.error }))
export const ConflictWire = wire(Conflict, 409, "CONFLICT", (e) => new Conflict({ message: e.error }))
/**
 * Statuses answered around the handlers (the body limit, the header limit, an unexpected
 * failure): never a handler's error value, declared so every operation lists them.
 */
const answeredAround = (identifier: string, status: number, code: string) =>
  ErrorEnvelope.annotations({ identifier, ...HttpApiSchema.annotations({ status, description: code }) })

export const PayloadTooLargeWire = answeredAround("PayloadTooLarge", 413, "PAYLOAD_TOO_LARGE")
export const HeadersTooLargeWire = answeredAround("HeadersTooLarge", 431, "HEADERS_TOO_LARGE")
export const InternalErrorWire = answeredAround("InternalError", 500, "INTERNAL_ERROR")

export const TooManyRequestsWire = wire(TooManyRequests, 429, "TOO_MANY_REQUESTS", (e) =>
  new TooManyRequests({
    message: e.error,
    retryAfterSeconds: typeof e.details.retry_after === "number" && Number.isInteger(e.details.retry_after) ? e.details.retry_after : 1
  }))

export const ServiceUnavailableWire = wire(ServiceUnavailable, 503, "SERVICE_UNAVAILABLE", (e) =>
  new ServiceUnavailable({ message: e.error, details: e.details }))
