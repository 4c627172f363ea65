import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { ActionName, DomainEvent, RowChange, StatName } from "../domain/Changes.js"
import { type JsonValue, type Row, sameValue } from "../domain/Json.js"
import { localDate } from "../domain/LocalTime.js"
import type { CurrentUserShape } from "./CurrentUser.js"
import { now as clockNow } from "./ServiceClock.js"
import { normalizeRow, normalizeValue, sqlCast, sqlParam, type TableSpec } from "./Tables.js"
import { dropOverflow } from "./Webhooks.js"
import { ChangeWakeup } from "./ChangeWakeup.js"
import { entriesOf, recordChanges } from "./ChangeLog.js"
import { WebhookWakeup } from "./WebhookWakeup.js"

/**
 * What a mutation body writes through. Every row write goes through `insert`, `update`
 * or `remove`, so the undo entry is built from what really changed, never by hand.
 */
export interface Tx {
  readonly now: Date
  readonly user: CurrentUserShape
  readonly insert: (table: TableSpec, values: Row) => Effect.Effect<Row>
  /** Writes only the fields whose value differs; returns the changed field names. */
  readonly update: (
    table: TableSpec,
    id: number,
    values: Row,
    options?: { readonly guard?: ReadonlyArray<string> }
  ) => Effect.Effect<ReadonlyArray<string>>
  /** Re-creates a row with its old id (undo of a delete, redo of an insert). */
  readonly restoreRow: (table: TableSpec, row: Row) => Effect.Effect<void>
  readonly remove: (table: TableSpec, id: number) => Effect.Effect<void>
  /** Reads a row and locks it for the rest of the transaction. */
  readonly lock: (table: TableSpec, id: number) => Effect.Effect<Row | undefined>
  readonly emit: (event: DomainEvent) => void
  /** Adds to the user's daily statistics, on the local date of `at` (default: now). */
  readonly count: (stat: StatName, n?: number, at?: Date) => void
  readonly describe: (description: string) => void
  readonly changes: () => ReadonlyArray<RowChange>
}

export interface MutationOptions {
  readonly user: CurrentUserShape
  readonly action: ActionName
  /** Actions that cannot be taken back (settings, credentials) skip the undo log. */
  readonly undoable?: boolean
}

const placeholders = (table: TableSpec, values: Row, start: number) => {
  const columns = Object.keys(values)
  const params = columns.map((c) => sqlParam(table.columns[c]!, values[c]!))
  const casts = columns.map((c, i) => `$${start + i}::${sqlCast[table.columns[c]!]}`)
  return { columns, params, casts }
}

const checkColumns = (table: TableSpec, values: Row) => {
  for (const column of Object.keys(values)) {
    if (!(column in table.columns)) throw new Error(`Unknown column ${table.name}.${column}`)
  }
}

export class Mutations extends Effect.Service<Mutations>()("steady/Mutations", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const wakeup = yield* WebhookWakeup
    const changeWakeup = yield* ChangeWakeup

    const lockRow = (table: TableSpec, id: number) =>
      sql.unsafe<{ row: Record<string, unknown> }>(
        `SELECT to_jsonb(t) AS row FROM ${table.name} t WHERE id = $1 FOR UPDATE`,
        [id]
      ).pipe(Effect.map((rows) => rows[0] === undefined ? undefined : normalizeRow(table, rows[0].row)))

    /**
     * Runs `body` in one transaction that also writes the undo entry, the domain events
     * (the webhook outbox) and the day's statistics. A failure anywhere rolls all back.
     */
    const runWithUndoId = <A, E, R>(options: MutationOptions, body: (tx: Tx) => Effect.Effect<A, E, R>) =>
      Effect.gen(function*() {
        const now = yield* clockNow
        const changes: Array<RowChange> = []
        const events: Array<DomainEvent> = []
        const stats = new Map<string, Record<StatName, number>>()
        let description = ""

        const tx: Tx = {
          now,
          user: options.user,
          lock: (table, id) => Effect.orDie(lockRow(table, id)),
          insert: (table, values) =>
            Effect.gen(function*() {
              checkColumns(table, values)
              const { casts, columns, params } = placeholders(table, values, 1)
              const rows = yield* sql.unsafe<{ row: Record<string, unknown> }>(
                `INSERT INTO ${table.name} (${columns.join(", ")}) VALUES (${casts.join(", ")}) RETURNING to_jsonb(${table.name}) AS row`,
                params
              )
              const row = normalizeRow(table, rows[0]!.row)
              changes.push({ op: "insert", table: table.name, id: Number(row.id), after: row })
              return row
            }).pipe(Effect.orDie),
          update: (table, id, values, updateOptions) =>
            Effect.gen(function*() {
              checkColumns(table, values)
              const current = yield* lockRow(table, id)
              if (current === undefined) return yield* Effect.dieMessage(`${table.name} ${id} vanished`)
              const before: Row = {}
              const after: Row = {}
              for (const [column, value] of Object.entries(values)) {
                if (column === table.touch) continue
                const next = normalizeValue(table.columns[column], value)
                if (!sameValue(current[column] ?? null, next)) {
                  before[column] = current[column] ?? null
                  after[column] = next
                }
              }
              const changed = Object.keys(after)
              if (changed.length === 0) return changed
              const writes: Row = table.touch ? { ...after, [table.touch]: now.toISOString() } : after
              const { casts, columns, params } = placeholders(table, writes, 2)
              yield* sql.unsafe(
                `UPDATE ${table.name} SET ${columns.map((c, i) => `${c} = ${casts[i]}`).join(", ")} WHERE id = $1`,
                [id, ...params]
              )
              const guardFields = updateOptions?.guard ?? []
              const guard: Row = Object.fromEntries(guardFields.map((f) => [f, current[f] ?? null]))
              changes.push(
                guardFields.length > 0
                  ? { op: "update", table: table.name, id, before, after, guard }
                  : { op: "update", table: table.name, id, before, after }
              )
              return changed
            }).pipe(Effect.orDie),
          restoreRow: (table, row) =>
            Effect.gen(function*() {
              const values: Row = Object.fromEntries(
                Object.entries(row).filter(([column]) => column in table.columns)
              )
              const { casts, columns, params } = placeholders(table, values, 2)
              yield* sql.unsafe(
                `INSERT INTO ${table.name} (id, ${columns.join(", ")}) VALUES ($1, ${casts.join(", ")})`,
                [Number(row.id), ...params]
              )
              changes.push({ op: "insert", table: table.name, id: Number(row.id), after: row })
            }).pipe(Effect.orDie),
          remove: (table, id) =>
            Effect.gen(function*() {
              const current = yield* lockRow(table, id)
              if (current === undefined) return
              yield* sql.unsafe(`DELETE FROM ${table.name} WHERE id = $1`, [id])
              changes.push({ op: "delete", table: table.name, id, before: current })
            }).pipe(Effect.orDie),
          emit: (event) => {
            events.push(event)
          },
          count: (stat, n = 1, at = now) => {
            const day = localDate(at, options.user.timezone)
            const row = stats.get(day) ?? { completions: 0, tasks_created: 0, snoozes: 0 }
            row[stat] += n
            stats.set(day, row)
          },
          describe: (text) => {
            description = text
          },
          changes: () => changes
        }

        const result = yield* body(tx)
        const undoId = yield* Effect.orDie(persist(options, tx, changes, events, stats, description))
        const feed = entriesOf(changes)
        yield* Effect.orDie(recordChanges(sql, tx.now, feed))
        return [result, undoId, events.length > 0, feed.length > 0] as const
      }).pipe(
        sql.withTransaction,
        Effect.catchTag("SqlError", Effect.die),
        // After commit: deliveries written by this transaction go out now, not at the next poll.
        Effect.tap(([, , evented]) => (evented ? wakeup.wake : Effect.void)),
        // The change streams of this instance read the new feed entries now; others hear NOTIFY.
        Effect.tap(([, , , fed]) => (fed ? changeWakeup.wake : Effect.void)),
        Effect.map(([result, undoId]) => [result, undoId] as const)
      )

    const run = <A, E, R>(options: MutationOptions, body: (tx: Tx) => Effect.Effect<A, E, R>) =>
      Effect.map(runWithUndoId(options, body), ([result]) => result)

    const persist = (
      options: MutationOptions,
      tx: Tx,
      changes: ReadonlyArray<RowChange>,
      events: ReadonlyArray<DomainEvent>,
      stats: ReadonlyMap<string, Record<StatName, number>>,
      description: string
    ) =>
      Effect.gen(function*() {
        const userId = options.user.id
        let undoId: number | null = null
        if (changes.length > 0 && options.undoable !== false) {
          const tasksAffected = new Set(changes.filter((c) => c.table === "tasks").map((c) => c.id)).size
          // A new action makes the undone ones unreachable: the redo stack is cleared.
          yield* sql`DELETE FROM undo_entries WHERE user_id = ${userId} AND undone`
          const [entry] = yield* sql<{ id: number }>`
            INSERT INTO undo_entries (user_id, action, description, changes, tasks_affected, created_at)
            VALUES (${userId}, ${options.action}, ${description || options.action}, ${JSON.stringify(changes)}::jsonb,
                    ${tasksAffected}, ${tx.now.toISOString()}::timestamptz)
            RETURNING id`
          undoId = entry!.id
        }
        const at = tx.now.toISOString()
        for (const e of events) {
          yield* sql`INSERT INTO outbox_events (user_id, event, task_id, payload, occurred_at)
            VALUES (${userId}, ${e.event}, ${e.taskId}, ${JSON.stringify(e.data as JsonValue)}::jsonb, ${at}::timestamptz)`
          // One delivery per matching active webhook, its body bytes frozen now (CONTRACT §9).
          const body = JSON.stringify({ event: e.event, timestamp: at, data: e.data })
          yield* sql`INSERT INTO webhook_deliveries (webhook_id, user_id, delivery_id, event, body, next_attempt_at, created_at)
            SELECT w.id, w.user_id, gen_random_uuid()::text, ${e.event}, ${body}, ${at}::timestamptz, ${at}::timestamptz
            FROM webhooks w
            WHERE w.user_id = ${userId} AND w.active AND w.events @> jsonb_build_array(${e.event}::text)`
        }
        if (events.length > 0) yield* dropOverflow(sql, userId, at)
        for (const [day, { completions, snoozes, tasks_created }] of stats) {
          if (completions === 0 && tasks_created === 0 && snoozes === 0) continue
          yield* sql`INSERT INTO daily_stats (user_id, date, completions, tasks_created, snoozes)
            VALUES (${userId}, ${day}::date, ${completions}, ${tasks_created}, ${snoozes})
            ON CONFLICT (user_id, date) DO UPDATE SET
              completions = daily_stats.completions + EXCLUDED.completions,
              tasks_created = daily_stats.tasks_created + EXCLUDED.tasks_created,
              snoozes = daily_stats.snoozes + EXCLUDED.snoozes`
        }
        return undoId
      })

    return { run, runWithUndoId } as const
  })
}) {}
