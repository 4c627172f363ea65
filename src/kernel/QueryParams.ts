import { ParseResult, Schema } from "effect"

/** Ids are PostgreSQL `integer`s. */
export const MAX_INT = 2_147_483_647

/** "true"/"1" or "false"/"0", any case; documented as the boolean it stands for. */
export const BooleanParam = Schema.transformOrFail(Schema.String, Schema.Boolean, {
  strict: true,
  decode: (s, _, ast) => {
    const t = s.toLowerCase()
    if (t === "true" || t === "1") return ParseResult.succeed(true)
    if (t === "false" || t === "0") return ParseResult.succeed(false)
    return ParseResult.fail(new ParseResult.Type(ast, s, "must be true or false"))
  },
  encode: (b) => ParseResult.succeed(String(b))
}).annotations({ message: () => "must be true or false", jsonSchema: { type: "boolean" } })

/**
 * A decimal integer from `min` to `max` in a query string. The document shows the integer
 * and its bounds (not the digits pattern), so a generated client knows what is refused.
 */
export const IntParam = (min: number, max: number, description?: string) =>
  Schema.String.pipe(
    Schema.pattern(/^-?\d{1,10}$/, { message: () => "must be an integer" }),
    Schema.compose(Schema.NumberFromString),
    Schema.compose(Schema.Int.pipe(Schema.between(min, max, { message: () => `must be from ${min} to ${max}` })))
  ).annotations({
    jsonSchema: { type: "integer", minimum: min, maximum: max, ...(description === undefined ? {} : { description }) }
  })

/** Page size and position of every list that can grow without bound (CONTRACT §6). */
export const DEFAULT_LIMIT = 200
export const MAX_LIMIT = 1000

export const PageParams = {
  limit: Schema.optional(IntParam(1, MAX_LIMIT, `page size, default ${DEFAULT_LIMIT}`)),
  offset: Schema.optional(IntParam(0, MAX_INT, "rows to skip, default 0"))
} as const

export interface Page {
  readonly limit: number
  readonly offset: number
}

export const pageOf = (query: { readonly limit?: number | undefined; readonly offset?: number | undefined }): Page => ({
  limit: query.limit ?? DEFAULT_LIMIT,
  offset: query.offset ?? 0
})
