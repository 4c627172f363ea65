import { Effect } from "effect"
import type { TableRow, TableSpec } from "./Tables.js"

/**
 * A row as this process's last write of it left it: the row as the UPDATE returned it, its
 * version (`xmin`, the writing transaction) and what the write's read had besides the row (a
 * task's calendar: `extra`).
 */
export interface RecentRow<R extends TableRow, X> {
  readonly row: R
  readonly version: string
  readonly extra: X
}

/**
 * How many rows are kept, least recently written or used dropped first. A kept task row of the
 * bench's seed is ~1 KB of heap (measured: 2,048 of them 1.9 MiB), so the bound is ~2 MiB;
 * one person's edits in a sitting fit many times over.
 */
export const RECENT_ROWS = 2048

/**
 * The rows the `readFirst` writes of this process wrote last (`UpdateOptions.keep`), so that
 * editing the same row again needs no read before the transaction: a PATCH's read was a
 * fifth of its cost on a PostgreSQL server (docs/performance.md, "The read before an edit").
 *
 * Nothing here has to be up to date to be correct. A kept row is only used as a `readFirst`
 * read: the UPDATE then requires the version kept (and `UpdateOptions.stillHolds`, for what
 * was read besides the row), so when anything else changed the row since, in this process or
 * another, nothing is written and the write runs again with the row read locked, as after any
 * `readFirst` read that went stale. The pipeline drops every row its other writes change, so
 * that stays rare.
 */
export class RecentRows extends Effect.Service<RecentRows>()("steady/RecentRows", {
  sync: () => {
    // A Map iterates in insertion order: re-inserting on use keeps the least recent first.
    const rows = new Map<string, RecentRow<TableRow, unknown>>()
    const keyOf = (table: TableSpec<TableRow>, id: number) => `${table.name}:${id}`

    const get = <R extends TableRow, X>(table: TableSpec<R>, id: number): RecentRow<R, X> | undefined => {
      const key = keyOf(table as TableSpec<TableRow>, id)
      const found = rows.get(key)
      if (found === undefined) return undefined
      rows.delete(key)
      rows.set(key, found)
      return found as RecentRow<R, X>
    }

    const put = (table: TableSpec<TableRow>, id: number, kept: RecentRow<TableRow, unknown>) => {
      const key = keyOf(table, id)
      rows.delete(key)
      rows.set(key, kept)
      if (rows.size > RECENT_ROWS) rows.delete(rows.keys().next().value!)
    }

    const drop = (tableName: string, id: number) => {
      if (rows.size > 0) rows.delete(`${tableName}:${id}`)
    }

    return { get, put, drop, size: () => rows.size } as const
  }
}) {}
