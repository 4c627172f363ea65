import { Schema } from "effect"

/**
 * PostgreSQL `text` and `jsonb` cannot hold NUL, and a lone UTF-16 surrogate has no UTF-8
 * form (it would reach the database as U+FFFD, or fail there). Refusing both at the edge
 * keeps every string the service stores or queries with storable.
 */
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

export const UNSTORABLE_MESSAGE = "must not contain NUL (\\u0000) or unpaired surrogate characters"

export const isStorable = (text: string): boolean => !UNSTORABLE.test(text)

/** Any string the service stores or queries with: no NUL, no lone surrogate. */
export const StoredString = Schema.String.pipe(
  Schema.filter((s) => isStorable(s) || UNSTORABLE_MESSAGE, { jsonSchema: { pattern: "^[^\\u0000]*$" } })
)

/** Not empty once trimmed: "" and "  " are refused, so the document says minLength 1. */
export const nonBlank = (message = "must not be empty") => <A extends string, I, R>(self: Schema.Schema<A, I, R>) =>
  self.pipe(Schema.filter((s) => s.trim().length > 0 || message, { jsonSchema: { minLength: 1, pattern: "\\S" } }))
