import type * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { RowChange } from "./Changes.js"
import { anyShared, inSharedProject, projectNamedBy } from "../projects/ProjectsTable.js"
import { slotNamedBy } from "../slots/TimeSlotsTable.js"
import { taskById, taskOwnerNamedBy } from "../tasks/TasksTable.js"
import { emptyText, rawText, type SqlText, sqlText, statementOf } from "../sql/SqlText.js"

/** The NOTIFY channel that wakes the change streams of every instance on one PostgreSQL (see `ChangeWakeup`). */
export const CHANGES_CHANNEL = "steady_changes"

/** The objects the change feed reports, by the table that holds them. */
export const feedKinds: Readonly<Record<string, string>> = {
  tasks: "task",
  projects: "project",
  time_slots: "time_slot"
}

/** `Id`: see `RowChange`. */
interface Entry<Id = number> {
  readonly kind: string
  readonly id: Id
  op: "upsert" | "delete"
  owner: number | null
  readonly projects: Array<number>
  was_shared: boolean
}

const intOf = (value: unknown): number | null => (typeof value === "number" ? value : null)

/**
 * One feed entry per object a transaction touched, in the order it first touched them.
 * The full rows of inserts and deletes name the owner (the row may be gone by the time
 * the entry is written), and any project the object was in before or after: leaving a
 * shared project is news for everyone who could see it there.
 */
export const entriesOf = <Id = number>(changes: ReadonlyArray<RowChange<Id>>): ReadonlyArray<Entry<Id | number>> => {
  const byKey = new Map<string, Entry<Id | number>>()
  for (const change of changes) {
    const kind = feedKinds[change.table]
    if (kind === undefined) continue
    const key = `${kind}:${change.id}`
    let entry = byKey.get(key)
    if (entry === undefined) {
      entry = { kind, id: change.id, op: "upsert", owner: null, projects: [], was_shared: false }
      byKey.set(key, entry)
    }
    const rows = change.op === "insert" ? [change.after] : change.op === "delete" ? [change.before] : [change.before, change.after]
    for (const row of rows) {
      entry.owner ??= intOf(row.user_id) ?? intOf(row.owner_id)
      const project = intOf(row.project_id)
      if (project !== null && !entry.projects.includes(project)) entry.projects.push(project)
      if (row.shared === true) entry.was_shared = true
    }
    entry.op = change.op === "delete" ? "delete" : "upsert"
  }
  return [...byKey.values()]
}

/**
 * A task the same statement inserts (the mutation pipeline's `insertAtCommit`): its entry's
 * id is pending (`PendingId`), which `json` replaces, and `tasks` (id, user_id, project_id) has the row,
 * which a probe of `tasks` cannot see yet.
 */
export interface PendingTask<Id> {
  readonly json: (text: string) => SqlText
  readonly tasks: SqlText
  /** Whether `id` stands for the row the statement inserts. */
  readonly stands: (id: Id) => boolean
}

/**
 * The INSERT of the entries, for a data-modifying CTE of the caller's statement (the
 * mutation pipeline's commit statement, or `recordChanges`). Visibility is decided here, from
 * the rows as the transaction leaves them: the owner, and whether the object is (or was) in
 * a shared project.
 */
export const changesInsert = <Id = number>(
  sql: SqlClient.SqlClient,
  at: Date,
  entries: ReadonlyArray<Entry<Id>>,
  pending?: PendingTask<Id>
): SqlText => {
  const only = entries.length === 1 ? entries[0]! : undefined
  return only !== undefined && only.kind === "task" && only.op === "upsert"
    ? oneTaskInsert(sql, at, only, pending !== undefined && pending.stands(only.id) ? pending.tasks : undefined)
    : entriesInsert(sql, at, entries, pending)
}

/**
 * The entry of a single task written or inserted (most writes): the general statement's
 * shape for one row, without unpacking JSON or probing projects and time slots. `inserted`
 * holds the row when the same statement inserts it (its id is then pending).
 */
const oneTaskInsert = <Id>(sql: SqlClient.SqlClient, at: Date, entry: Entry<Id>, inserted: SqlText | undefined): SqlText => {
  // An array literal of integers: the same text on both databases' clients.
  const projects = `{${entry.projects.join(",")}}`
  const rows = inserted !== undefined ? sqlText`${inserted} x` : typeof entry.id === "number" ? taskById(sql, entry.id) : undefined
  if (rows === undefined) throw new Error("A pending task's feed entry needs the row its statement inserts")
  return sqlText`
    INSERT INTO changes (at, kind, object_id, op, user_id, shared)
    SELECT ${at.toISOString()}::timestamptz, 'task', ${inserted === undefined ? E_ID : X_ID}, 'upsert', COALESCE(x.user_id, ${entry.owner}::integer),
      ${inSharedProject(sql, "x.project_id")} OR ${anyShared(sql, sql`= ANY(${projects}::integer[])`)}
    FROM ${rows}
    WHERE COALESCE(x.user_id, ${entry.owner}::integer) IS NOT NULL`
}

const E_ID = rawText("e.id")
const X_ID = rawText("x.id")

const entriesInsert = <Id>(sql: SqlClient.SqlClient, at: Date, entries: ReadonlyArray<Entry<Id>>, pending?: PendingTask<Id>): SqlText =>
  // Each object is looked up by key (LATERAL … OFFSET 0 keeps it a per-entry index probe):
  // plain joins let a prepared statement's generic plan, made while the tables were small,
  // hash-join a sequential scan of every task for good.
  sqlText`
    INSERT INTO changes (at, kind, object_id, op, user_id, shared)
    SELECT ${at.toISOString()}::timestamptz, e.kind, e.id, e.op, COALESCE(t.user_id, p.owner_id, s.user_id, e.owner),
      CASE e.kind
        WHEN 'task' THEN t.in_shared
          OR ${anyShared(sql, sql`IN (SELECT jsonb_array_elements_text(e.projects)::integer)`)}
        WHEN 'project' THEN COALESCE(p.shared, false) OR e.was_shared
        ELSE false
      END
    FROM jsonb_to_recordset(${entriesJson(entries, pending)})
      AS e(kind text, id integer, op text, owner integer, projects jsonb, was_shared boolean, n integer)
    LEFT JOIN LATERAL (
      ${taskOwnerNamedBy(sql, "e.kind", "e.id")}
      ${
    pending === undefined ? emptyText : sqlText`UNION ALL
      SELECT x.user_id, ${inSharedProject(sql, "x.project_id")} FROM ${pending.tasks} x WHERE e.kind = 'task' AND x.id = e.id`
  }
      OFFSET 0) t ON true
    LEFT JOIN LATERAL ${projectNamedBy(sql, "x.owner_id, x.shared", "e.kind", "e.id")} p ON true
    LEFT JOIN LATERAL ${slotNamedBy(sql, "x.user_id", "e.kind", "e.id")} s ON true
    WHERE COALESCE(t.user_id, p.owner_id, s.user_id, e.owner) IS NOT NULL
    ORDER BY e.n`

const entriesJson = <Id>(entries: ReadonlyArray<Entry<Id>>, pending: PendingTask<Id> | undefined): SqlText => {
  const text = JSON.stringify(entries.map((e, n) => ({ ...e, n })))
  return pending === undefined ? sqlText`${text}::jsonb` : sqlText`(${pending.json(text)})::jsonb`
}

/**
 * Writes the entries inside the caller's transaction; the caller wakes the streams after
 * its commit (`ChangeWakeup.wake`).
 */
export const recordChanges = (sql: SqlClient.SqlClient, at: Date, entries: ReadonlyArray<Entry>) =>
  entries.length === 0 ? Effect.void : statementOf(sql, changesInsert(sql, at, entries)).pipe(Effect.asVoid)

/** A task changed by a writer outside the mutation pipeline (a background job). */
export const taskEntry = (id: number): Entry => ({ kind: "task", id, op: "upsert", owner: null, projects: [], was_shared: false })
