import { Duration, Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type AppConfigShape, DEFAULT_AI_TUNING } from "../src/kernel/AppConfig.js"
import { Quotas } from "../src/quotas/Quotas.js"
import { databaseKind, freshDatabase, type TestDatabase } from "./support/database.js"
import { type FakeAi, type FakeRequest, startFakeAi } from "./support/fakeAi.js"
import { completionRows, periodRows, shiftPeriodBack, storedPeriod } from "./support/quotas.js"
import { header, type Receiver, sleep, startReceiver } from "./support/receiver.js"
import { query } from "./support/rows.js"
import { type Client, startService, type TestService, type TestUser } from "./support/service.js"
import { createTask } from "./support/tasks.js"
import { createWebhook, settled } from "./support/webhooks.js"

/*
 * Two full service layers on one PostgreSQL database, each serving the API
 * on its own port and running its own fibers (rollover, webhook dispatcher, enrichment), as
 * two processes behind a load balancer would. Nothing lives in one instance's memory: a
 * quota period is recorded once however many instances sweep, an event is delivered once,
 * a task is enriched with one model call, a review numbered on one instance is executed on
 * the other, and a token revoked on one is refused by the other on the next request.
 * The embedded database belongs to one process, so this runs on PostgreSQL only.
 */

const DAY = 86_400_000

/** The raw title an enrichment request asks about (the last line of its prompt). */
const rawTitle = (r: FakeRequest) => /Raw title: (.*)$/m.exec(r.prompt)?.[1] ?? ""

const config = (fake: FakeAi): Partial<AppConfigShape> => ({
  webhookDispatch: true,
  aiProvider: fake.kind,
  aiBaseUrl: Option.some(fake.baseUrl),
  aiModel: Option.some("enrich-model"),
  aiTuning: {
    ...DEFAULT_AI_TUNING,
    enrichmentRetryDelays: [Duration.millis(200), Duration.millis(200)],
    enrichmentTimeout: Duration.seconds(5),
    enrichmentPoll: Duration.millis(100),
    enrichmentBusyPace: Duration.millis(20),
    breakerThreshold: 1000
  }
})

/** Polls GET /api/tasks/{id} until its enrichment status is `status`. */
const enrichedTo = async (api: Client, id: number, status: string, timeoutMs = 20_000) => {
  const until = Date.now() + timeoutMs
  for (;;) {
    const res = await api.get(`/api/tasks/${id}`)
    if (res.body?.data?.enrichment_status === status) return res.body.data
    if (Date.now() > until) throw new Error(`task ${id} stayed ${res.body?.data?.enrichment_status}, expected ${status}`)
    await sleep(50)
  }
}

describe.skipIf(databaseKind() !== "postgres")("two instances on one PostgreSQL", () => {
  let db: TestDatabase
  let fake: FakeAi
  let receiver: Receiver
  let a: TestService
  let b: TestService | undefined
  let user: TestUser
  /** The same user's token on each instance. */
  let onA: Client
  let onB: Client

  beforeAll(async () => {
    db = await freshDatabase()
    fake = await startFakeAi("openai", (r) => ({ json: { title: `Enriched ${rawTitle(r)}` }, delayMs: 50 }))
    // A short pause in the receiver keeps deliveries in flight on both dispatchers at once.
    receiver = await startReceiver(() => ({ status: 200, delayMs: 20 + Math.floor(Math.random() * 60) }))
    a = await startService(config(fake), db)
    user = await a.user("twin")
    onA = user.api
  }, 120_000)
  afterAll(async () => {
    await b?.stop()
    await a?.stop()
    await receiver?.close()
    await fake?.close()
    await db?.drop()
  })

  it("rollover: each ended period is recorded once, with B's start-up sweep and both sweeping at once", async () => {
    // Eight daily quotas (target 3) with 0..7 logged, each three days behind.
    const quotas: Array<{ id: number; logged: number }> = []
    for (let logged = 0; logged < 8; logged++) {
      const q = await createTask(onA, { title: `Quota ${logged}`, progress_target: 3, rrule: "FREQ=DAILY" })
      if (logged > 0) expect((await onA.post(`/api/tasks/${q.id}/progress`, { delta: logged })).status).toBe(200)
      await shiftPeriodBack(a, q.id, 3)
      quotas.push({ id: q.id, logged })
    }
    const sweep = (service: TestService) => service.run(Effect.flatMap(Quotas, (q) => q.sweep()))
    // B starts (its rollover fiber sweeps at once) while A sweeps; then both sweep again together.
    const [started] = await Promise.all([startService(config(fake), db), sweep(a)])
    b = started
    onB = b.client({ authorization: `Bearer ${user.token}` })
    await Promise.all([sweep(a), sweep(b), sweep(a), sweep(b)])

    const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate())
    const starts = [3, 2, 1].map((d) => new Date(today - d * DAY).toISOString())
    for (const { id, logged } of quotas) {
      const rows = await periodRows(a, id)
      expect(rows.map((r) => [r.period_start, r.count, r.met])).toEqual(starts.map((s, i) => [s, i === 0 ? logged : 0, i === 0 && logged >= 3]))
      expect((await completionRows(a, id)).length).toBe(logged >= 3 ? 1 : 0)
      expect(await storedPeriod(a, id)).toEqual({ start: new Date(today).toISOString(), end: new Date(today + DAY).toISOString(), current: 0 })
    }
    // Met quotas: one completion each in the task and in the day's statistics.
    const met = quotas.filter((q) => q.logged >= 3).length
    const [stats] = await query<{ n: number }>(a, (sql) =>
      sql`SELECT COALESCE(sum(completions), 0)::int AS n FROM daily_stats WHERE user_id = ${user.id}`)
    expect(stats!.n).toBe(met)
    for (const { id, logged } of quotas) expect((await onB.get(`/api/tasks/${id}`)).body.data.completion_count).toBe(logged >= 3 ? 1 : 0)
  }, 120_000)

  it("webhooks: events written through both instances are each delivered once", async () => {
    const hook = await createWebhook(onA, receiver.url(), ["task.created"])
    // Not title-only (a priority), so enrichment stays out of this count.
    const created = await Promise.all(
      Array.from({ length: 24 }, (_, i) => createTask(i % 2 === 0 ? onA : onB, { title: `Event ${i}`, priority: 1 }))
    )
    await receiver.waitFor(24, 30_000)
    await settled(a, user.id)
    await sleep(1_500)
    const ids = receiver.received.map((r) => header(r, "x-service-delivery"))
    expect(ids).toHaveLength(24)
    expect(new Set(ids).size).toBe(24)
    const taskIds = receiver.received.map((r) => r.body.data.task.id).sort((x: number, y: number) => x - y)
    expect(taskIds).toEqual(created.map((t) => t.id).sort((x, y) => x - y))
    const [attempts] = await query<{ n: number }>(a, (sql) =>
      sql`SELECT count(*)::int AS n FROM webhook_attempts WHERE webhook_id = ${hook.id}`)
    expect(attempts!.n).toBe(24)
  }, 60_000)

  it("enrichment: title-only tasks created on either instance get one model call each", async () => {
    const before = fake.requests.length
    const ids: Array<number> = []
    for (let i = 0; i < 10; i++) {
      const res = await (i % 2 === 0 ? onA : onB).post("/api/tasks", { title: `twin errand ${i}` })
      expect(res.status).toBe(201)
      ids.push(res.body.data.id)
    }
    for (const [i, id] of ids.entries()) {
      expect(await enrichedTo(i % 2 === 0 ? onB : onA, id, "done")).toMatchObject({ title: `Enriched twin errand ${i}` })
    }
    await sleep(500)
    expect(fake.requests.slice(before).map(rawTitle).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `twin errand ${i}`).sort())
  }, 60_000)

  it("review: a session numbered on A is executed on B, once", async () => {
    const overdue = await createTask(onA, { title: "Overdue on A", due_at: new Date(Date.now() - DAY).toISOString(), priority: 1 })
    const soon = await createTask(onB, { title: "Due soon on B", due_at: new Date(Date.now() + DAY / 2).toISOString(), priority: 1 })
    const review = await onA.get("/api/review")
    expect(review.status).toBe(200)
    const numbered = review.body.data.groups.flatMap((g: any) => g.tasks.map((t: any) => [t.seq, t.id]))
    const seqOf = (id: number) => numbered.find(([, taskId]: [number, number]) => taskId === id)![0]
    const body = {
      session_id: review.body.data.session_id,
      actions: [{ type: "done", targets: [String(seqOf(overdue.id))] }, { type: "skip", targets: [String(seqOf(soon.id))] }]
    }
    const executed = await onB.post("/api/review/execute", body)
    expect(executed.status, executed.text).toBe(200)
    expect(executed.body.data).toEqual({
      executed: true,
      results: [{ type: "done", task_ids: [overdue.id], count: 1 }, { type: "skip", task_ids: [soon.id], count: 1 }],
      total_affected: 2
    })
    expect((await onA.get(`/api/tasks/${overdue.id}`)).body.data.done).toBe(true)
    // Taken: neither instance runs it again.
    expect((await onA.post("/api/review/execute", body)).status).toBe(409)
    expect((await onB.post("/api/review/execute", body)).status).toBe(409)
  })

  it("a token revoked on A is refused by B on the next request", async () => {
    const minted = await onA.post("/api/tokens", { name: "second device" })
    expect(minted.status).toBe(201)
    const second = b!.client({ authorization: `Bearer ${minted.body.data.token}` })
    expect((await second.get("/api/tasks")).status).toBe(200)
    expect((await onA.delete(`/api/tokens/${minted.body.data.id}`)).status).toBe(200)
    const refused = await second.get("/api/tasks")
    expect(refused.status).toBe(401)
    // The user's other token still works on both.
    expect((await onB.get("/api/tasks")).status).toBe(200)
  })
})
