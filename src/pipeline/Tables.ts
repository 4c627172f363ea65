import type { JsonValue, Row } from "../kernel/Json.js"
import type { CompletionRow, ProjectRow, QuotaPeriodRow, TaskRow, TimeSlotRow } from "./Rows.js"
import type { Task } from "../tasks/Task.js"

/**
 * Column kinds of the tables the mutation pipeline writes. The kind decides how a value
 * is sent (`$n::kind`) and how a read value is normalised for the undo log, so a field's
 * before and after compare equal exactly when the database holds the same value.
 */
export type ColumnKind = "int" | "text" | "bool" | "ts" | "json"

/** The kinds a column of TypeScript type `T` may have: a table's spec must agree with its row type. */
type KindFor<T> = [JsonValue] extends [T] ? ColumnKind
  : [T] extends [number | null] ? "int"
  : [T] extends [boolean | null] ? "bool"
  : [T] extends [string | null] ? "text" | "ts"
  : "json"

/** Every row has an integer id; the rest is the table's. A type, not an interface: a row reads as a record of its columns. */
export type TableRow = { readonly id: number }

/** A row whose columns are known only at run time (the undo log replays rows by table name). */
export type AnyRow = TableRow & Row

export type ColumnsOf<R> = { readonly [K in Exclude<keyof R, "id">]: KindFor<R[K]> }

/**
 * A table the pipeline writes: `R` its row, `W` its wire shape (what `wire` renders, the
 * encoded type of the API's schema for it), for writes that answer with the row.
 */
export interface TableSpec<R extends TableRow = AnyRow, W = unknown> {
  readonly name: string
  readonly columns: ColumnsOf<R>
  /** Set on every update, and left out of undo diffs. */
  readonly touch?: string
  /** The SQL function that renders a row as its wire JSON (jsonb), for writes that answer with it. */
  readonly wire?: string
  /**
   * The column holding that rendering as compact JSON text, stored with the row (generated), to
   * answer with and to splice into frozen webhook bodies. Read as the column itself: a function
   * over the row would render or re-parse ~1.3 KB per write.
   */
  readonly wireText?: string
  /** Columns PostgreSQL computes itself (generated): never written, and left out of the rows read. */
  readonly generated?: ReadonlyArray<string>
  /**
   * Columns the table's BEFORE UPDATE triggers may set besides what an UPDATE writes. A kept
   * row (`UpdateOptions.keep`) is the row read with the UPDATE's writes and these, as the
   * statement returns them; every other column is as read. `test/recent-rows.test.ts` holds
   * this list to the triggers the database has.
   */
  readonly triggerSet?: ReadonlyArray<string>
  /** Never set: carries `W` for the type checker. */
  readonly wireType?: W
}

/** A column's kind by name, for code that handles any table's rows. */
export const kindOf = (table: TableSpec<TableRow>, column: string): ColumnKind | undefined =>
  (table.columns as Readonly<Record<string, ColumnKind>>)[column]

/** A column's value in a row of any table, as the undo log holds it. */
export const fieldOf = (row: TableRow, column: string): JsonValue => {
  const columns: Readonly<Record<string, unknown>> = row
  return normalizeValue(undefined, columns[column])
}

/**
 * A row of `table` under `alias` as jsonb, without its generated columns: the pipeline's
 * rows hold what can be written (the undo log writes them back), not the task's stored wire text.
 */
export const rowJsonSql = (table: TableSpec<TableRow>, alias: string) =>
  [`to_jsonb(${alias})`, ...(table.generated ?? []).map((column) => `'${column}'`)].join(" - ")

const taskColumns: ColumnsOf<TaskRow> = {
  user_id: "int",
  project_id: "int",
  title: "text",
  original_title: "text",
  short_title: "text",
  done: "bool",
  done_at: "ts",
  priority: "int",
  due_at: "ts",
  rrule: "text",
  recurrence_mode: "text",
  anchor_time: "text",
  anchor_dow: "int",
  anchor_dom: "int",
  original_due_at: "ts",
  previous_due_at: "ts",
  target_at: "ts",
  deadline_at: "ts",
  horizon: "text",
  horizon_set_at: "ts",
  last_considered_at: "ts",
  segment_deferred_at: "ts",
  segment_targeted_at: "ts",
  target_set_at: "ts",
  target_auto: "bool",
  occurrence_at: "ts",
  deadline_nag_off: "bool",
  auto_snooze_minutes: "int",
  deleted_at: "ts",
  archived_at: "ts",
  labels: "json",
  notes: "text",
  is_reminder: "bool",
  is_tracked: "bool",
  progress_target: "int",
  progress_current: "int",
  progress_period_start: "ts",
  progress_period_end: "ts",
  series_start_at: "ts",
  quota_prompt_config: "json",
  quota_day_state: "json",
  completion_count: "int",
  skip_count: "int",
  snooze_count: "int",
  first_completed_at: "ts",
  last_completed_at: "ts",
  enrichment_requested_at: "ts",
  enrichment_status: "text",
  enrichment_baseline: "json",
  roll_stopped_at: "ts",
  created_at: "ts",
  updated_at: "ts"
}

export type TaskColumn = keyof typeof taskColumns

export const TasksTable: TableSpec<TaskRow, Task> = {
  name: "tasks",
  columns: taskColumns,
  touch: "updated_at",
  wire: "steady_task_json",
  wireText: "wire_text",
  // Migration 0022: the task's wire JSON, stored with the row.
  generated: ["wire_text"],
  // tasks_keep_enrichment_baseline (0023) and tasks_resume_reminder_roll (0031).
  triggerSet: ["enrichment_baseline", "roll_stopped_at"]
}

/** A task row `t` as jsonb, as the pipeline reads it (`rowJsonSql`). */
export const taskRowJson = rowJsonSql(TasksTable, "t")

export const ProjectsTable: TableSpec<ProjectRow> = {
  name: "projects",
  columns: {
    owner_id: "int",
    name: "text",
    shared: "bool",
    sort_order: "int",
    color: "text",
    description: "text",
    is_inbox: "bool",
    created_at: "ts",
    updated_at: "ts"
  },
  touch: "updated_at"
}

export const TimeSlotsTable: TableSpec<TimeSlotRow> = {
  name: "time_slots",
  columns: { user_id: "int", label: "text", start_time: "text", sort_order: "int", created_at: "ts" }
}

export const CompletionsTable: TableSpec<CompletionRow> = {
  name: "completions",
  columns: {
    task_id: "int",
    user_id: "int",
    completed_at: "ts",
    due_at_was: "ts",
    due_at_next: "ts",
    task_title: "text",
    project_id: "int",
    is_reminder: "bool",
    is_tracked: "bool",
    progress_target: "int"
  }
}

export const QuotaPeriodsTable: TableSpec<QuotaPeriodRow> = {
  name: "quota_periods",
  columns: {
    task_id: "int",
    user_id: "int",
    period_start: "ts",
    period_end: "ts",
    count: "int",
    target: "int",
    met: "bool",
    closed_at: "ts",
    closed_early: "bool"
  }
}

/** The tables whose rows the undo log replays, by name: their rows' columns are known at run time only. */
export const tablesByName: Readonly<Record<string, TableSpec<AnyRow>>> = {
  tasks: TasksTable,
  projects: ProjectsTable,
  time_slots: TimeSlotsTable,
  completions: CompletionsTable,
  quota_periods: QuotaPeriodsTable
}


/** The value as the undo log keeps it: timestamps as ISO strings with milliseconds. */
export const normalizeValue = (kind: ColumnKind | undefined, value: unknown): JsonValue => {
  if (value === null || value === undefined) return null
  if (kind === "ts") return (value instanceof Date ? value : new Date(String(value))).toISOString()
  if (value instanceof Date) return value.toISOString()
  return value as JsonValue
}

/** A row as the undo log keeps it: each value normalised by its column's kind. */
export const normalizeRow = (table: TableSpec<TableRow>, raw: Readonly<Record<string, unknown>>): Row => {
  const out: Row = {}
  for (const [key, value] of Object.entries(raw)) out[key] = normalizeValue(kindOf(table, key), value)
  return out
}

/** Whether a value fits a column of this kind (null fits any: the row types say which columns may hold it). */
const fitsKind = (kind: ColumnKind, value: JsonValue): boolean => {
  if (value === null) return true
  switch (kind) {
    case "int":
      return Number.isSafeInteger(value)
    case "text":
    case "ts":
      return typeof value === "string"
    case "bool":
      return typeof value === "boolean"
    case "json":
      return true
  }
}

/** Whether a normalised row holds an integer id and a value of its kind in every column of `table`. */
const isRowOf = <R extends TableRow>(table: TableSpec<R>, row: Row): row is Row & R =>
  Number.isSafeInteger(row.id) &&
  Object.entries<ColumnKind>(table.columns).every(([column, kind]) => column in row && fitsKind(kind, row[column]!))

/**
 * A whole row as PostgreSQL gives it (`to_jsonb`, see `rowJsonSql`), decoded into the
 * table's row type (`row`) and as the undo log keeps it (`json`, the same object). jsonb
 * already carries numbers, booleans and JSON as such; only timestamps need decoding (to
 * `toISOString` text); each column is then checked against its kind. That is the row's
 * decoder, at a fraction of a schema decode's cost on every locked row (a `TaskRow` decode
 * costs ~70 µs): `TableSpec.columns` is checked against the row type when compiled, and
 * `test/wire-schema.test.ts` holds the decoder to the row schemas (`pipeline/Rows.ts`) over
 * real rows of both databases.
 */
export const decodedRow = <R extends TableRow>(table: TableSpec<R>, raw: Readonly<Record<string, unknown>>) => {
  const json = fitted(table, normalizeRow(table, raw))
  return { row: json, json }
}

/** `json` as a row of `table`, or a defect naming the row that does not fit. */
const fitted = <R extends TableRow>(table: TableSpec<R>, json: Row): Row & R => {
  if (!isRowOf(table, json)) throw new Error(`A ${table.name} row does not fit its columns: ${JSON.stringify(json)}`)
  return json
}

/**
 * A decoded `row` with some of its columns as PostgreSQL gives them (`raw`, jsonb as
 * `decodedRow` takes it) decoded over it: the row an UPDATE left, from the columns it returned.
 */
export const updatedRow = <R extends TableRow>(table: TableSpec<R>, row: R, raw: Readonly<Record<string, unknown>>): R =>
  fitted(table, { ...row, ...normalizeRow(table, raw) })

/** `decodedRow`'s typed row. */
export const decodeRow = <R extends TableRow>(table: TableSpec<R>, raw: Readonly<Record<string, unknown>>): R =>
  decodedRow(table, raw).row

/** The SQL parameter for a value: JSON as text, timestamps as ISO text, the rest as is. */
export const sqlParam = (kind: ColumnKind, value: JsonValue): unknown => {
  if (value === null) return null
  if (kind === "json") return JSON.stringify(value)
  return value
}

export const sqlCast: Record<ColumnKind, string> = {
  int: "integer",
  text: "text",
  bool: "boolean",
  ts: "timestamptz",
  json: "jsonb"
}
