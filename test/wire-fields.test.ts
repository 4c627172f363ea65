import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, ParseResult, Schema } from "effect"
import { Task } from "../src/tasks/Task.js"
import { isRecurring, isSnoozed } from "../src/tasks/TaskRules.js"
import { databaseKind } from "./support/database.js"
import { migratedDatabase } from "./support/migrated.js"
import { type RandomTaskRow, taskRows, wireTextColumn } from "./support/taskRows.js"
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
