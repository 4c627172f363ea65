import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, FastCheck as fc } from "effect"
import { hasRunningPeriod, isNotQuota, isOpen, isOverdue, isQuota } from "../src/pipeline/WireSql.js"
import * as TaskRules from "../src/tasks/TaskRules.js"
import { deliver, type DeliveryWebhook, type KnownDelivery } from "../src/webhooks/DeliveryOverflow.js"
import { databaseKind } from "./support/database.js"
import { migratedDatabase } from "./support/migrated.js"
import { instant, nearNow, NOW, taskRows, wireTextColumn } from "./support/taskRows.js"
import { type Column, rolledBack, valuesOf } from "./support/values.js"

/*
 * Rules that live in SQL for speed have a TypeScript twin in the domain (migrations/functions/
 * README.md lists them). Each pair is evaluated on the same random rows — the SQL by
 * PostgreSQL over `(VALUES …)`, the twin in Node — and must agree. A SQL condition that is
 * NULL (a task without a due date) does not hold, as in a WHERE clause.
 */

const TIMESTAMPTZ = "timestamp with time zone"
const CONDITION_COLUMNS: ReadonlyArray<Column> = [
  ["done", "boolean"],
  ["deleted_at", TIMESTAMPTZ],
  ["archived_at", TIMESTAMPTZ],
  ["is_reminder", "boolean"],
  ["is_tracked", "boolean"],
  ["progress_target", "integer"],
  ["due_at", TIMESTAMPTZ],
  ["progress_period_end", TIMESTAMPTZ]
]

/**
 * Rows of the columns the conditions read, from small domains: the instants around NOW or
 * none. A row on the edge of a rule (open, neither reminder nor quota, due exactly at NOW) is
 * still one in several hundred, hence batches of 100.
 */
const edgeInstant = fc.option(fc.constantFrom(...nearNow), { nil: null, freq: 2 })
const conditionRows = fc.array(
  fc.record({
    done: fc.boolean(),
    deleted_at: edgeInstant,
    archived_at: edgeInstant,
    is_reminder: fc.boolean(),
    is_tracked: fc.boolean(),
    progress_target: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })),
    due_at: fc.oneof(edgeInstant, fc.option(instant, { nil: null })),
    progress_period_end: edgeInstant
  }),
  { minLength: 100, maxLength: 100 }
)

const EVENTS = ["task.created", "task.updated", "task.completed"] as const

/** A user's webhooks, their delivery rows, a write's events and the cap per webhook. */
const backlog = fc.record({
  webhooks: fc.array(fc.record({ active: fc.boolean(), events: fc.subarray([...EVENTS]) }), { minLength: 1, maxLength: 3 }),
  known: fc.array(
    fc.record({
      webhook: fc.nat(2),
      status: fc.constantFrom("pending" as const, "pending" as const, "delivered" as const, "failed" as const, "dropped" as const),
      leased: fc.boolean()
    }),
    { maxLength: 10 }
  ),
  events: fc.array(fc.constantFrom(...EVENTS), { maxLength: 6 }),
  max: fc.integer({ min: 0, max: 4 })
})

describe(`rules in SQL agree with their TypeScript twins (${databaseKind()})`, () => {
  it.layer(migratedDatabase, { timeout: Duration.minutes(2) })((it) => {
    it.effect.prop("is open, is a quota, is overdue, has a running period (pipeline/WireSql.ts)", [conditionRows], ([rows]) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const held = yield* sql<{ n: number; open: boolean; quota: boolean; not_quota: boolean; overdue: boolean; running: boolean }>`
          SELECT v.n, (${isOpen(sql, "v")}) IS TRUE AS open, (${isQuota(sql, "v")}) IS TRUE AS quota,
            (${isNotQuota(sql, "v")}) IS TRUE AS not_quota, (${isOverdue(sql, NOW, "v")}) IS TRUE AS overdue,
            (${hasRunningPeriod(sql, "v")}) IS TRUE AS running
          FROM ${valuesOf(sql, "v", CONDITION_COLUMNS, rows)} ORDER BY v.n`
        expect(held).toEqual(rows.map((row, n) => ({
          n,
          open: TaskRules.isOpen(row),
          quota: TaskRules.isQuota(row),
          not_quota: !TaskRules.isQuota(row),
          overdue: TaskRules.isOverdue(row, NOW),
          running: TaskRules.hasRunningPeriod(row)
        })))
      }), { fastCheck: { numRuns: 150 } })

    it.effect.prop("the wire's is_recurring and is_snoozed (steady_task_wire_of)", [taskRows()], ([rows]) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { columns, expression } = yield* wireTextColumn
        const held = yield* sql<{ n: number; is_recurring: boolean; is_snoozed: boolean }>`
          SELECT w.n, (w.wire ->> 'is_recurring')::boolean AS is_recurring, (w.wire ->> 'is_snoozed')::boolean AS is_snoozed
          FROM (SELECT v.n, (${sql.literal(expression)})::json AS wire FROM ${valuesOf(sql, "v", columns, rows)}) w
          ORDER BY w.n`
        expect(held).toEqual(rows.map((row, n) => ({ n, is_recurring: TaskRules.isRecurring(row), is_snoozed: TaskRules.isSnoozed(row) })))
      }), { fastCheck: { numRuns: 60 } })

    it.effect.prop("webhook deliveries and their overflow (steady_deliver)", [backlog], ([b]) =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const outcome = yield* rolledBack(Effect.gen(function*() {
          const [user] = yield* sql<{ id: number }>`INSERT INTO users (username, created_at) VALUES ('overflow', now()) RETURNING id`
          const webhooks: Array<DeliveryWebhook> = []
          for (const [i, w] of b.webhooks.entries()) {
            const [row] = yield* sql<{ id: number }>`
              INSERT INTO webhooks (user_id, url, events, secret, active, created_at, updated_at)
              VALUES (${user!.id}, ${`https://example.com/${i}`}, ${JSON.stringify(w.events)}::jsonb, 'secret', ${w.active}, now(), now())
              RETURNING id`
            webhooks.push({ id: row!.id, active: w.active, events: w.events })
          }
          const known: Array<KnownDelivery> = []
          for (const [i, d] of b.known.entries()) {
            const webhook = webhooks[d.webhook % webhooks.length]!
            const [row] = yield* sql<{ id: number }>`
              INSERT INTO webhook_deliveries (webhook_id, user_id, delivery_id, event, body, status, next_attempt_at, lease_until,
                created_at, finished_at)
              VALUES (${webhook.id}, ${user!.id}, ${`known-${i}`}, 'task.created', 'known', ${d.status}, now(),
                ${d.leased ? sql`now() + interval '1 minute'` : sql`NULL`}, now(), ${d.status === "pending" ? sql`NULL` : sql`now()`})
              RETURNING id::int AS id`
            known.push({ id: row!.id, webhook_id: webhook.id, status: d.status, leased: d.leased })
          }
          const events = b.events.map((event, i) => ({ n: i + 1, event, body: `${i + 1}` }))
          const [written] = yield* sql<{ n: number }>`
            SELECT steady_deliver(${user!.id}, now(), ${JSON.stringify(events)}::jsonb, ${b.max}) AS n`
          const rows = yield* sql<{ id: number; webhook_id: number; body: string; status: string; delivery_id: string }>`
            SELECT id::int AS id, webhook_id, body, status, delivery_id FROM webhook_deliveries WHERE user_id = ${user!.id} ORDER BY id`
          return { webhooks, known, count: written!.n, rows }
        }))
        const expected = deliver(outcome.webhooks, outcome.known, b.events.map((event, i) => ({ n: i + 1, event })), b.max)
        const fresh = outcome.rows.filter((r) => r.body !== "known")
        expect(fresh.map((r) => ({ webhook_id: r.webhook_id, n: Number(r.body), status: r.status }))).toEqual(expected.written)
        expect(outcome.count).toBe(expected.written.length)
        const wasPending = new Set(outcome.known.filter((d) => d.status === "pending").map((d) => d.id))
        const dropped = outcome.rows.filter((r) => r.body === "known" && wasPending.has(r.id) && r.status === "dropped").map((r) => r.id)
        expect(dropped).toEqual(expected.dropped)
        // Nothing else changed status.
        const before = new Map(outcome.known.map((d) => [d.id, d.status]))
        expect(outcome.rows.filter((r) => r.body === "known" && !dropped.includes(r.id)).every((r) => r.status === before.get(r.id)))
          .toBe(true)
      }), { fastCheck: { numRuns: 60 } })
  })
})
