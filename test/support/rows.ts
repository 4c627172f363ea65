import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { TestService } from "./service.js"

/**
 * Reads of the bookkeeping tables the mutation pipeline writes, straight from the
 * database the service runs on. Dates and timestamps come back as text so both the
 * embedded database and a PostgreSQL server give the same values.
 */

export interface UndoRow {
  readonly id: number
  readonly action: string
  readonly description: string
  readonly changes: ReadonlyArray<{
    readonly op: "insert" | "update" | "delete"
    readonly table: string
    readonly id: number
    readonly before?: Record<string, unknown>
    readonly after?: Record<string, unknown>
  }>
  readonly tasks_affected: number
  readonly undone: boolean
  readonly created_at: string
}

export interface EventRow {
  readonly id: number
  readonly event: string
  readonly task_id: number | null
  readonly payload: Record<string, any>
  readonly occurred_at: string
}

export interface StatsRow {
  readonly date: string
  readonly completions: number
  readonly tasks_created: number
  readonly snoozes: number
}

export const query = <A extends object>(
  service: TestService,
  build: (sql: SqlClient.SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>
): Promise<ReadonlyArray<A>> => service.run(Effect.flatMap(SqlClient.SqlClient, build))

export const undoEntries = (service: TestService, userId: number) =>
  query<UndoRow>(service, (sql) =>
    sql<UndoRow>`SELECT id, action, description, changes, tasks_affected, undone, steady_iso(created_at) AS created_at
      FROM undo_entries WHERE user_id = ${userId} ORDER BY id`)

export const outboxEvents = (service: TestService, userId: number) =>
  query<EventRow>(service, (sql) =>
    sql<EventRow>`SELECT id::int AS id, event, task_id, payload::jsonb AS payload, steady_iso(occurred_at) AS occurred_at
      FROM outbox_events WHERE user_id = ${userId} ORDER BY id`)

export const dailyStats = (service: TestService, userId: number) =>
  query<StatsRow>(service, (sql) =>
    sql<StatsRow>`SELECT date::text AS date, sum(completions)::int AS completions, sum(tasks_created)::int AS tasks_created,
        sum(snoozes)::int AS snoozes
      FROM daily_stats WHERE user_id = ${userId} GROUP BY date ORDER BY date`)

/**
 * Everything a write could touch, for "nothing changed" checks: every task as the wire
 * shows it plus its internal columns, and every undo entry, event and statistics row.
 */
export const snapshot = async (service: TestService) => {
  const [tasks, undo, events, stats, projects] = await Promise.all([
    query(service, (sql) =>
      sql`SELECT steady_task_json(t) AS task, steady_iso(t.previous_due_at) AS previous_due_at,
            steady_iso(t.enrichment_requested_at) AS enrichment_requested_at FROM tasks t ORDER BY t.id`),
    query(service, (sql) => sql`SELECT id, user_id, action, changes, undone FROM undo_entries ORDER BY id`),
    query(service, (sql) => sql`SELECT id::int AS id, event, payload::jsonb AS payload FROM outbox_events ORDER BY id`),
    query(service, (sql) => sql`SELECT user_id, date::text AS date, completions, tasks_created, snoozes FROM daily_stats ORDER BY id`),
    query(service, (sql) => sql`SELECT id, owner_id, name, shared, steady_iso(updated_at) AS updated_at FROM projects ORDER BY id`)
  ])
  return { tasks, undo, events, stats, projects }
}
