import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DatabaseMaintenance } from "../src/system/DatabaseMaintenance.js"
import { UNDO_DEPTH, UndoService } from "../src/undo/UndoService.js"
import { WebhookDeliveries } from "../src/webhooks/WebhookDeliveries.js"
import { databaseKind } from "./support/database.js"
import { query } from "./support/rows.js"
import { startService, type TestService } from "./support/service.js"
import { createTask } from "./support/tasks.js"
import { createWebhook } from "./support/webhooks.js"

/**
 * The logs every write adds stay bounded, so a long-lived database does not grow without end. Outbox events go once none of their
 * deliveries is left (or they never had one); each user keeps the newest UNDO_DEPTH undo
 * entries; the embedded database checkpoints its write-ahead log.
 */

const count = async (service: TestService, table: "outbox_events" | "undo_entries", userId: number) => {
  const [row] = await query<{ n: number }>(service, (sql) =>
    sql`SELECT count(*)::int AS n FROM ${sql(table)} WHERE user_id = ${userId}`)
  return row!.n
}

describe("log retention", () => {
  let service: TestService

  beforeAll(async () => {
    // No dispatcher: deliveries stay as the test sets them; no background compaction either
    // (the test services' default), so the counts below are the purges' own.
    service = await startService({ webhookDispatch: false })
  })
  afterAll(async () => {
    await service?.stop()
  })

  it("purges outbox events with no delivery left, up to the mark, and keeps those a delivery still needs", async () => {
    const quiet = await service.user("outbox-quiet")
    const hooked = await service.user("outbox-hooked")
    const hook = await createWebhook(hooked.api, "http://127.0.0.1:9/hook", ["task.created"])
    for (let i = 0; i < 3; i++) await createTask(quiet.api, { title: `quiet ${i}` })
    for (let i = 0; i < 2; i++) await createTask(hooked.api, { title: `hooked ${i}` })
    const mark = await service.run(Effect.flatMap(WebhookDeliveries, (d) => d.outboxMark))
    await createTask(quiet.api, { title: "after the mark" })
    expect(await count(service, "outbox_events", quiet.id)).toBe(4)
    expect(await count(service, "outbox_events", hooked.id)).toBe(2)

    expect(await service.run(Effect.flatMap(WebhookDeliveries, (d) => d.purgeOutbox(mark)))).toBe(3)
    // The event written after the mark waits for the next pass; the hooked user's deliveries are pending.
    expect(await count(service, "outbox_events", quiet.id)).toBe(1)
    expect(await count(service, "outbox_events", hooked.id)).toBe(2)

    // Delivered six days ago: the delivery log still holds them, so do the events.
    const finishedDaysAgo = (days: number) =>
      query(service, (sql) =>
        sql`UPDATE webhook_deliveries SET status = 'delivered', attempts = 1,
              finished_at = ${new Date(Date.now() - days * 86_400_000).toISOString()}::timestamptz
            WHERE webhook_id = ${hook.id} RETURNING id`)
    await finishedDaysAgo(6)
    await service.run(Effect.flatMap(WebhookDeliveries, (d) => d.purgeLogs))
    expect(await service.run(Effect.flatMap(WebhookDeliveries, (d) => d.purgeOutbox(mark)))).toBe(0)
    expect(await count(service, "outbox_events", hooked.id)).toBe(2)

    // Past the delivery log's 7 days the deliveries go, and then their events.
    await finishedDaysAgo(8)
    await service.run(Effect.flatMap(WebhookDeliveries, (d) => d.purgeLogs))
    expect(await service.run(Effect.flatMap(WebhookDeliveries, (d) => d.purgeOutbox(mark)))).toBe(2)
    expect(await count(service, "outbox_events", hooked.id)).toBe(0)
    expect(await count(service, "outbox_events", quiet.id)).toBe(1)
  })

  it(`keeps the newest ${UNDO_DEPTH} undo entries of each user and drops the older ones`, async () => {
    const busy = await service.user("undo-busy")
    const calm = await service.user("undo-calm")
    // Recorded steps, written directly: a thousand and more through the API would take minutes.
    const seed = (userId: number, n: number) =>
      query(service, (sql) =>
        sql`INSERT INTO undo_entries (user_id, action, description, changes, tasks_affected, created_at)
          SELECT ${userId}, 'update', 'seeded ' || g, '[]'::jsonb, 0, now() FROM generate_series(1, ${n}) g RETURNING id`)
    await seed(busy.id, UNDO_DEPTH + 4)
    await seed(calm.id, 10)
    const task = await createTask(busy.api, { title: "Last real step" })
    expect(await count(service, "undo_entries", busy.id)).toBe(UNDO_DEPTH + 5)
    const [oldest] = await query<{ id: number }>(service, (sql) =>
      sql`SELECT id FROM undo_entries WHERE user_id = ${busy.id} ORDER BY id OFFSET 5 LIMIT 1`)

    const first = await service.run(Effect.flatMap(UndoService, (undo) => undo.trim(0)))
    expect(first.trimmed).toBe(5)
    expect(await count(service, "undo_entries", busy.id)).toBe(UNDO_DEPTH)
    expect(await count(service, "undo_entries", calm.id)).toBe(10)
    const [kept] = await query<{ id: number }>(service, (sql) =>
      sql`SELECT min(id) AS id FROM undo_entries WHERE user_id = ${busy.id}`)
    expect(kept!.id).toBe(oldest!.id)

    const status = await busy.api.get("/api/undo/status")
    expect(status.body.data).toMatchObject({ undoable_count: UNDO_DEPTH, redoable_count: 0 })
    // The newest step is still the one undone first.
    const undone = await busy.api.post("/api/undo")
    expect(undone.status).toBe(200)
    expect(undone.body.data).toMatchObject({ undone_action: "create", undoable_count: UNDO_DEPTH - 1, redoable_count: 1 })
    expect((await busy.api.get(`/api/tasks/${task.id}`)).body.data.deleted_at).not.toBeNull()

    // Only users who recorded a step since the last pass are looked at again.
    await seed(calm.id, UNDO_DEPTH)
    const second = await service.run(Effect.flatMap(UndoService, (undo) => undo.trim(first.latest)))
    expect(second.trimmed).toBe(10)
    expect(await count(service, "undo_entries", calm.id)).toBe(UNDO_DEPTH)
    expect(await count(service, "undo_entries", busy.id)).toBe(UNDO_DEPTH)
  })

  it.runIf(databaseKind() === "embedded")("checkpoints the embedded write-ahead log once it passes the limit", async () => {
    const user = await service.user("wal")
    for (let i = 0; i < 5; i++) await createTask(user.api, { title: `wal ${i}` })
    const maintenance = <A>(f: (m: DatabaseMaintenance) => Effect.Effect<A>) =>
      service.run(Effect.flatMap(DatabaseMaintenance, f).pipe(Effect.provide(DatabaseMaintenance.Default)))
    const before = await maintenance((m) => m.walSinceCheckpoint)
    expect(before).toBeGreaterThan(0)
    expect(await maintenance((m) => m.checkpointIfDue(before + 1024 * 1024 * 1024))).toBe(false)
    expect(await maintenance((m) => m.walSinceCheckpoint)).toBeGreaterThanOrEqual(before)
    expect(await maintenance((m) => m.checkpointIfDue(1))).toBe(true)
    expect(await maintenance((m) => m.walSinceCheckpoint)).toBeLessThan(before)
  })
})
