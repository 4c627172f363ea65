import type * as SqlClient from "@effect/sql/SqlClient"
import * as Statement from "@effect/sql/Statement"

/**
 * SQL text and its parameters, for a statement built again on every write: the mutation
 * pipeline's commit statement and the parts it is made of (`src/pipeline/CommitStatement.ts`).
 *
 * Why not `sql\`…\``: each tagged template of `@effect/sql` builds a whole statement (an
 * Effect, with its acquirer and compiler, and our lean `commit`), and embedding one in another
 * copies every segment of the inner into the outer. A create's commit statement took about
 * thirty of them: ~60 KB allocated and ~50 µs of the service's CPU a write (docs/performance.md,
 * "The commit statement's text"). A `SqlText` keeps a template's strings and values as they
 * are and numbers the parameters once, when the whole statement is rendered (`renderText`).
 *
 * A value is a parameter (`$n`), unless it is a `SqlText` or an `@effect/sql` fragment, which is
 * spliced in: a fragment by its public segments, literal text and parameters only (what
 * `sql\`…\`` and `sql.literal` make). Anything else, in a fragment or as a value (a helper such
 * as `sql("name")`, an object), is a defect, thrown when rendered.
 */
export class SqlText {
  constructor(readonly strings: ReadonlyArray<string>, readonly values: ReadonlyArray<unknown>) {}
}

/** A template as `SqlText`: `sqlText\`x = ${value}\``. */
export const sqlText = (strings: TemplateStringsArray, ...values: ReadonlyArray<unknown>): SqlText => new SqlText(strings, values)

/** Text taken as it is (a table or column name of our own, never user input). */
export const rawText = (text: string): SqlText => new SqlText([text], [])

export const emptyText: SqlText = rawText("")

/** `parts` with `separator` between them. */
export const joinText = (separator: string, parts: ReadonlyArray<SqlText | Statement.Fragment>): SqlText =>
  parts.length === 0 ? emptyText : new SqlText(["", ...parts.slice(1).map(() => separator), ""], parts)

const fragmentText = (fragment: Statement.Fragment, out: Array<string>, params: Array<unknown>): void => {
  for (const segment of fragment.segments) {
    if (segment._tag === "Literal" && (segment.params === undefined || segment.params.length === 0)) {
      out.push(segment.value)
    } else if (segment._tag === "Parameter") {
      params.push(segment.value)
      out.push(`$${params.length}`)
    } else {
      throw new Error(`SqlText: a fragment's ${segment._tag} segment cannot be spliced`)
    }
  }
}

/**
 * A value sent as a parameter: a primitive, a `Date` or bytes. Any other object is a defect:
 * an `@effect/sql` helper (`sql("name")`, `sql.in(…)`) would otherwise go out as a parameter.
 */
const parameter = (value: unknown): unknown => {
  if (typeof value === "object" && value !== null && !(value instanceof Date) && !(value instanceof Uint8Array)) {
    throw new Error(`SqlText: ${(value as { _tag?: unknown })._tag ?? value.constructor?.name ?? "an object"} is not a parameter`)
  }
  return value
}

const textOf = (part: SqlText, out: Array<string>, params: Array<unknown>): void => {
  const { strings, values } = part
  out.push(strings[0]!)
  for (let i = 0; i < values.length; i++) {
    const value = values[i]
    if (value instanceof SqlText) {
      textOf(value, out, params)
    } else if (Statement.isFragment(value)) {
      fragmentText(value, out, params)
    } else {
      params.push(parameter(value))
      out.push(`$${params.length}`)
    }
    out.push(strings[i + 1]!)
  }
}

/**
 * The statement's text, its parameters numbered `$1`… in order, and their values. The pieces
 * are joined once, into a flat string: the prepared-statement cache looks every text up by
 * value, and a string grown by `+=` would be flattened for that first.
 */
export const renderText = (part: SqlText): readonly [string, Array<unknown>] => {
  const out: Array<string> = []
  const params: Array<unknown> = []
  textOf(part, out, params)
  return [out.join(""), params]
}

/** `part` as a statement of `sql` (run through its `unsafe`, which takes text and parameters as they are). */
export const statementOf = (sql: SqlClient.SqlClient, part: SqlText) => {
  const [text, params] = renderText(part)
  return sql.unsafe(text, params)
}
