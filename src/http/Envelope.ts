import { Schema } from "effect"

/** The success envelope `{data}` (spec §1), declared so the OpenAPI document shows it. */
export const Data = <S extends Schema.Schema.Any>(schema: S) => Schema.Struct({ data: schema })

/**
 * Route option for every handler: a client that hangs up does not interrupt the request.
 * A write it started finishes (or rolls back) as a whole, and no query is cancelled, since a
 * cancel sent to PostgreSQL can land on the next statement of the pooled connection, which
 * may belong to another request.
 */
export const whole = { uninterruptible: true } as const
