import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, FastCheck as fc, ParseResult, Schema } from "effect"
import { Task } from "../src/tasks/Task.js"
import { isRecurring, isSnoozed } from "../src/tasks/TaskRules.js"
import { databaseKind } from "./support/database.js"
import { migratedDatabase } from "./support/migrated.js"
import { type RandomTaskRow, taskRows, text, wireTextColumn } from "./support/taskRows.js"
import { valuesOf } from "./support/values.js"

/*
 * The task wire object has one list of fields: the `Task` schema (src/tasks/Task.ts), which
 * the OpenAPI document is built from. PostgreSQL renders it (steady_task_wire_of, stored as
 * `tasks.wire_text`), so this holds the renderer to the schema field by field: the same keys,
 * each once, in the schema's order (the wire is compared byte for byte with earlier renderings,
 * so the order is part of it), and on random rows values that the schema decodes and that are
 * the row's own, the derived fields those of their TypeScript twins. The rows go through the
 * generated column's own expression, as the database holds it.
 */

/**
 * jsonb's text without the space it writes after each ',' and ':' outside a string: a scanner
 * over the text, the oracle for steady_json_compact (a regular expression in SQL).
 */
const compactOracle = (spaced: string) => {
  let out = ""
  let inString = false
  for (let i = 0; i < spaced.length; i++) {
    const c = spaced[i]!
    out += c
    if (inString) {
      if (c === "\\") out += spaced[++i]!
      else if (c === '"') inString = false
    } else if (c === '"') inString = true
    else if ((c === "," || c === ":") && spaced[i + 1] === " ") i++
  }
  return out
}

/** JSON values with strings that hold quotes, backslashes, separators and their spaces. */
const jsonValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.oneof(text, fc.constantFrom(", ", ": ", "a\\", "\\\"", '", "', '": "')),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(text.filter((k) => k !== "__proto__"), tie("value"), { maxKeys: 4, noNullPrototype: true })
  )
})).value

/** Wire fields computed from other columns, with their TypeScript twins. */
const DERIVED: Readonly<Record<string, (row: RandomTaskRow) => boolean>> = { is_recurring: isRecurring, is_snoozed: isSnoozed }

const TASK_FIELDS = Object.keys(Task.fields)
const decodeTask = Schema.decodeUnknownEither(Task, { onExcessProperty: "error" })

/** The wire object a row should render as: each field of `Task`, in order. */
const expectedWire = (row: RandomTaskRow) =>
  Object.fromEntries(TASK_FIELDS.map((field) => [field, DERIVED[field]?.(row) ?? (row as Record<string, unknown>)[field]]))

describe(`the task wire rendered in SQL is the Task schema (${databaseKind()})`, () => {
  it.layer(migratedDatabase, { timeout: Duration.minutes(2) })((it) => {
    it.effect("tasks.wire_text passes each column to steady_task_wire_of's parameter of its name", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { columns } = yield* wireTextColumn
        const parameters = yield* sql<{ name: string }>`
          SELECT a.name FROM pg_proc p JOIN pg_namespace ns ON ns.oid = p.pronamespace,
            unnest(p.proargnames) WITH ORDINALITY AS a(name, i)
          WHERE ns.nspname = 'public' AND p.proname = 'steady_task_wire_of' ORDER BY a.i`
        expect(parameters.map((p) => p.name)).toEqual(columns.map(([column]) => `t_${column}`))
      }))

    it.effect("every field of Task is a column the renderer takes or a field derived by a twin, and nothing else", () =>
      Effect.gen(function*() {
        const { columns } = yield* wireTextColumn
        const taken = columns.map(([column]) => column)
        expect(TASK_FIELDS.filter((field) => !taken.includes(field) && DERIVED[field] === undefined)).toEqual([])
        expect(taken.filter((column) => !TASK_FIELDS.includes(column))).toEqual([])
      }))

    it.effect.prop(
      "steady_json_compact is jsonb's text without the space after each separator",
      [fc.array(jsonValue, { minLength: 1, maxLength: 20 })],
      ([values]) =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const rendered = yield* sql<{ spaced: string; compact: string }>`
            SELECT v.j::text AS spaced, steady_json_compact(v.j) AS compact
            FROM jsonb_array_elements(${JSON.stringify(values)}::jsonb) WITH ORDINALITY AS v(j, n) ORDER BY v.n`
          expect(rendered).toHaveLength(values.length)
          for (const { compact, spaced } of rendered) {
            expect(compact).toBe(compactOracle(spaced))
            expect(JSON.parse(compact)).toEqual(JSON.parse(spaced))
          }
        }),
      { fastCheck: { numRuns: 60 } }
    )

    it.effect.prop(
      "random rows render the Task schema's keys in its order, and values it decodes that are the row's",
      [taskRows()],
      ([rows]) =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const { columns, expression } = yield* wireTextColumn
          const rendered = yield* sql<{ n: number; text: string; keys: ReadonlyArray<string> }>`
            SELECT w.n, w.text, (SELECT array_agg(k ORDER BY i) FROM json_object_keys(w.text::json) WITH ORDINALITY AS x(k, i)) AS keys
            FROM (SELECT r.n, ${sql.literal(expression)} AS text FROM ${valuesOf(sql, "r", columns, rows)}) w
            ORDER BY w.n`
          expect(rendered.map((r) => r.n)).toEqual(rows.map((_, n) => n))
          for (const { n, text, keys } of rendered) {
            // json_object_keys over json (not jsonb) lists the text's keys as written, repeats included.
            expect(keys).toEqual(TASK_FIELDS)
            const decoded = decodeTask(JSON.parse(text))
            if (decoded._tag === "Left") {
              throw new Error(`not a Task: ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}\n${text}`)
            }
            expect(decoded.right).toEqual(expectedWire(rows[n]!))
          }
        }),
      { fastCheck: { numRuns: 40 } }
    )
  })
})
