import type * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Effect, Option, Schema } from "effect"
import type { RowChange } from "../changes/Changes.js"
import { IdRow, IsoText } from "../kernel/Columns.js"
import { JsonRow } from "../kernel/Json.js"
import type { Direction } from "./Undo.js"
import { UserId } from "../kernel/Ids.js"
import { type SqlText, sqlText } from "../sql/SqlText.js"

/**
 * Every statement on `undo_entries`: the entry the mutation pipeline's
 * commit statement writes, the reads and marks of undo and redo, and the purges. The
 * newest entry not undone is the next undo; the oldest undone one, the next redo.
 */

/** One change of an entry's `changes` (jsonb), as `RowChange` has it. */
const StoredChange: Schema.Schema<RowChange> = Schema.Union(
  Schema.Struct({ op: Schema.Literal("insert"), table: Schema.String, id: Schema.Int, after: JsonRow }),
  Schema.Struct({
    op: Schema.Literal("update"),
    table: Schema.String,
    id: Schema.Int,
    before: JsonRow,
    after: JsonRow,
    guard: Schema.optionalWith(JsonRow, { exact: true })
  }),
  Schema.Struct({ op: Schema.Literal("delete"), table: Schema.String, id: Schema.Int, before: JsonRow })
)

export const UndoEntry = Schema.Struct({
  id: Schema.Int,
  action: Schema.String,
  description: Schema.String,
  changes: Schema.Array(StoredChange),
  tasks_affected: Schema.Int
})
export type UndoEntry = typeof UndoEntry.Type

export interface NewEntry {
  readonly userId: UserId
  readonly action: string
  readonly description: string
  /**
   * The changes as JSON text in SQL; it may hold the serialised `Pending` values of
   * `pipeline/Pending.ts`, which the commit statement replaces.
   */
  readonly changes: SqlText
  readonly tasksAffected: number
  readonly at: string
}

/**
 * The CTEs of the commit statement that record a new entry: a new action makes the undone
 * ones unreachable, so the redo stack is cleared first. `undo` returns the entry's id.
 */
export const entryWrites = (entry: NewEntry): ReadonlyArray<SqlText> => [
  sqlText`purge AS (DELETE FROM undo_entries WHERE user_id = ${entry.userId} AND undone)`,
  sqlText`undo AS (
          INSERT INTO undo_entries (user_id, action, description, changes, tasks_affected, created_at)
          VALUES (${entry.userId}, ${entry.action}, ${entry.description}, (${entry.changes})::jsonb,
                  ${entry.tasksAffected}, ${entry.at}::timestamptz)
          RETURNING id)`
]

/** Undoable and redoable entries (those after `sessionStartId`, if given) and the newest id. */
export const entryCounts = (sql: SqlClient.SqlClient, userId: UserId, sessionStartId: number | undefined) => {
  const inSession = sessionStartId === undefined ? sql`` : sql`AND id > ${sessionStartId}`
  return SqlSchema.single({
    Request: UserId,
    Result: Schema.Struct({ undoable: Schema.Int, redoable: Schema.Int, latest: Schema.NullOr(Schema.Int) }),
    execute: (userId) =>
      sql`SELECT (count(*) FILTER (WHERE NOT undone ${inSession}))::int AS undoable,
           (count(*) FILTER (WHERE undone ${inSession}))::int AS redoable,
           max(id) AS latest
    FROM undo_entries WHERE user_id = ${userId}`
  })(userId).pipe(Effect.orDie)
}

/** Picks the entry the next undo (or redo) takes: the newest not undone, or the oldest undone. */
const nextEntry = (sql: SqlClient.SqlClient, userId: UserId, direction: Direction) =>
  sql`WHERE user_id = ${userId} AND ${direction === "undo" ? sql`NOT undone` : sql`undone`}
      ORDER BY id ${direction === "undo" ? sql`DESC` : sql`ASC`} LIMIT 1`

/** The ids of the tasks the next undo (or redo) touches, as a subquery. */
export const tasksOfNextEntry = (sql: SqlClient.SqlClient, userId: UserId, direction: Direction) =>
  sql`(SELECT (c->>'id')::int FROM undo_entries e, jsonb_array_elements(e.changes) c
       WHERE e.id = (SELECT id FROM undo_entries ${nextEntry(sql, userId, direction)}) AND c->>'table' = 'tasks')`

/** The rows the next undo (or redo) touches, read without a lock (`UndoService`'s lock order). */
export const rowsOfNextEntry = (sql: SqlClient.SqlClient, userId: UserId, direction: Direction) =>
  SqlSchema.findAll({
    Request: UserId,
    Result: Schema.Struct({ table: Schema.String, id: Schema.Int }),
    execute: () =>
      sql`SELECT DISTINCT c->>'table' AS table, (c->>'id')::int AS id FROM undo_entries e, jsonb_array_elements(e.changes) c
       WHERE e.id = (SELECT id FROM undo_entries ${nextEntry(sql, userId, direction)})`
  })(userId).pipe(Effect.orDie)

/**
 * The entry the next undo (or redo) takes, locked. The condition is in the locking statement
 * itself, not in a subquery: a concurrent undo that took the same entry first leaves it
 * failing the recheck, so it is not taken twice.
 */
export const lockNextEntry = (sql: SqlClient.SqlClient, userId: UserId, direction: Direction) =>
  SqlSchema.findOne({
    Request: UserId,
    Result: UndoEntry,
    execute: () =>
      sql`SELECT id, action, description, changes, tasks_affected FROM undo_entries
    ${nextEntry(sql, userId, direction)} FOR UPDATE`
  })(userId).pipe(Effect.map(Option.getOrUndefined), Effect.orDie)

export const markUndone = (sql: SqlClient.SqlClient, id: number, undone: boolean) =>
  sql`UPDATE undo_entries SET undone = ${undone} WHERE id = ${id}`.pipe(Effect.asVoid, Effect.orDie)

/** A user's newest entries, newest first. */
export const recentEntries = (sql: SqlClient.SqlClient, userId: UserId, limit: number) =>
  SqlSchema.findAll({
    Request: Schema.Struct({ userId: UserId, limit: Schema.Int }),
    Result: Schema.Struct({
      id: Schema.Int,
      action: Schema.String,
      description: Schema.String,
      created_at: IsoText,
      undone: Schema.Boolean
    }),
    execute: ({ limit, userId }) =>
      sql`SELECT id, action, description, steady_iso(created_at) AS created_at, undone FROM undo_entries
    WHERE user_id = ${userId} ORDER BY id DESC LIMIT ${limit}`
  })({ userId, limit }).pipe(Effect.orDie)

/** Drops entries created before `cutoff`; returns how many went. */
export const dropEntriesBefore = (sql: SqlClient.SqlClient, cutoff: string) =>
  SqlSchema.findAll({
    Request: IsoText,
    Result: IdRow,
    execute: (cutoff) => sql`DELETE FROM undo_entries WHERE created_at < ${cutoff}::timestamptz RETURNING id`
  })(cutoff).pipe(Effect.map((rows) => rows.length), Effect.catchTag("ParseError", Effect.die))

/** Users who recorded an entry after `afterId`, with their newest entry's id. */
export const writersAfter = (sql: SqlClient.SqlClient, afterId: number) =>
  SqlSchema.findAll({
    Request: Schema.Int,
    Result: Schema.Struct({ user_id: UserId, latest: Schema.Int }),
    execute: (afterId) => sql`SELECT user_id, max(id) AS latest FROM undo_entries WHERE id > ${afterId} GROUP BY user_id`
  })(afterId).pipe(Effect.catchTag("ParseError", Effect.die))

/** Drops up to `batch` of a user's entries beyond the newest `depth`; returns how many went. */
export const dropEntriesBeyond = (sql: SqlClient.SqlClient, userId: UserId, depth: number, batch: number) =>
  SqlSchema.findAll({
    Request: Schema.Struct({ userId: UserId, depth: Schema.Int, batch: Schema.Int }),
    Result: IdRow,
    execute: ({ batch, depth, userId }) =>
      sql`DELETE FROM undo_entries WHERE id IN (
      SELECT id FROM undo_entries WHERE user_id = ${userId} AND id < (
        SELECT id FROM undo_entries WHERE user_id = ${userId} ORDER BY id DESC OFFSET ${depth - 1} LIMIT 1)
      ORDER BY id LIMIT ${batch})
    RETURNING id`
  })({ userId, depth, batch }).pipe(Effect.map((rows) => rows.length), Effect.catchTag("ParseError", Effect.die))
