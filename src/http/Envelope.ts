import { HttpServerResponse } from "@effect/platform"
import { Schema } from "effect"

/** The success envelope `{data}` (spec §1), declared so the OpenAPI document shows it. */
export const Data = <S extends Schema.Schema.Any>(schema: S) => Schema.Struct({ data: schema })

/**
 * Sends `{data}` without running the success schema over it: the value was read from our
 * own database or built by our own code, and schema work on every row costs more than the
 * query (STYLE, performance notes). Contract tests run the schemas over real output.
 */
export const sendData = (data: unknown, status = 200) => HttpServerResponse.unsafeJson({ data }, { status })

/**
 * A body the database already rendered as JSON text, handed to the socket as is (a raw
 * body skips the encoding to bytes that a text body does first; measured ~10% on lists).
 */
export const sendJsonText = (body: string, status = 200) =>
  HttpServerResponse.raw(body, { status, contentType: "application/json" })

/** Bare bodies: bulk counts, health. */
export const sendBare = (body: unknown, status = 200) => HttpServerResponse.unsafeJson(body, { status })

/**
 * Route option for every handler: a client that hangs up does not interrupt the request.
 * A write it started finishes (or rolls back) as a whole, and no query is cancelled, since a
 * cancel sent to PostgreSQL can land on the next statement of the pooled connection, which
 * may belong to another request.
 */
export const whole = { uninterruptible: true } as const
