import type * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"

/**
 * SQL written once: the conditions every query asks of a task ("is it open?", "is it
 * overdue?" — spec §4.2 wants one overdue definition for the list filter, the counts,
 * project counts and the snooze-overdue sweep), and the wire shapes built in SQL. A
 * condition is on the task under `alias` (`t` unless said; "" for a query that names no
 * alias). The planner matches partial indexes by their columns, not by the alias. Each
 * condition has a TypeScript twin of the same name in tasks/TaskRules.ts (`isNotQuota` is
 * `!isQuota`), held to it on random rows by test/sql-rules.test.ts.
 */
const columnsOf = (sql: SqlClient.SqlClient, alias: string) => (column: string) =>
  sql.literal(alias === "" ? column : `${alias}.${column}`)

export const isOpen = (sql: SqlClient.SqlClient, alias = "t"): Fragment => {
  const c = columnsOf(sql, alias)
  return sql`NOT ${c("done")} AND ${c("deleted_at")} IS NULL AND ${c("archived_at")} IS NULL`
}

/**
 * A quota whose current period runs (it has one, and the quota is neither done nor in the
 * trash): what the rollover sweeps, realignment and the rollover lag look at; the exact
 * predicate of the sweep's partial index (migrations 0003, 0011).
 */
export const hasRunningPeriod = (sql: SqlClient.SqlClient, alias = "t"): Fragment => {
  const c = columnsOf(sql, alias)
  return sql`${c("progress_period_end")} IS NOT NULL AND NOT ${c("done")} AND ${c("deleted_at")} IS NULL`
}

/** A quota: a target above 1, or tracked (spec §1). */
export const isQuota = (sql: SqlClient.SqlClient, alias = "t"): Fragment => {
  const c = columnsOf(sql, alias)
  return sql`(${c("is_tracked")} OR ${c("progress_target")} > 1)`
}

export const isNotQuota = (sql: SqlClient.SqlClient, alias = "t"): Fragment => {
  const c = columnsOf(sql, alias)
  return sql`NOT ${c("is_tracked")} AND ${c("progress_target")} <= 1`
}

/**
 * Of open tasks, the overdue ones: reminders and quotas are never overdue; a recurring task's
 * due date is its current occurrence. Its columns are the ones `tasks_open_by_due` holds
 * (migration 0037), so a count of these among a user's open tasks reads that index alone.
 */
export const isPastDue = (sql: SqlClient.SqlClient, now: Date, alias = "t"): Fragment => {
  const c = columnsOf(sql, alias)
  return sql`NOT ${c("is_reminder")} AND ${isNotQuota(sql, alias)} AND ${c("due_at")} < ${now.toISOString()}::timestamptz`
}

/** An overdue task: open, and past due as `isPastDue` says. */
export const isOverdue = (sql: SqlClient.SqlClient, now: Date, alias = "t"): Fragment =>
  sql`${isOpen(sql, alias)} AND ${isPastDue(sql, now, alias)}`

/**
 * Tasks' stored wire texts (`tasks.wire_text`, migration 0022) as one compact JSON array
 * text, in the order `orderBy` gives: `texts` is the column under its alias.
 */
export const wireArray = (sql: SqlClient.SqlClient, texts: string, orderBy: string): Fragment =>
  sql`'[' || COALESCE(string_agg(${sql.literal(texts)}, ',' ORDER BY ${sql.literal(orderBy)}), '') || ']'`

/** A project as the wire shows it (spec §2.2), for a project aliased `p`. */
export const projectJson = (sql: SqlClient.SqlClient, now: Date): Fragment =>
  sql`json_build_object(
    'id', p.id, 'name', p.name, 'owner_id', p.owner_id, 'shared', p.shared, 'sort_order', p.sort_order,
    'color', p.color, 'description', p.description, 'is_inbox', p.is_inbox,
    'active_count', (SELECT count(*) FROM tasks t WHERE t.project_id = p.id AND ${isOpen(sql)})::int,
    'overdue_count', (SELECT count(*) FROM tasks t WHERE t.project_id = p.id AND ${isOverdue(sql, now)})::int,
    'created_at', steady_iso(p.created_at))`

/** A completion record as the wire shows it (spec §2.3), for a row aliased `c`. */
export const completionJson = (sql: SqlClient.SqlClient): Fragment =>
  sql`json_build_object(
    'id', c.id, 'task_id', c.task_id, 'user_id', c.user_id, 'completed_at', steady_iso(c.completed_at),
    'due_at_was', steady_iso(c.due_at_was), 'due_at_next', steady_iso(c.due_at_next), 'task_title', c.task_title,
    'project_id', c.project_id, 'is_reminder', c.is_reminder, 'is_tracked', c.is_tracked,
    'progress_target', c.progress_target)`
