import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { WebhookDeliveries } from "../src/webhooks/WebhookDeliveries.js"
import { databaseKind, freshDatabase, type TestDatabase } from "./support/database.js"
import { eventually, header, type Receiver, sleep, startReceiver, verifySignatures } from "./support/receiver.js"
import { query } from "./support/rows.js"
import { type Client, startService, type TestService, type TestUser } from "./support/service.js"
import { createTask } from "./support/tasks.js"
import { createWebhook, type DeliveryRow, deliveryLog, deliveryRows, settled } from "./support/webhooks.js"

/*
 * The outbox, so a delivery is never lost between a commit and the send: deliveries are written with the change, survive a stop
 * between commit and delivery, are taken over after a crashed instance's lease runs out,
 * go out exactly once with two dispatchers on one PostgreSQL, stop when their webhook is
 * deactivated or deleted, and their log is purged after 7 days (spec §6).
 */

const iso = (msFromNow: number) => new Date(Date.now() + msFromNow).toISOString()

describe("webhook outbox across a restart", () => {
  let db: TestDatabase
  let service: TestService | undefined
  const receivers: Array<Receiver> = []
  const hooks: Record<"restart" | "leased" | "deactivated" | "deleted", { id: number; secret: string }> = {} as never
  const users: Record<string, TestUser> = {}
  let restartRows: ReadonlyArray<DeliveryRow> = []
  let leasedRows: ReadonlyArray<DeliveryRow> = []
  let deactivatedRows: ReadonlyArray<DeliveryRow> = []
  let deletedRowsAfterDelete = -1
  let receivedWhileOff = -1
  let statusesWhileOff: Array<string> = []
  let r1: Receiver, r2: Receiver, r3: Receiver, r4: Receiver
  const api = (name: string): Client => service!.client({ authorization: `Bearer ${users[name]!.token}` })

  beforeAll(async () => {
    db = await freshDatabase()
    for (let i = 0; i < 4; i++) receivers.push(await startReceiver())
    ;[r1, r2, r3, r4] = receivers as [Receiver, Receiver, Receiver, Receiver]

    // An instance that commits changes but never delivers: as if killed right after each commit.
    const first = await startService({ webhookDispatch: false }, db)
    try {
      for (const name of ["restart", "leased", "deactivated", "deleted"]) users[name] = await first.user(`outbox-${name}`)
      hooks.restart = await createWebhook(users.restart!.api, r1.url(), ["task.created", "task.updated"])
      hooks.leased = await createWebhook(users.leased!.api, r2.url(), ["task.created"])
      hooks.deactivated = await createWebhook(users.deactivated!.api, r3.url(), ["task.created"])
      hooks.deleted = await createWebhook(users.deleted!.api, r4.url(), ["task.created"])

      const task = await createTask(users.restart!.api, { title: "Written before the crash" })
      expect((await users.restart!.api.patch(`/api/tasks/${task.id}`, { title: "Edited before the crash" })).status).toBe(200)
      await createTask(users.leased!.api, { title: "Claimed by a crashed instance" })
      await createTask(users.deactivated!.api, { title: "For a webhook about to be switched off" })
      await createTask(users.deleted!.api, { title: "For a webhook about to be deleted" })

      // A crashed instance had claimed this one and made its first attempt: lease still running.
      await query(first, (sql) =>
        sql`UPDATE webhook_deliveries SET lease_until = ${iso(3_600_000)}::timestamptz, attempts = 1
          WHERE webhook_id = ${hooks.leased.id} RETURNING id`)
      expect((await users.deactivated!.api.patch(`/api/webhooks/${hooks.deactivated.id}`, { active: false })).status).toBe(200)
      expect((await users.deleted!.api.delete(`/api/webhooks/${hooks.deleted.id}`)).status).toBe(200)

      restartRows = await deliveryRows(first, hooks.restart.id)
      leasedRows = await deliveryRows(first, hooks.leased.id)
      deactivatedRows = await deliveryRows(first, hooks.deactivated.id)
      deletedRowsAfterDelete = (await deliveryRows(first, hooks.deleted.id)).length
      await sleep(1_500)
      receivedWhileOff = receivers.reduce((n, r) => n + r.received.length, 0)
      statusesWhileOff = [...restartRows, ...leasedRows, ...deactivatedRows].map((d) => d.status)
    } finally {
      await first.stop()
    }
    // The next start on the same data, dispatching.
    service = await startService({ webhookDispatch: true }, db)
  })
  afterAll(async () => {
    await service?.stop()
    await Promise.all(receivers.map((r) => r.close()))
    await db?.drop()
  })

  it("the rows are written with the change, and a service with dispatch off sends nothing", () => {
    expect(restartRows.map((d) => d.event)).toEqual(["task.created", "task.updated"])
    expect(leasedRows).toHaveLength(1)
    expect(deactivatedRows).toHaveLength(1)
    expect(statusesWhileOff).toEqual(["pending", "pending", "pending", "pending"])
    expect(receivedWhileOff).toBe(0)
    for (const d of restartRows) {
      expect(d.delivery_id).toMatch(/^\S{8,}$/)
      expect(JSON.parse(d.body)).toMatchObject({ event: d.event, data: { task: { user_id: users.restart!.id } } })
    }
    // Deleting the webhook removed its pending delivery with it.
    expect(deletedRowsAfterDelete).toBe(0)
  })

  it("after the restart each pending delivery arrives once, with the delivery id and body bytes stored at commit", async () => {
    const requests = await r1.waitFor(2, 15_000)
    await settled(service!, users.restart!.id)
    await sleep(500)
    expect(r1.received).toHaveLength(2)
    const byId = new Map(requests.map((q) => [header(q, "x-service-delivery"), q]))
    expect([...byId.keys()].sort()).toEqual(restartRows.map((d) => d.delivery_id).sort())
    for (const stored of restartRows) {
      const q = byId.get(stored.delivery_id)!
      expect(header(q, "webhook-id")).toBe(stored.delivery_id)
      expect(header(q, "x-service-event")).toBe(stored.event)
      expect(q.raw.toString("utf8")).toBe(stored.body)
      expect(verifySignatures(hooks.restart.secret, q)).toEqual({ service: true, standard: true })
    }
    const rows = await deliveryRows(service!, hooks.restart.id)
    expect(rows.map((d) => [d.delivery_id, d.status, d.attempts])).toEqual(restartRows.map((d) => [d.delivery_id, "delivered", 1]))
  })

  it("a delivery leased by a crashed instance waits for the lease, then is taken over", async () => {
    // The new dispatcher is running (it delivers the other user's rows) but leaves this one alone.
    await r1.waitFor(2, 15_000)
    await sleep(2_500)
    expect(r2.received).toEqual([])
    expect((await deliveryRows(service!, hooks.leased.id))[0]).toMatchObject({ status: "pending", attempts: 1 })

    // The lease runs out.
    await query(service!, (sql) =>
      sql`UPDATE webhook_deliveries SET lease_until = ${iso(-1_000)}::timestamptz WHERE webhook_id = ${hooks.leased.id} RETURNING id`)
    const [request] = await r2.waitFor(1, 10_000)
    expect(header(request!, "x-service-delivery")).toBe(leasedRows[0]!.delivery_id)
    expect(request!.raw.toString("utf8")).toBe(leasedRows[0]!.body)
    await settled(service!, users.leased!.id)
    await sleep(1_200)
    expect(r2.received).toHaveLength(1)
    // The crashed instance's attempt counted: this was the second.
    const log = await deliveryLog(api("leased"), hooks.leased.id)
    expect(log.map((e) => [e.attempt, e.status_code, e.success])).toEqual([[2, 200, true]])
    expect((await deliveryRows(service!, hooks.leased.id))[0]).toMatchObject({ status: "delivered", attempts: 2, lease_until: null })
  })

  it("a webhook deactivated while its delivery was pending: nothing arrives, the delivery is cancelled", async () => {
    const [row] = await eventually(async () => {
      const rows = await deliveryRows(service!, hooks.deactivated.id)
      return rows[0]?.status !== "pending" ? rows : undefined
    }, 15_000, "the delivery to leave pending")
    expect(row).toMatchObject({ delivery_id: deactivatedRows[0]!.delivery_id, status: "cancelled", lease_until: null })
    expect(r3.received).toEqual([])
    expect(await deliveryLog(api("deactivated"), hooks.deactivated.id)).toEqual([])
    // Switching it back on later does not resurrect the old event.
    expect((await api("deactivated").patch(`/api/webhooks/${hooks.deactivated.id}`, { active: true })).status).toBe(200)
    await sleep(1_500)
    expect(r3.received).toEqual([])
  })

  it("a webhook deleted while its delivery was pending: nothing arrives", async () => {
    await r1.waitFor(2, 15_000)
    await sleep(1_500)
    expect(r4.received).toEqual([])
    const [count] = await query<{ n: number }>(service!, (sql) =>
      sql`SELECT count(*)::int AS n FROM webhook_deliveries WHERE user_id = ${users.deleted!.id}`)
    expect(count!.n).toBe(0)
  })

  it("the purge removes attempts older than 7 days and finished outbox rows, and keeps the rest", async () => {
    const user = await service!.user("purged")
    const hook = await createWebhook(user.api, r1.url("/purge"), ["task.created"])
    const body = JSON.stringify({ event: "task.created", timestamp: iso(0), data: {} })
    const attempt = (deliveryId: string, createdAt: string) =>
      query(service!, (sql) =>
        sql`INSERT INTO webhook_attempts (webhook_id, delivery_id, event, payload, status_code, error, attempt, success, duration_ms, created_at)
          VALUES (${hook.id}, ${deliveryId}, 'task.created', ${body}::jsonb, 200, NULL, 1, true, 5, ${createdAt}::timestamptz)
          RETURNING id`)
    const delivery = (deliveryId: string, status: string, createdAt: string, finishedAt: string | null) =>
      query(service!, (sql) =>
        sql`INSERT INTO webhook_deliveries (webhook_id, user_id, delivery_id, event, body, status, attempts, next_attempt_at, created_at, finished_at)
          VALUES (${hook.id}, ${user.id}, ${deliveryId}, 'task.created', ${body}, ${status}, 1,
                  ${iso(3_600_000)}::timestamptz, ${createdAt}::timestamptz, ${finishedAt}::timestamptz)
          RETURNING id`)
    const DAY = 86_400_000
    await attempt("old-8d", iso(-8 * DAY))
    await attempt("old-30d", iso(-30 * DAY))
    await attempt("recent-6d", iso(-6 * DAY))
    await attempt("recent-1h", iso(-3_600_000))
    await delivery("old-8d", "delivered", iso(-8 * DAY), iso(-8 * DAY))
    await delivery("old-failed-9d", "failed", iso(-9 * DAY), iso(-9 * DAY))
    await delivery("recent-6d", "delivered", iso(-6 * DAY), iso(-6 * DAY))
    // Not finished: kept whatever its age (it is not due: next_attempt_at is in an hour).
    await delivery("pending-10d", "pending", iso(-10 * DAY), null)
    expect((await deliveryLog(user.api, hook.id)).map((e) => e.delivery_id)).toEqual(["recent-1h", "recent-6d", "old-8d", "old-30d"])

    await service!.run(Effect.flatMap(WebhookDeliveries, (d) => d.purgeLogs))

    expect((await deliveryLog(user.api, hook.id)).map((e) => e.delivery_id)).toEqual(["recent-1h", "recent-6d"])
    const rows = await deliveryRows(service!, hook.id)
    expect(rows.map((d) => d.delivery_id).sort()).toEqual(["pending-10d", "recent-6d"])
  })
})

describe.skipIf(databaseKind() !== "postgres")("two dispatchers on one PostgreSQL", () => {
  let db: TestDatabase
  let one: TestService | undefined
  let two: TestService | undefined
  let r: Receiver

  beforeAll(async () => {
    db = await freshDatabase()
    // A short pause in the receiver keeps several deliveries in flight at once on both sides.
    r = await startReceiver(() => ({ status: 200, delayMs: 20 + Math.floor(Math.random() * 80) }))
    one = await startService({ webhookDispatch: true }, db)
    two = await startService({ webhookDispatch: true }, db)
  })
  afterAll(async () => {
    await one?.stop()
    await two?.stop()
    await r?.close()
    await db?.drop()
  })

  it("each event is delivered exactly once", async () => {
    const user = await one!.user("twice")
    const apis = [user.api, two!.client({ authorization: `Bearer ${user.token}` })]
    const hook = await createWebhook(user.api, r.url(), ["task.created", "task.updated"])
    // 30 events written through both instances at once, each waking its own dispatcher.
    const created = await Promise.all(
      Array.from({ length: 30 }, (_, i) => createTask(apis[i % 2]!, { title: `Once ${i + 1}` }))
    )
    // 20 more that come due in 1.5 s without waking either instance: both find them by polling.
    await query(one!, (sql) =>
      sql`INSERT INTO webhook_deliveries (webhook_id, user_id, delivery_id, event, body, next_attempt_at, created_at)
        SELECT ${hook.id}, ${user.id}, 'polled-' || n, 'task.updated', '{"event":"task.updated","timestamp":"2026-01-01T00:00:00.000Z","data":{}}',
               ${iso(1_500)}::timestamptz, ${iso(0)}::timestamptz
        FROM generate_series(1, 20) AS n RETURNING id`)

    await r.waitFor(50, 30_000)
    await settled(one!, user.id)
    await sleep(2_000)
    const ids = r.received.map((q) => header(q, "x-service-delivery"))
    expect(ids).toHaveLength(50)
    expect(new Set(ids).size).toBe(50)
    const createdIds = r.received.filter((q) => q.body.event === "task.created").map((q) => q.body.data.task.id).sort((a, b) => a - b)
    expect(createdIds).toEqual(created.map((t) => t.id).sort((a, b) => a - b))

    const [counts] = await query<{ attempts: number; distinct_ids: number; delivered: number }>(one!, (sql) =>
      sql`SELECT (SELECT count(*)::int FROM webhook_attempts WHERE webhook_id = ${hook.id}) AS attempts,
            (SELECT count(DISTINCT delivery_id)::int FROM webhook_attempts WHERE webhook_id = ${hook.id}) AS distinct_ids,
            (SELECT count(*)::int FROM webhook_deliveries WHERE webhook_id = ${hook.id} AND status = 'delivered' AND attempts = 1) AS delivered`)
    expect(counts).toEqual({ attempts: 50, distinct_ids: 50, delivered: 50 })
  })
})
