import type * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Effect } from "effect"
import type { RowChange } from "../changes/Changes.js"
import type { Direction } from "./Undo.js"
import type { UserId } from "../kernel/Ids.js"

/**
 * Every statement on `undo_entries`: the entry the mutation pipeline's
 * commit statement writes, the reads and marks of undo and redo, and the purges. The
 * newest entry not undone is the next undo; the oldest undone one, the next redo.
 */

export interface UndoEntry {
  readonly id: number
  readonly action: string
  readonly description: string
  readonly changes: ReadonlyArray<RowChange>
  readonly tasks_affected: number
}

export interface NewEntry {
  readonly userId: UserId
  readonly action: string
  readonly description: string
  /** The changes as JSON text in SQL (it may hold stand-ins the commit statement replaces). */
  readonly changes: Fragment
  readonly tasksAffected: number
  readonly at: string
}

/**
 * The CTEs of the commit statement that record a new entry: a new action makes the undone
 * ones unreachable, so the redo stack is cleared first. `undo` returns the entry's id.
 */
export const entryWrites = (sql: SqlClient.SqlClient, entry: NewEntry): ReadonlyArray<Fragment> => [
  sql`purge AS (DELETE FROM undo_entries WHERE user_id = ${entry.userId} AND undone)`,
  sql`undo AS (
          INSERT INTO undo_entries (user_id, action, description, changes, tasks_affected, created_at)
          VALUES (${entry.userId}, ${entry.action}, ${entry.description}, (${entry.changes})::jsonb,
                  ${entry.tasksAffected}, ${entry.at}::timestamptz)
          RETURNING id)`
]

/** Undoable and redoable entries (those after `sessionStartId`, if given) and the newest id. */
export const entryCounts = (sql: SqlClient.SqlClient, userId: UserId, sessionStartId: number | undefined) => {
  const inSession = sessionStartId === undefined ? sql`` : sql`AND id > ${sessionStartId}`
  return sql<{ undoable: number; redoable: number; latest: number | null }>`
    SELECT (count(*) FILTER (WHERE NOT undone ${inSession}))::int AS undoable,
           (count(*) FILTER (WHERE undone ${inSession}))::int AS redoable,
           max(id) AS latest
    FROM undo_entries WHERE user_id = ${userId}`.pipe(Effect.map((rows) => rows[0]!), Effect.orDie)
}

/** Picks the entry the next undo (or redo) takes: the newest not undone, or the oldest undone. */
const nextEntry = (sql: SqlClient.SqlClient, userId: UserId, direction: Direction) =>
  sql`WHERE user_id = ${userId} AND ${direction === "undo" ? sql`NOT undone` : sql`undone`}
      ORDER BY id ${direction === "undo" ? sql`DESC` : sql`ASC`} LIMIT 1`

/** The ids of the tasks the next undo (or redo) touches, as a subquery. */
export const tasksOfNextEntry = (sql: SqlClient.SqlClient, userId: UserId, direction: Direction) =>
  sql`(SELECT (c->>'id')::int FROM undo_entries e, jsonb_array_elements(e.changes) c
       WHERE e.id = (SELECT id FROM undo_entries ${nextEntry(sql, userId, direction)}) AND c->>'table' = 'tasks')`

/**
 * The entry the next undo (or redo) takes, locked. The condition is in the locking statement
 * itself, not in a subquery: a concurrent undo that took the same entry first leaves it
 * failing the recheck, so it is not taken twice.
 */
export const lockNextEntry = (sql: SqlClient.SqlClient, userId: UserId, direction: Direction) =>
  sql<UndoEntry>`SELECT id, action, description, changes, tasks_affected FROM undo_entries
    ${nextEntry(sql, userId, direction)} FOR UPDATE`.pipe(Effect.map((rows) => rows[0]), Effect.orDie)

export const markUndone = (sql: SqlClient.SqlClient, id: number, undone: boolean) =>
  sql`UPDATE undo_entries SET undone = ${undone} WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

/** A user's newest entries, newest first. */
export const recentEntries = (sql: SqlClient.SqlClient, userId: UserId, limit: number) =>
  sql<{ id: number; action: string; description: string; created_at: string; undone: boolean }>`
    SELECT id, action, description, steady_iso(created_at) AS created_at, undone FROM undo_entries
    WHERE user_id = ${userId} ORDER BY id DESC LIMIT ${limit}`.pipe(Effect.orDie)

/** Drops entries created before `cutoff`; returns how many went. */
export const dropEntriesBefore = (sql: SqlClient.SqlClient, cutoff: string) =>
  sql<{ id: number }>`DELETE FROM undo_entries WHERE created_at < ${cutoff}::timestamptz RETURNING id`.pipe(
    Effect.map((rows) => rows.length)
  )

/** Users who recorded an entry after `afterId`, with their newest entry's id. */
export const writersAfter = (sql: SqlClient.SqlClient, afterId: number) =>
  sql<{ user_id: number; latest: number }>`
    SELECT user_id, max(id) AS latest FROM undo_entries WHERE id > ${afterId} GROUP BY user_id`

/** Drops up to `batch` of a user's entries beyond the newest `depth`; returns how many went. */
export const dropEntriesBeyond = (sql: SqlClient.SqlClient, userId: number, depth: number, batch: number) =>
  sql<{ id: number }>`
    DELETE FROM undo_entries WHERE id IN (
      SELECT id FROM undo_entries WHERE user_id = ${userId} AND id < (
        SELECT id FROM undo_entries WHERE user_id = ${userId} ORDER BY id DESC OFFSET ${depth - 1} LIMIT 1)
      ORDER BY id LIMIT ${batch})
    RETURNING id`.pipe(Effect.map((rows) => rows.length))
