import { Duration, Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AiGateway } from "../src/ai/AiGateway.js"
import { DEFAULT_AI_TUNING } from "../src/kernel/AppConfig.js"
import { type FakeAi, type FakeKind, type FakeRequest, startFakeAi } from "./support/fakeAi.js"
import { query } from "./support/rows.js"
import { startService, type TestService, type TestUser } from "./support/service.js"

/*
 * The synchronous AI helpers (spec §4.9) over HTTP against real fake providers on loopback
 * (OpenAI-compatible chat completions and Anthropic Messages): the model test, quick take,
 * what's next, the status page, provider failures and timeouts, and AI off.
 */

const aiConfig = (fake: FakeAi) => ({
  aiProvider: fake.kind,
  aiBaseUrl: Option.some(fake.baseUrl),
  aiModel: Option.some("base-model"),
  aiFeatureModels: {
    enrichment: Option.none(),
    quick_take: Option.some("quick-model"),
    whats_next: Option.none(),
    insights: Option.none()
  },
  aiLogPrompts: true,
  aiTuning: { ...DEFAULT_AI_TUNING, testTimeout: Duration.millis(800), quickTakeTimeout: Duration.millis(800) }
})

describe.each<FakeKind>(["openai", "anthropic"])("AI helpers against a fake %s provider", (kind) => {
  let fake: FakeAi
  let service: TestService
  let alice: TestUser

  beforeAll(async () => {
    fake = await startFakeAi(kind)
    service = await startService(aiConfig(fake))
    alice = await service.user(`alice-${kind}`, "Europe/Berlin")
  })
  afterAll(async () => {
    await service?.stop()
    await fake?.close()
  })

  it("POST /api/ai/test sends a minimal prompt through the feature's model and reports success", async () => {
    fake.script = () => ({ text: "OK" })
    const before = fake.requests.length
    const res = await alice.api.post("/api/ai/test", { feature: "quick_take" })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({
      success: true,
      provider: kind,
      provider_display: kind === "openai" ? "OpenAI-compatible" : "Anthropic",
      model: "quick-model",
      model_display: "quick-model",
      error: null
    })
    expect(Number.isInteger(res.body.data.duration_ms)).toBe(true)
    const sent = fake.requests[before]!
    expect(sent.path).toBe(kind === "openai" ? "/v1/chat/completions" : "/v1/messages?beta=true")
    expect(sent.body.model).toBe("quick-model")
    expect(sent.prompt).toContain("connectivity test")
    // Features without an override use SERVICE_AI_MODEL.
    const other = await alice.api.post("/api/ai/test", { feature: "insights" })
    expect(other.body.data.model).toBe("base-model")
    expect(fake.requests[before + 1]!.body.model).toBe("base-model")
  })

  it("POST /api/ai/test reports a provider failure in a 200 body, and an unknown feature is a 400", async () => {
    fake.script = () => ({ status: 500 })
    const failed = await alice.api.post("/api/ai/test", { feature: "enrichment" })
    expect(failed.status).toBe(200)
    expect(failed.body.data.success).toBe(false)
    expect(failed.body.data.error).toBe("provider answered HTTP 500")
    const bad = await alice.api.post("/api/ai/test", { feature: "poetry" })
    expect(bad.status).toBe(400)
    expect(bad.body.code).toBe("VALIDATION_ERROR")
  })

  it("POST /api/ai/test honours its timeout", async () => {
    fake.script = () => "hang"
    const started = Date.now()
    const res = await alice.api.post("/api/ai/test", { feature: "whats_next" })
    expect(res.status).toBe(200)
    expect(res.body.data.success).toBe(false)
    expect(res.body.data.error).toMatch(/^timed out after/)
    expect(Date.now() - started).toBeLessThan(5_000)
  })

  it("POST /api/ai/quick-take answers the first line, cut to 200 characters, with the user's list as context", async () => {
    await alice.api.post("/api/tasks", { title: "Renew passport", priority: 3 })
    fake.script = () => ({ text: `${"x".repeat(250)}\nsecond line` })
    const before = fake.requests.length
    const res = await alice.api.post("/api/ai/quick-take", { title: "Book flights", has_due_date: true })
    expect(res.status).toBe(200)
    expect(Array.from(res.body.data.text as string).length).toBe(200)
    expect(res.body.data.text).not.toContain("second line")
    const sent = fake.requests[before]!
    expect(sent.prompt).toContain("Book flights")
    expect(sent.prompt).toContain("Renew passport")
    expect(sent.prompt).toContain("It has a due date: yes")
    expect(sent.body.model).toBe("quick-model")
  })

  it("POST /api/ai/quick-take: a blank title is a 400 without a model call; a provider failure is a 503 with the reason", async () => {
    const before = fake.requests.length
    const blank = await alice.api.post("/api/ai/quick-take", { title: "   " })
    expect(blank.status).toBe(400)
    expect(fake.requests.length).toBe(before)
    fake.script = () => ({ status: 429 })
    const failed = await alice.api.post("/api/ai/quick-take", { title: "Book flights" })
    expect(failed.status).toBe(503)
    expect(failed.body).toEqual({
      error: "The AI provider failed",
      code: "SERVICE_UNAVAILABLE",
      details: { reason: "provider answered HTTP 429" }
    })
    fake.script = () => "hang"
    const slow = await alice.api.post("/api/ai/quick-take", { title: "Book flights" })
    expect(slow.status).toBe(503)
    expect(slow.body.details.reason).toMatch(/^timed out after/)
  })

  it("GET /api/ai/whats-next: null before any run; refresh keeps only real candidate ids, once each, at most 8", async () => {
    const bob = await service.user(`bob-${kind}`)
    const none = await bob.api.get("/api/ai/whats-next")
    expect(none.status).toBe(200)
    expect(none.body.data).toBeNull()
    // No candidates: a fixed answer, no model call.
    const before = fake.requests.length
    const empty = await bob.api.get("/api/ai/whats-next?refresh=true")
    expect(empty.body.data.tasks).toEqual([])
    expect(empty.body.data.summary).toContain("nothing to pick")
    expect(fake.requests.length).toBe(before)

    const ids: Array<number> = []
    for (let i = 0; i < 10; i++) ids.push((await bob.api.post("/api/tasks", { title: `Task ${i}`, enrich: false })).body.data.id)
    const farFuture = (await bob.api.post("/api/tasks", { title: "Far", due_at: "2099-01-01T09:00:00Z" })).body.data.id
    const other = (await alice.api.post("/api/tasks", { title: "Alice's", enrich: false })).body.data.id
    fake.script = () => ({
      json: {
        tasks: [
          { task_id: ids[3], reason: "first" },
          { task_id: 999_999, reason: "invented" },
          { task_id: other, reason: "someone else's" },
          { task_id: farFuture, reason: "not a candidate" },
          { task_id: ids[3], reason: "again" },
          ...ids.slice(4).map((id) => ({ task_id: id, reason: `r${id}` }))
        ],
        summary: "Start with Task 3."
      }
    })
    const res = await bob.api.get("/api/ai/whats-next?refresh=true")
    expect(res.status).toBe(200)
    expect(res.body.data.tasks.map((t: any) => t.task_id)).toEqual([ids[3], ...ids.slice(4, 11)])
    expect(res.body.data.tasks[0].reason).toBe("first")
    expect(res.body.data.summary).toBe("Start with Task 3.")
    expect(fake.requests.at(-1)!.wantsObject).toBe(true)
    expect(fake.requests.at(-1)!.prompt).not.toContain("Far")
    // Without refresh: the stored answer, and no call.
    const calls = fake.requests.length
    const stored = await bob.api.get("/api/ai/whats-next")
    expect(stored.body.data).toEqual(res.body.data)
    expect(fake.requests.length).toBe(calls)
  })

  it("insights: one session at a time, chunks counted, rules enforced in code, results by score", async () => {
    const dave = await service.user(`dave-${kind}`)
    const ids: Array<number> = []
    for (let i = 0; i < 25; i++) {
      ids.push((await dave.api.post("/api/tasks", { title: `Insight ${i}`, priority: i === 1 ? 4 : 0, enrich: false })).body.data.id)
    }
    // The first task is 30 days old; the rest were made just now.
    await query(service, (sql) => sql`UPDATE tasks SET created_at = created_at - interval '30 days' WHERE id = ${ids[0]!}`)
    const idsIn = (r: FakeRequest) => [...r.prompt.matchAll(/^(\d+) \| P/gm)].map((m) => Number(m[1]))
    fake.script = (r) => ({
      delayMs: 300,
      json: {
        results: [
          ...idsIn(r).map((id) => ({
            task_id: id,
            score: id === ids[0] ? 150 : id === ids[2] ? -5 : 50,
            commentary: `About ${id}`,
            signals: ["stale", "act_soon", "bogus", "quick_win"]
          })),
          { task_id: 999_999, score: 99, commentary: "invented", signals: [] },
          { task_id: idsIn(r)[0], score: 1, commentary: "repeat", signals: [] }
        ]
      }
    })
    const before = fake.requests.length
    const started = await dave.api.post("/api/ai/insights/generate")
    expect(started.status).toBe(200)
    expect(started.body.data.total_tasks).toBe(25)
    const again = await dave.api.post("/api/ai/insights/generate")
    expect(again.status).toBe(409)
    expect(again.body.code).toBe("CONFLICT")
    const sessionId = started.body.data.session_id as string
    const other = await alice.api.get(`/api/ai/insights/status?session_id=${sessionId}`)
    expect(other.status).toBe(404)

    let status: any
    for (let i = 0; i < 200; i++) {
      status = (await dave.api.get(`/api/ai/insights/status?session_id=${sessionId}`)).body.data
      if (status.status !== "running") break
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(status).toMatchObject({ session_id: sessionId, status: "complete", total_tasks: 25, completed: 25, progress_pct: 100, error: null })
    expect(status.finished_at).not.toBeNull()
    expect(fake.requests.length - before).toBe(2)
    expect(fake.requests.slice(before).map((r) => idsIn(r).length)).toEqual([20, 5])

    const results = (await dave.api.get("/api/ai/insights/results")).body.data
    expect(results.session_id).toBe(sessionId)
    expect(results.count).toBe(25)
    const byId = new Map((results.results as Array<any>).map((r) => [r.task_id, r]))
    expect(byId.has(999_999)).toBe(false)
    expect(results.results[0]).toMatchObject({ task_id: ids[0], score: 100, title: "Insight 0", signals: ["stale", "quick_win"] })
    expect(results.results.at(-1)).toMatchObject({ task_id: ids[2], score: 0 })
    expect(byId.get(ids[1])!.signals).toEqual(["act_soon", "quick_win"])
    expect(byId.get(ids[3])!.signals).toEqual(["quick_win"])
    expect(byId.get(ids[0])!.commentary).toBe(`About ${ids[0]}`)
  })

  it("insights: a provider failure fails the session; a session left running by a crash is reported failed", async () => {
    const erin = await service.user(`erin-${kind}`)
    await erin.api.post("/api/tasks", { title: "One task", enrich: false })
    fake.script = () => ({ status: 500 })
    const started = (await erin.api.post("/api/ai/insights/generate")).body.data
    let status: any
    for (let i = 0; i < 200; i++) {
      status = (await erin.api.get(`/api/ai/insights/status?session_id=${started.session_id}`)).body.data
      if (status.status !== "running") break
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(status).toMatchObject({ status: "failed", completed: 0, progress_pct: 0, error: "provider answered HTTP 500" })

    await query(service, (sql) =>
      sql`INSERT INTO ai_insight_sessions (id, user_id, status, total_tasks, completed, started_at, heartbeat_at)
        VALUES ('crashed', ${erin.id}, 'running', 40, 20, now() - interval '1 hour', now() - interval '1 hour')`)
    const crashed = (await erin.api.get("/api/ai/insights/status?session_id=crashed")).body.data
    expect(crashed).toMatchObject({ status: "failed", completed: 20, progress_pct: 50 })
    expect(crashed.error).toContain("interrupted")
    // A failed session does not block a new one.
    fake.script = () => ({ json: { results: [] } })
    expect((await erin.api.post("/api/ai/insights/generate")).status).toBe(200)
  })

  it("GET /api/ai/status lists the provider, the model per feature and the user's own calls", async () => {
    const res = await alice.api.get("/api/ai/status")
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({
      enabled: true,
      provider: kind,
      models: { enrichment: "base-model", quick_take: "quick-model", whats_next: "base-model", insights: "base-model" },
      pending_enrichments: 0
    })
    const calls = res.body.data.recent_calls as Array<any>
    expect(calls.length).toBeGreaterThanOrEqual(6)
    expect(calls.some((c) => c.feature === "quick_take" && c.status === "error" && c.error === "provider answered HTTP 429")).toBe(true)
    expect(calls.some((c) => c.feature === "quick_take" && c.status === "ok" && c.model === "quick-model")).toBe(true)
  })

  it("keeps prompt and answer text with SERVICE_AI_LOG_PROMPTS=true, and purges activity after 30 days", async () => {
    const rows = await query<{ prompt: string | null; answer: string | null }>(service, (sql) =>
      sql`SELECT prompt, answer FROM ai_activity WHERE user_id = ${alice.id} AND feature = 'quick_take' AND status = 'ok'`)
    // The model test's call is a quick_take too: find the quick take's own row, whatever the order.
    const quickTake = rows.find((row) => row.prompt?.includes("Book flights"))
    expect(quickTake, JSON.stringify(rows)).toBeDefined()
    expect(quickTake!.answer).toContain("x".repeat(50))
    await query(service, (sql) => sql`UPDATE ai_activity SET created_at = now() - interval '31 days' WHERE user_id = ${alice.id} AND feature = 'insights'`)
    await service.run(Effect.flatMap(AiGateway, (g) => g.purgeActivity))
    const left = await query<{ feature: string }>(service, (sql) => sql`SELECT feature FROM ai_activity WHERE user_id = ${alice.id}`)
    expect(left.length).toBeGreaterThan(0)
    expect(left.some((r) => r.feature === "insights")).toBe(false)
  })
})

describe("AI off", () => {
  let fake: FakeAi
  let service: TestService
  let carol: TestUser

  beforeAll(async () => {
    fake = await startFakeAi("openai")
    // The fake's address is configured but the provider is off: nothing may reach it.
    service = await startService({ aiProvider: "off", aiBaseUrl: Option.some(fake.baseUrl) })
    carol = await service.user("carol")
  })
  afterAll(async () => {
    await service?.stop()
    await fake?.close()
  })

  it("answers 503 on every AI path except the model test and the insights status, and calls nothing", async () => {
    for (
      const [method, path, body] of [
        ["POST", "/api/ai/quick-take", { title: "x" }],
        ["GET", "/api/ai/whats-next", undefined],
        ["GET", "/api/ai/whats-next?refresh=true", undefined],
        ["POST", "/api/ai/insights/generate", undefined],
        ["GET", "/api/ai/insights/results", undefined],
        ["GET", "/api/ai/status", undefined]
      ] as const
    ) {
      const res = await carol.api.request(method, path, body)
      expect({ path, status: res.status, code: res.body?.code }).toEqual({ path, status: 503, code: "SERVICE_UNAVAILABLE" })
    }
    const test = await carol.api.post("/api/ai/test", { feature: "enrichment" })
    expect(test.status).toBe(200)
    expect(test.body.data).toMatchObject({ success: false, provider: "off", duration_ms: 0 })
    expect(test.body.data.error).toContain("switched off")
    const status = await carol.api.get("/api/ai/insights/status?session_id=nope")
    expect(status.status).toBe(404)
    const missing = await carol.api.get("/api/ai/insights/status")
    expect(missing.status).toBe(400)
    // A NUL cannot reach a PostgreSQL text parameter: refused at the edge, not a 500 from the database.
    const nul = await carol.api.get("/api/ai/insights/status?session_id=a%00b")
    expect({ status: nul.status, code: nul.body?.code }).toEqual({ status: 400, code: "VALIDATION_ERROR" })
    // A title-only task is not queued for enrichment when AI is off.
    const task = await carol.api.post("/api/tasks", { title: "call mom tomorrow 5pm" })
    expect(task.status).toBe(201)
    expect(task.body.data.enrichment_status).toBeNull()
    expect(task.body.data.original_title).toBe("call mom tomorrow 5pm")
    await new Promise((r) => setTimeout(r, 300))
    expect(fake.requests).toEqual([])
  })
})
