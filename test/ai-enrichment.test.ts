import { Duration, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { instantOf } from "../src/kernel/LocalTime.js"
import { type AppConfigShape, DEFAULT_AI_TUNING } from "../src/kernel/AppConfig.js"
import { databaseKind, freshDatabase, type TestDatabase } from "./support/database.js"
import { type FakeAi, type FakeKind, type FakeRequest, startFakeAi } from "./support/fakeAi.js"
import { outboxEvents, query } from "./support/rows.js"
import { type Client, startService, type TestService, type TestUser } from "./support/service.js"

/*
 * AI enrichment: a title-only create is queued in the database and enriched in the
 * background through the real provider clients (fake OpenAI-compatible and Anthropic
 * servers on loopback); the result is one undoable `enrich` step that keeps the user's own
 * edits and drops invalid fields alone; failures retry and then fail; reprocess re-queues;
 * pending work survives a restart; two instances make one model call per task.
 */

const aiConfig = (fake: FakeAi, tuning: Partial<AppConfigShape["aiTuning"]> = {}): Partial<AppConfigShape> => ({
  aiProvider: fake.kind,
  aiBaseUrl: Option.some(fake.baseUrl),
  aiModel: Option.some("enrich-model"),
  aiTuning: {
    ...DEFAULT_AI_TUNING,
    enrichmentRetryDelays: [Duration.millis(200), Duration.millis(200)],
    enrichmentTimeout: Duration.millis(1500),
    enrichmentPoll: Duration.millis(100),
    enrichmentBusyPace: Duration.millis(20),
    breakerThreshold: 1000,
    ...tuning
  }
})

/** The raw title a request asks about (the last line of the enrichment prompt). */
const rawTitle = (r: FakeRequest) => /Raw title: (.*)$/m.exec(r.prompt)?.[1] ?? ""

const waitForStatus = async (api: Client, id: number, status: string, timeoutMs = 15_000) => {
  const until = Date.now() + timeoutMs
  for (;;) {
    const res = await api.get(`/api/tasks/${id}`)
    if (res.body?.data?.enrichment_status === status) return res.body.data
    if (Date.now() > until) throw new Error(`task ${id} stayed ${res.body?.data?.enrichment_status}, expected ${status}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

const waitForRequest = async (fake: FakeAi, title: string, timeoutMs = 10_000) => {
  const until = Date.now() + timeoutMs
  while (!fake.requests.some((r) => rawTitle(r) === title)) {
    if (Date.now() > until) throw new Error(`no model request about ${title}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe.each<FakeKind>(["openai", "anthropic"])("enrichment through a fake %s provider", (kind) => {
  let fake: FakeAi
  let service: TestService
  let user: TestUser
  let errands: number
  /** Answers by raw title; anything else gets a plain title back. */
  const answers = new Map<string, unknown>()

  beforeAll(async () => {
    fake = await startFakeAi(kind, (request) => {
      const title = rawTitle(request)
      const scripted = answers.get(title)
      if (typeof scripted === "function") return scripted(request)
      return { json: scripted ?? { title: `Enriched ${title}` } }
    })
    service = await startService(aiConfig(fake))
    user = await service.user(`enrich-${kind}`, "America/New_York")
    errands = (await user.api.post("/api/projects", { name: "Errands" })).body.data.id
    await user.api.patch("/api/user/preferences", { ai_context: "I work nights." })
  })
  afterAll(async () => {
    await service?.stop()
    await fake?.close()
  })

  it("answers 201 at once with the task pending, then applies the model's fields", async () => {
    answers.set("call mom tmrw 5pm errands", {
      title: "Call mom",
      due_at: "2030-05-02T17:00",
      priority: 2,
      labels: ["family"],
      project: "ERRANDS",
      rrule: null,
      notes: "about the party"
    })
    const created = await user.api.post("/api/tasks", { title: "call mom tmrw 5pm errands" })
    expect(created.status).toBe(201)
    expect(created.body.data).toMatchObject({ enrichment_status: "pending", title: "call mom tmrw 5pm errands", priority: 0 })
    const task = await waitForStatus(user.api, created.body.data.id, "done")
    expect(task).toMatchObject({
      title: "Call mom",
      original_title: "call mom tmrw 5pm errands",
      due_at: instantOf("America/New_York", 2030, 5, 2, 17, 0).toISOString(),
      priority: 2,
      labels: ["family"],
      project_id: errands,
      notes: "about the party",
      rrule: null
    })
    const request = fake.requests.find((r) => rawTitle(r) === "call mom tmrw 5pm errands")!
    expect(request.wantsObject).toBe(true)
    expect(request.body.model).toBe("enrich-model")
    expect(request.prompt).toContain("America/New_York")
    expect(request.prompt).toContain("Errands")
    expect(request.prompt).toContain("Inbox")
    expect(request.prompt).toContain("I work nights.")
    const events = (await outboxEvents(service, user.id)).filter((e) => e.task_id === task.id)
    expect(events.map((e) => e.event)).toEqual(["task.created", "task.updated"])
    expect(events[1]!.payload.fields_changed).toEqual(
      expect.arrayContaining(["title", "due_at", "priority", "labels", "project_id", "notes"])
    )
    expect(events[1]!.payload.task).toMatchObject({ title: "Call mom", enrichment_status: "done" })
    // SERVICE_AI_LOG_PROMPTS is off here: the call is logged without its text.
    const activity = await query<{ status: string; prompt: string | null; answer: string | null }>(service, (sql) =>
      sql`SELECT status, prompt, answer FROM ai_activity WHERE user_id = ${user.id} AND feature = 'enrichment'`)
    expect(activity.length).toBeGreaterThan(0)
    expect(activity.every((a) => a.prompt === null && a.answer === null)).toBe(true)

    // One undo takes the whole enrichment back, and only it.
    const undo = await user.api.post("/api/undo")
    expect(undo.status).toBe(200)
    expect(undo.body.data.undone_action).toBe("enrich")
    const back = (await user.api.get(`/api/tasks/${task.id}`)).body.data
    expect(back).toMatchObject({ title: "call mom tmrw 5pm errands", due_at: null, priority: 0, labels: [], notes: "" })
    expect(back.project_id).not.toBe(errands)
    await user.api.post("/api/redo")
    expect((await user.api.get(`/api/tasks/${task.id}`)).body.data.title).toBe("Call mom")
  })

  it("keeps a field the user changed before the answer arrived", async () => {
    answers.set("slow one", (_: FakeRequest) => ({ json: { title: "Model title", priority: 1, labels: ["model"] }, delayMs: 800 }))
    const created = await user.api.post("/api/tasks", { title: "slow one" })
    const id = created.body.data.id
    await waitForRequest(fake, "slow one")
    const edit = await user.api.patch(`/api/tasks/${id}`, { title: "My own title", priority: 4 })
    expect(edit.status).toBe(200)
    const task = await waitForStatus(user.api, id, "done")
    expect(task).toMatchObject({ title: "My own title", priority: 4, labels: ["model"] })
  })

  it("drops an invalid field on its own and applies the rest", async () => {
    answers.set("messy answer", {
      title: "Tidy title",
      priority: 9,
      labels: ["ok"],
      rrule: "FREQ=DAILY;COUNT=3",
      due_at: "next tuesday-ish",
      project: "No Such Project",
      recurrence_mode: "whenever"
    })
    const created = await user.api.post("/api/tasks", { title: "messy answer" })
    const task = await waitForStatus(user.api, created.body.data.id, "done")
    expect(task).toMatchObject({ title: "Tidy title", labels: ["ok"], priority: 0, rrule: null, due_at: null, recurrence_mode: "from_due" })
    answers.set("bad rule", { title: "Water plants", rrule: "FREQ=SOMETIMES", notes: "the ferns" })
    const second = await user.api.post("/api/tasks", { title: "bad rule" })
    expect(await waitForStatus(user.api, second.body.data.id, "done")).toMatchObject({
      title: "Water plants",
      rrule: null,
      notes: "the ferns"
    })
  })

  it("a recurring answer sets the rule and its first occurrence", async () => {
    answers.set("gym every monday 7am", { title: "Gym", rrule: "FREQ=WEEKLY;BYDAY=MO", due_at: "2030-01-07T07:00" })
    const created = await user.api.post("/api/tasks", { title: "gym every monday 7am" })
    const task = await waitForStatus(user.api, created.body.data.id, "done")
    expect(task).toMatchObject({ title: "Gym", rrule: "FREQ=WEEKLY;BYDAY=MO", is_recurring: true, anchor_time: "07:00" })
  })

  it("retries a failing provider on the schedule, then marks the task failed", async () => {
    let calls = 0
    answers.set("doomed", () => (++calls === 1 ? "hang" : { status: 500 }))
    const created = await user.api.post("/api/tasks", { title: "doomed" })
    const task = await waitForStatus(user.api, created.body.data.id, "failed")
    expect(task.title).toBe("doomed")
    // 1 attempt + one retry per delay (2), no more.
    await new Promise((r) => setTimeout(r, 600))
    expect(fake.requests.filter((r) => rawTitle(r) === "doomed").length).toBe(3)
    const status = await user.api.get("/api/ai/status")
    const errors = (status.body.data.recent_calls as Array<any>).filter((c) => c.feature === "enrichment" && c.status === "error")
    expect(errors.map((c) => c.error)).toEqual(expect.arrayContaining(["provider answered HTTP 500", "timed out after 1s 500ms"]))
  })

  it("POST /api/tasks/{id}/reprocess re-queues enrichment from original_title", async () => {
    answers.set("doomed", { title: "Saved at last" })
    const failed = (await user.api.get("/api/tasks?search=doomed")).body.data.tasks[0]
    const res = await user.api.post(`/api/tasks/${failed.id}/reprocess`)
    expect(res.status).toBe(200)
    expect(res.body.data.enrichment_status).toBe("pending")
    const task = await waitForStatus(user.api, failed.id, "done")
    expect(task).toMatchObject({ title: "Saved at last", original_title: "doomed" })
  })

  it("a reprocess while an answer is on its way discards that answer", async () => {
    let calls = 0
    answers.set("raced", () => (++calls === 1 ? { json: { title: "Stale answer" }, delayMs: 1000 } : { json: { title: "Fresh answer" } }))
    const created = await user.api.post("/api/tasks", { title: "raced" })
    await waitForRequest(fake, "raced")
    const again = await user.api.post(`/api/tasks/${created.body.data.id}/reprocess`)
    expect(again.body.data.enrichment_status).toBe("pending")
    expect(await waitForStatus(user.api, created.body.data.id, "done")).toMatchObject({ title: "Fresh answer" })
    // The slow first answer lands afterwards and changes nothing.
    await new Promise((r) => setTimeout(r, 1200))
    expect(calls).toBe(2)
    expect((await user.api.get(`/api/tasks/${created.body.data.id}`)).body.data.title).toBe("Fresh answer")
  })

  it("enrich false prevents it, enrich true forces it, structured fields bypass it", async () => {
    const before = fake.requests.length
    const off = await user.api.post("/api/tasks", { title: "plain one", enrich: false })
    const structured = await user.api.post("/api/tasks", { title: "structured one", priority: 2 })
    const labelled = await user.api.post("/api/tasks", { title: "labelled one", labels: ["x"] })
    expect([off, structured, labelled].map((r) => r.body.data.enrichment_status)).toEqual([null, null, null])
    answers.set("forced one", { title: "Forced" })
    const forced = await user.api.post("/api/tasks", { title: "forced one", priority: 3, enrich: true })
    expect(forced.body.data.enrichment_status).toBe("pending")
    const task = await waitForStatus(user.api, forced.body.data.id, "done")
    // The user's own priority was in the create, so the model's title applies and priority stays.
    expect(task).toMatchObject({ title: "Forced", priority: 3 })
    expect(fake.requests.slice(before).map(rawTitle)).toEqual(["forced one"])
  })
})

describe("the circuit breaker", () => {
  it("pauses the queue after repeated provider failures instead of hammering the provider", async () => {
    const fake = await startFakeAi("openai", () => ({ status: 503 }))
    const service = await startService(aiConfig(fake, {
      breakerThreshold: 2,
      breakerCooldown: Duration.seconds(2),
      enrichmentRetryDelays: Array.from({ length: 6 }, () => Duration.millis(50))
    }))
    try {
      const user = await service.user("breaker")
      await user.api.post("/api/tasks", { title: "provider is down" })
      await fake.waitFor(2)
      const openedAt = Date.now()
      await new Promise((r) => setTimeout(r, 1200))
      // Without the breaker a 50 ms retry schedule would have sent several more by now.
      expect(fake.requests.length).toBe(2)
      await fake.waitFor(3, 5_000)
      expect(Date.now() - openedAt).toBeGreaterThanOrEqual(1_500)
    } finally {
      await service.stop()
      await fake.close()
    }
  })
})

describe("a request the worker has not picked up yet", () => {
  let fake: FakeAi
  let service: TestService

  beforeAll(async () => {
    fake = await startFakeAi("openai", (request) =>
      rawTitle(request) === "holds the slot"
        ? "hang"
        : { json: { title: "Model title", priority: 2, labels: ["model"], notes: "from the model" } })
    // While creates stream in (here: one within 30 s) the worker runs one request at a time;
    // the hanging one holds that slot until its 6 s timeout, so the next create waits as a
    // request on its task row only.
    service = await startService(aiConfig(fake, {
      enrichmentTimeout: Duration.seconds(6),
      enrichmentRetryDelays: [Duration.seconds(60)],
      enrichmentBusyWindow: Duration.seconds(30)
    }))
  })
  afterAll(async () => {
    await service?.stop()
    await fake?.close()
  })

  it("is enriched from the task as created: an edit made before it was queued is kept", async () => {
    const user = await service.user("not-yet")
    await user.api.post("/api/tasks", { title: "holds the slot" })
    await fake.waitFor(1)
    const created = (await user.api.post("/api/tasks", { title: "buy stamps", notes: "the blue ones" })).body.data
    expect(created.enrichment_status).toBe("pending")
    const queued = () =>
      query<{ n: number }>(service, (sql) => sql`SELECT count(*)::int AS n FROM ai_enrichment_queue WHERE task_id = ${created.id}`)
    expect((await queued())[0]!.n).toBe(0)
    expect((await user.api.get("/api/ai/status")).body.data.pending_enrichments).toBe(2)
    // The create sends no baseline: the row is its own until the first update keeps it.
    const baseline = async () =>
      (await query<{ baseline: Record<string, unknown> | null }>(service, (sql) =>
        sql`SELECT enrichment_baseline AS baseline FROM tasks WHERE id = ${created.id}`))[0]!.baseline
    expect(await baseline()).toBeNull()
    const edit = await user.api.patch(`/api/tasks/${created.id}`, { title: "Buy stamps today", priority: 4 })
    expect(edit.body.data.enrichment_status).toBe("pending")
    expect((await queued())[0]!.n).toBe(0)
    expect(await baseline()).toMatchObject({ title: "buy stamps", priority: 0, notes: "the blue ones", labels: [], due_at: null })
    // A second edit leaves the baseline as created.
    expect((await user.api.patch(`/api/tasks/${created.id}`, { labels: ["mine"] })).status).toBe(200)
    expect(await baseline()).toMatchObject({ title: "buy stamps", labels: [] })

    const task = await waitForStatus(user.api, created.id, "done", 20_000)
    // The user's title, priority and labels stay; the notes, untouched since the create, take
    // the model's answer. The model was asked about the title as created.
    expect(task).toMatchObject({ title: "Buy stamps today", priority: 4, labels: ["mine"], notes: "from the model", original_title: "buy stamps" })
    expect(fake.requests.map(rawTitle)).toContain("buy stamps")
    expect(fake.requests.map(rawTitle)).not.toContain("Buy stamps today")
    expect(await baseline()).toBeNull()
  })
})

describe("enrichment across a restart", () => {
  let db: TestDatabase
  let fake: FakeAi

  beforeAll(async () => {
    db = await freshDatabase()
    fake = await startFakeAi("openai", () => "hang")
  })
  afterAll(async () => {
    await fake?.close()
    await db?.drop()
  })

  it("work pending when the service stops is enriched after it starts again", async () => {
    const first = await startService(aiConfig(fake, { enrichmentTimeout: Duration.seconds(30) }), db)
    const user = await first.user("restart")
    const created = await user.api.post("/api/tasks", { title: "survives a restart" })
    expect(created.body.data.enrichment_status).toBe("pending")
    await fake.waitFor(1)
    await first.stop()

    fake.script = () => ({ json: { title: "Survived", priority: 1 } })
    const second = await startService(aiConfig(fake), db)
    try {
      const again = await second.user("restart")
      const task = await waitForStatus(again.api, created.body.data.id, "done")
      expect(task).toMatchObject({ title: "Survived", priority: 1 })
    } finally {
      await second.stop()
    }
  })
})

describe.skipIf(databaseKind() !== "postgres")("two instances on one PostgreSQL", () => {
  it("make one model call per task", async () => {
    const db = await freshDatabase()
    const fake = await startFakeAi("openai", (r) => ({ json: { title: `Done ${rawTitle(r)}` }, delayMs: 100 }))
    const a = await startService(aiConfig(fake), db)
    const b = await startService(aiConfig(fake), db)
    try {
      const user = await a.user("twins")
      const ids: Array<number> = []
      for (let i = 0; i < 12; i++) ids.push((await user.api.post("/api/tasks", { title: `twin task ${i}` })).body.data.id)
      for (const id of ids) await waitForStatus(user.api, id, "done")
      const titles = fake.requests.map(rawTitle).sort()
      expect(titles).toEqual(Array.from({ length: 12 }, (_, i) => `twin task ${i}`).sort())
    } finally {
      await a.stop()
      await b.stop()
      await fake.close()
      await db.drop()
    }
  })
})
