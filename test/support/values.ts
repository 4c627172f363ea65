import * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Data, Effect } from "effect"

/** A column of rows made up in a test: its name and SQL type, as `format_type` writes it. */
export type Column = readonly [name: string, type: string]

/**
 * Rows made up in a test as `(VALUES …) AS alias(n, columns…)`, so that SQL written for tables
 * can be evaluated on them: `SELECT <expression over alias> FROM ${valuesOf(…)} ORDER BY alias.n`.
 * Every value is a parameter cast to its column's type (a jsonb one sent as JSON text); `n` is
 * the row's index.
 */
export const valuesOf = (
  sql: SqlClient.SqlClient,
  alias: string,
  columns: ReadonlyArray<Column>,
  rows: ReadonlyArray<Readonly<Record<string, unknown>>>
): Fragment => {
  const row = (values: Readonly<Record<string, unknown>>, n: number) =>
    sql.join(", ", true)([
      sql`${n}::int`,
      ...columns.map(([name, type]) => {
        if (!(name in values)) throw new Error(`no value for column ${name}`)
        const value = values[name]
        const param = value !== null && type === "jsonb" ? JSON.stringify(value) : value
        return sql`${param as string | number | boolean | null}::${sql.literal(type)}`
      })
    ])
  const names = ["n", ...columns.map(([name]) => name)].join(", ")
  return sql`(VALUES ${sql.join(", ", false)(rows.map(row))}) AS ${sql.literal(alias)}(${sql.literal(names)})`
}

class RolledBack<A> extends Data.TaggedError("RolledBack")<{ readonly value: A }> {}

/**
 * Runs `self` in a transaction that is rolled back, and gives its result: what a statement
 * does to the database, seen and then undone.
 */
export const rolledBack = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(Effect.flatMap(self, (value) => Effect.fail(new RolledBack({ value })))).pipe(
      Effect.catchIf((e): e is RolledBack<A> => e instanceof RolledBack, (e) => Effect.succeed(e.value))
    ))
