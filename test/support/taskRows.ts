import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, FastCheck as fc } from "effect"
import type { Column } from "./values.js"

/*
 * Random `tasks` rows for the tests that evaluate SQL written for the table on made-up rows
 * (test/wire-fields.test.ts, test/sql-rules.test.ts). Values stay inside what the columns
 * hold (a text has no NUL, an enumerated column one of its values); timestamps have
 * milliseconds, as every timestamp the service writes, and are ISO text as `Rows.TaskRow`
 * carries them. They are drawn often from a few instants around `NOW`, so that two of them
 * coincide (a snooze back to the original due date) or sit on either side of `NOW`.
 */

export const NOW = new Date("2026-06-10T09:00:00.000Z")

/** Instants on either side of `NOW` and at it. */
export const nearNow = [-86_400_000, -1, 0, 1, 3_600_000].map((ms) => new Date(NOW.getTime() + ms).toISOString())

export const instant: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...nearNow), weight: 3 },
  {
    arbitrary: fc.date({ min: new Date("1970-01-01T00:00:00.000Z"), max: new Date("9999-12-31T23:59:59.999Z"), noInvalidDate: true })
      .map((d) => d.toISOString()),
    weight: 1
  }
)
/** Null half the time: most rules ask for an open task (no deleted_at, no archived_at). */
export const nullableInstant = fc.option(instant, { nil: null, freq: 2 })

/** Characters JSON escapes or that break naive escaping, and any other storable code point. */
const char = fc.oneof(
  fc.constantFrom("\"", "\\", "\n", "\t", "\u0001", "\u001f", "\u007f", "\u2028", "/", "é", "😀", "</"),
  fc.string({ unit: "binary", minLength: 1, maxLength: 1 }).filter((c) => c !== "\u0000")
)
export const text = fc.string({ unit: char, maxLength: 12 })
const key = text.filter((k) => k !== "__proto__")
const int4 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })
/** Small values most of the time: rules compare with 0 and 1. */
const count = fc.oneof(fc.integer({ min: 0, max: 3 }), int4)

const quotaPromptConfig = fc.record(
  {
    enabled: fc.boolean(),
    slot_id: fc.option(int4, { nil: null }),
    numbers: fc.dictionary(key, int4, { maxKeys: 3, noNullPrototype: true })
  },
  { requiredKeys: [] }
)

const quotaDayState = fc.record({
  date: fc.option(fc.constantFrom("2026-06-10", "2026-06-09"), { nil: null }),
  logged: int4,
  did: fc.array(text, { maxLength: 3 }),
  considered: fc.array(text, { maxLength: 3 }),
  did_applied: fc.dictionary(key, int4, { maxKeys: 3, noNullPrototype: true })
})

/** A generator for each column of `tasks` the tests put in rows; a test naming another column fails. */
export const columnValues = {
  id: int4,
  user_id: int4,
  project_id: int4,
  title: text,
  original_title: text,
  short_title: text,
  done: fc.boolean(),
  done_at: nullableInstant,
  priority: int4,
  due_at: nullableInstant,
  rrule: fc.option(fc.oneof(fc.constant("FREQ=DAILY"), text), { nil: null }),
  recurrence_mode: fc.constantFrom("from_due", "from_completion"),
  anchor_time: fc.option(fc.constantFrom("00:00", "07:30", "23:59"), { nil: null }),
  anchor_dow: int4,
  anchor_dom: int4,
  original_due_at: nullableInstant,
  target_at: nullableInstant,
  deadline_at: nullableInstant,
  horizon: fc.option(fc.constantFrom("day", "week", "month", "someday"), { nil: null }),
  horizon_set_at: nullableInstant,
  last_considered_at: nullableInstant,
  segment_deferred_at: nullableInstant,
  segment_targeted_at: nullableInstant,
  target_set_at: nullableInstant,
  target_auto: fc.boolean(),
  occurrence_at: nullableInstant,
  deadline_nag_off: fc.boolean(),
  auto_snooze_minutes: int4,
  deleted_at: nullableInstant,
  archived_at: nullableInstant,
  labels: fc.array(text, { maxLength: 4 }),
  notes: text,
  progress_target: count,
  progress_current: int4,
  progress_period_start: nullableInstant,
  progress_period_end: nullableInstant,
  quota_prompt_config: fc.option(quotaPromptConfig, { nil: null }),
  quota_day_state: quotaDayState,
  completion_count: int4,
  skip_count: int4,
  first_completed_at: nullableInstant,
  last_completed_at: nullableInstant,
  created_at: instant,
  updated_at: instant,
  is_tracked: fc.boolean(),
  is_reminder: fc.boolean(),
  snooze_count: count,
  enrichment_status: fc.option(fc.constantFrom("pending" as const, "done" as const, "failed" as const), { nil: null })
}

export type RandomTaskRow = {
  readonly [K in keyof typeof columnValues]: (typeof columnValues)[K] extends fc.Arbitrary<infer T> ? T : never
}

export const taskRow: fc.Arbitrary<RandomTaskRow> = fc.record(columnValues)

/** Batches of rows, so one statement evaluates several. */
export const taskRows = (maxLength = 8) => fc.array(taskRow, { minLength: 1, maxLength })

/**
 * The expression of the generated column `tasks.wire_text` as the database holds it, and the
 * columns it passes, with their types: evaluated over rows of those columns, it renders them
 * exactly as the table does.
 */
export const wireTextColumn = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [column] = yield* sql<{ expression: string }>`
    SELECT pg_get_expr(d.adbin, d.adrelid) AS expression
    FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
    WHERE d.adrelid = 'public.tasks'::regclass AND a.attname = 'wire_text' AND a.attgenerated = 's'`
  const args = /^steady_task_wire_of\((.*)\)$/s.exec(column!.expression)?.[1]?.split(", ") ?? []
  if (args.length === 0 || !args.every((arg) => /^\w+$/.test(arg))) {
    throw new Error(`tasks.wire_text is no longer steady_task_wire_of over plain columns: ${column!.expression}`)
  }
  const types = new Map((yield* sql<{ name: string; type: string }>`
    SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute
    WHERE attrelid = 'public.tasks'::regclass AND attnum > 0 AND NOT attisdropped`).map((c) => [c.name, c.type]))
  const columns: ReadonlyArray<Column> = args.map((arg) => [arg, types.get(arg)!])
  return { expression: column!.expression, columns }
})
