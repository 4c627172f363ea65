import { Schema } from "effect"

/**
 * Column schemas for rows as the two drivers return them, so a repository decodes what it
 * reads the same way on PostgreSQL (`pg`) and on the embedded database (PGlite):
 *
 * - `integer`, `boolean`, `float8`, `text`, `uuid`, `json`/`jsonb` and `integer[]` come back
 *   alike (numbers, booleans, strings, parsed JSON, arrays);
 * - `bigint` (`bigserial` ids, `count(*)`, `sum`/`max` of them) comes back as decimal text from
 *   `pg` and as a number from PGlite: `Int8`;
 * - `numeric` comes back as text from both, `timestamptz` and `date` as `Date`s from both:
 *   statements cast the first to `float8` or `int` and render the others as text
 *   (`steady_iso(…)`), so no repository decodes either.
 */

const IntFromText = Schema.compose(Schema.NumberFromString, Schema.Int)

/** A `bigint` column: a safe integer, given as a number or as its decimal text. */
export const Int8 = Schema.Union(Schema.Int, IntFromText).pipe(
  Schema.filter((n) => Number.isSafeInteger(n) || "is beyond 2^53"),
  Schema.annotations({ identifier: "Int8" })
)

/** A timestamp rendered by `steady_iso(…)`: ISO-8601 in UTC with milliseconds. */
export const IsoText = Schema.String

/** `{ n }`: a count or another single integer a statement computes (`count(*)::int AS n`). */
export const CountRow = Schema.Struct({ n: Schema.Int })

/** `{ id }` of an `integer` key, as a `RETURNING id` or an existence probe reads it. */
export const IdRow = Schema.Struct({ id: Schema.Int })

/**
 * `{ body }`: JSON text a statement rendered for a `…Json` read, handed on as it is: decoded
 * as a string, never parsed.
 */
export const BodyRow = Schema.Struct({ body: Schema.String })

/** The one `{ body }` row of a statement that renders a whole answer as JSON text. */
export const decodeOneBody = Schema.decodeUnknown(Schema.Tuple(BodyRow))

/**
 * JSON text as `JSON.stringify` writes it, same keys in the same order: the text of
 * PostgreSQL's `json_build_object` and of `jsonb` puts spaces around every `:` and after
 * every `,`, which the wire does not carry (the task pages splice compact stored texts instead).
 */
export const compactJson = (text: string): string => JSON.stringify(JSON.parse(text))

/**
 * A whole row (or a wire object) the statement built as one JSON object, only checked to be
 * an object here: the pipeline's `decodeRow` then checks it column by column (Tables.ts), at
 * a fraction of a row schema's cost.
 */
export const RowObject = Schema.declare(
  (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u),
  { identifier: "RowObject" }
)

/** `{ row }`: a statement's `… AS row` column, one row object. */
export const RowColumn = Schema.Struct({ row: RowObject })

/** `{ row }` rows, each checked to be an object (`decodeRow` checks the columns). */
export const decodeRowColumns = Schema.decodeUnknown(Schema.Array(RowColumn))
