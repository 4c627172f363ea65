import Pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MAX_SESSIONS_PER_USER, MAX_TOKENS_PER_USER } from "../src/accounts/Credentials.js"
import { MAX_WEBHOOKS_PER_USER } from "../src/webhooks/Webhooks.js"
import { MAX_IN_FLIGHT_PER_USER, MAX_PENDING_PER_WEBHOOK } from "../src/webhooks/WebhookDeliveries.js"
import { type Receiver, sleep, startReceiver } from "./support/receiver.js"
import { databaseKind } from "./support/database.js"
import { query } from "./support/rows.js"
import { startService, type TestService } from "./support/service.js"
import { createTask } from "./support/tasks.js"
import { createWebhook } from "./support/webhooks.js"

/**
 * Per-user resources are bounded, so one user cannot exhaust what all share: tokens and webhooks past their cap are
 * a 409 and nothing is written; a webhook's waiting deliveries are trimmed to the newest;
 * one user's hanging receivers hold at most a few dispatcher slots.
 */

const CONFLICT = { error: expect.any(String), code: "CONFLICT", details: {} }

describe("caps on tokens, webhooks and waiting deliveries", () => {
  let service: TestService

  beforeAll(async () => {
    // Nothing is delivered here, so waiting deliveries stay waiting.
    service = await startService({ webhookDispatch: false })
  })
  afterAll(async () => {
    await service?.stop()
  })

  /** Exactly the cap of deliveries waiting for `webhookId`, named `<prefix>-1` (oldest) onwards. */
  const fillBacklog = (userId: number, webhookId: number, prefix: string) =>
    query(service, (sql) =>
      sql`INSERT INTO webhook_deliveries (webhook_id, user_id, delivery_id, event, body, next_attempt_at, created_at)
        SELECT ${webhookId}, ${userId}, ${prefix} || '-' || n, 'task.created', '{}', now(), now()
        FROM generate_series(1, ${MAX_PENDING_PER_WEBHOOK}) AS n RETURNING id`)

  it(`a user has at most ${MAX_TOKENS_PER_USER} tokens: the next POST /api/tokens is a 409 and creates nothing`, async () => {
    expect(MAX_TOKENS_PER_USER).toBe(100)
    const user = await service.user("many-tokens") // holds one token already
    for (let i = 1; i < MAX_TOKENS_PER_USER; i++) {
      const res = await user.api.post("/api/tokens", { name: `t${i}` })
      expect(res.status, `token ${i + 1}`).toBe(201)
    }
    const over = await user.api.post("/api/tokens", { name: "one too many" })
    expect(over.status).toBe(409)
    expect(over.body).toEqual(CONFLICT)
    expect(over.body.error).toBe("At most 100 tokens per user; delete one first")
    const listed = (await user.api.get("/api/tokens")).body.data.tokens as Array<{ id: number; name: string }>
    expect(listed).toHaveLength(MAX_TOKENS_PER_USER)
    expect(listed.map((t) => t.name)).not.toContain("one too many")
    // Another user is not affected; freeing a place lets the next one in.
    expect((await (await service.user("few-tokens")).api.post("/api/tokens", { name: "x" })).status).toBe(201)
    expect((await user.api.delete(`/api/tokens/${listed.find((t) => t.name === "t1")!.id}`)).status).toBe(200)
    expect((await user.api.post("/api/tokens", { name: "after delete" })).status).toBe(201)
    expect((await user.api.post("/api/tokens", { name: "over again" })).status).toBe(409)
  })

  it(`a user has at most ${MAX_SESSIONS_PER_USER} browser sessions: minting one more signs out the oldest; expired ones are removed`, async () => {
    expect(MAX_SESSIONS_PER_USER).toBe(100)
    const user = await service.user("many-sessions")
    const minter = service.client({ authorization: `Bearer ${user.token}` })
    await query(service, (sql) =>
      sql`INSERT INTO auth_sessions (user_id, token_id, secret_hash, created_at, expires_at)
        VALUES (${user.id}, NULL, 'expired-one', now() - interval '40 days', now() - interval '10 days') RETURNING id`)
    const cookies: Array<string> = []
    for (let i = 0; i <= MAX_SESSIONS_PER_USER; i++) {
      const res = await minter.post("/api/auth/session")
      expect(res.status).toBe(200)
      cookies.push(res.headers.getSetCookie().find((c) => c.startsWith("steady_session="))!.split(";")[0]!)
    }
    const me = (cookie: string) => service.client({ cookie }).get("/api/auth/me")
    expect((await me(cookies[0]!)).status).toBe(401)
    expect((await me(cookies[1]!)).status).toBe(200)
    expect((await me(cookies[MAX_SESSIONS_PER_USER]!)).status).toBe(200)
    const [row] = await query<{ n: number; expired: number }>(service, (sql) =>
      sql`SELECT count(*)::int AS n, count(*) FILTER (WHERE secret_hash = 'expired-one')::int AS expired
        FROM auth_sessions WHERE user_id = ${user.id}`)
    expect(row).toEqual({ n: MAX_SESSIONS_PER_USER, expired: 0 })
  })

  it(`a user has at most ${MAX_WEBHOOKS_PER_USER} webhooks, even when asked for in parallel`, async () => {
    expect(MAX_WEBHOOKS_PER_USER).toBe(20)
    const user = await service.user("many-hooks")
    const results = await Promise.all(
      Array.from({ length: MAX_WEBHOOKS_PER_USER + 5 }, (_, i) =>
        user.api.post("/api/webhooks", { url: `http://127.0.0.1:9/hook/${i}`, events: ["task.created"] }))
    )
    const statuses = results.map((r) => r.status).sort()
    expect(statuses.filter((s) => s === 201)).toHaveLength(MAX_WEBHOOKS_PER_USER)
    expect(statuses.filter((s) => s === 409)).toHaveLength(5)
    for (const r of results.filter((r) => r.status === 409)) {
      expect(r.body).toEqual({ error: "At most 20 webhooks per user; delete one first", code: "CONFLICT", details: {} })
    }
    const listed = (await user.api.get("/api/webhooks")).body.data.webhooks as Array<{ id: number }>
    expect(listed).toHaveLength(MAX_WEBHOOKS_PER_USER)
    expect((await user.api.delete(`/api/webhooks/${listed[0]!.id}`)).status).toBe(200)
    expect((await user.api.post("/api/webhooks", { url: "http://127.0.0.1:9/again", events: ["task.created"] })).status).toBe(201)
  })

  it(`a webhook keeps at most ${MAX_PENDING_PER_WEBHOOK} deliveries waiting: a new event drops the oldest`, async () => {
    expect(MAX_PENDING_PER_WEBHOOK).toBe(1000)
    const user = await service.user("backlogged")
    const hook = await createWebhook(user.api, "http://127.0.0.1:9/down", ["task.created"])
    const other = await createWebhook(user.api, "http://127.0.0.1:9/other", ["task.created"])
    // A receiver that has been down for a while: exactly the cap is waiting already.
    await fillBacklog(user.id, hook.id, "old")
    const created = await createTask(user.api, { title: "One more" })
    const rows = await query<{ delivery_id: string; status: string }>(service, (sql) =>
      sql`SELECT delivery_id, status FROM webhook_deliveries WHERE webhook_id = ${hook.id} ORDER BY id`)
    expect(rows).toHaveLength(MAX_PENDING_PER_WEBHOOK + 1)
    expect(rows[0]).toEqual({ delivery_id: "old-1", status: "dropped" })
    expect(rows.slice(1).every((r) => r.status === "pending")).toBe(true)
    expect(rows[1]!.delivery_id).toBe("old-2")
    // The newest, the one just written, is kept; the other webhook is untouched.
    const [newest] = await query<{ body: string }>(service, (sql) =>
      sql`SELECT body FROM webhook_deliveries WHERE webhook_id = ${hook.id} ORDER BY id DESC LIMIT 1`)
    expect(JSON.parse(newest!.body).data.task.id).toBe(created.id)
    const others = await query<{ status: string }>(service, (sql) =>
      sql`SELECT status FROM webhook_deliveries WHERE webhook_id = ${other.id}`)
    expect(others).toEqual([{ status: "pending" }])
  })

  // A full backlog makes every write drop the oldest waiting delivery. Writes at once (or the
  // dispatcher leasing) reach for the same oldest rows: a write that waited for them queued
  // behind the others, and at 32 writes at once the queue ended in deadlocks and 503s.
  it.skipIf(databaseKind() !== "postgres")("a write at a full backlog does not wait for a delivery row another transaction holds", async () => {
    const user = await service.user("contended")
    const hook = await createWebhook(user.api, "http://127.0.0.1:9/down", ["task.created"])
    await fillBacklog(user.id, hook.id, "held")
    const holder = new Pg.Client({ connectionString: service.database.url })
    await holder.connect()
    try {
      // Another transaction holds the oldest waiting row, the one the next write would drop.
      await holder.query("BEGIN")
      await holder.query("SELECT id FROM webhook_deliveries WHERE webhook_id = $1 AND delivery_id = 'held-1' FOR UPDATE", [hook.id])
      const started = Date.now()
      const first = await user.api.post("/api/tasks", { title: "Past a held row" })
      expect(first.status).toBe(201)
      expect(Date.now() - started).toBeLessThan(2_000)
      await holder.query("ROLLBACK")
    } finally {
      await holder.end()
    }
    // The held row was skipped, so one more than the cap waits; the next write trims back to it.
    const waiting = () =>
      query<{ n: number }>(service, (sql) =>
        sql`SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = ${hook.id} AND status = 'pending'`)
    expect(await waiting()).toEqual([{ n: MAX_PENDING_PER_WEBHOOK + 1 }])
    await createTask(user.api, { title: "Back to the cap" })
    expect(await waiting()).toEqual([{ n: MAX_PENDING_PER_WEBHOOK }])
    const oldest = await query<{ delivery_id: string; status: string }>(service, (sql) =>
      sql`SELECT delivery_id, status FROM webhook_deliveries WHERE webhook_id = ${hook.id} ORDER BY id LIMIT 3`)
    expect(oldest).toEqual([
      { delivery_id: "held-1", status: "dropped" },
      { delivery_id: "held-2", status: "dropped" },
      { delivery_id: "held-3", status: "pending" }
    ])
  })
})

describe("dispatcher fairness", () => {
  let service: TestService
  let hanging: Receiver
  let fast: Receiver

  beforeAll(async () => {
    service = await startService({ webhookDispatch: true, webhookAllowPrivate: true })
    hanging = await startReceiver(() => "hang")
    fast = await startReceiver()
  })
  afterAll(async () => {
    await service?.stop()
    await hanging?.close()
    await fast?.close()
  })

  it(`one user's hanging receivers hold at most ${MAX_IN_FLIGHT_PER_USER} slots; another user's delivery goes out at once`, async () => {
    expect(MAX_IN_FLIGHT_PER_USER).toBe(4)
    const a = await service.user("fair-a")
    const b = await service.user("fair-b")
    await createWebhook(a.api, hanging.url("/a"), ["task.created"])
    await createWebhook(b.api, fast.url("/b"), ["task.created"])
    // 20 deliveries for A: more than the 16 slots, each hanging until the 10 s timeout.
    for (let i = 0; i < 20; i++) await createTask(a.api, { title: `A ${i}` })
    await hanging.waitFor(MAX_IN_FLIGHT_PER_USER, 5_000)
    await sleep(500)
    expect(hanging.received).toHaveLength(MAX_IN_FLIGHT_PER_USER)

    const sentAt = Date.now()
    const task = await createTask(b.api, { title: "B's" })
    const [got] = await fast.waitFor(1, 5_000)
    expect(got!.body.data.task.id).toBe(task.id)
    expect(got!.at - sentAt).toBeLessThan(2_000)
    // A still holds no more than its share.
    expect(hanging.received).toHaveLength(MAX_IN_FLIGHT_PER_USER)
  }, 30_000)
})
