import { Duration, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type AppConfigShape, DEFAULT_AI_TUNING } from "../src/kernel/AppConfig.js"
import { type FakeAi, type FakeRequest, startFakeAi } from "./support/fakeAi.js"
import { freezeServiceClock } from "./support/frozen-clock.js"
import { query } from "./support/rows.js"
import { type Client, startService, type TestService, type TestUser } from "./support/service.js"

/*
 * AI work on a task other users can see: reprocess is the owner's alone (404 for anyone
 * else, as for a private task); a task in a shared project is enriched from a prompt
 * without the owner's private context (ai_context, private project names) and is never
 * moved by the answer; a private task keeps the owner's context. Reprocess and quick take
 * are limited to 10 a minute per user (429 TOO_MANY_REQUESTS with Retry-After).
 */

const aiConfig = (fake: FakeAi): Partial<AppConfigShape> => ({
  aiProvider: fake.kind,
  aiBaseUrl: Option.some(fake.baseUrl),
  aiModel: Option.some("enrich-model"),
  aiTuning: {
    ...DEFAULT_AI_TUNING,
    enrichmentRetryDelays: [Duration.millis(200)],
    enrichmentTimeout: Duration.millis(3000),
    enrichmentPoll: Duration.millis(100),
    enrichmentBusyPace: Duration.millis(20),
    quickTakeTimeout: Duration.millis(3000),
    breakerThreshold: 1000
  }
})

const CONTEXT = "I am interviewing at Acme next week; keep it quiet."
const SECRET_PROJECT = "Job Hunt Secret"

/** The raw title an enrichment request asks about (the last line of its prompt). */
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

const requestsAbout = (fake: FakeAi, title: string) => fake.requests.filter((r) => rawTitle(r) === title)

const waitForRequests = async (fake: FakeAi, title: string, n: number, timeoutMs = 10_000) => {
  const until = Date.now() + timeoutMs
  while (requestsAbout(fake, title).length < n) {
    if (Date.now() > until) throw new Error(`expected ${n} model requests about ${title}`)
    await new Promise((r) => setTimeout(r, 20))
  }
  return requestsAbout(fake, title)
}

describe("AI work on tasks in shared projects", () => {
  let fake: FakeAi
  let service: TestService
  let alice: TestUser
  let bob: TestUser
  let inbox: number
  let secret: number
  let household: number
  /** Enrichment answers by raw title; quick takes get one line. */
  const answers = new Map<string, unknown>()

  const taskRow = async (id: number) =>
    (await query<{ enrichment_status: string | null; requested: string | null; queued: number }>(service, (sql) =>
      sql`SELECT enrichment_status, steady_iso(enrichment_requested_at) AS requested,
            (SELECT count(*)::int FROM ai_enrichment_queue q WHERE q.task_id = t.id) AS queued
          FROM tasks t WHERE t.id = ${id}`))[0]!

  beforeAll(async () => {
    fake = await startFakeAi("openai", (request) => {
      if (!request.wantsObject) return { text: "Sounds doable." }
      const title = rawTitle(request)
      const scripted = answers.get(title)
      if (typeof scripted === "function") return scripted(request)
      return { json: scripted ?? { title: `Enriched ${title}` } }
    })
    service = await startService(aiConfig(fake))
    alice = await service.user("alice-shared")
    bob = await service.user("bob-shared")
    await alice.api.patch("/api/user/preferences", { ai_context: CONTEXT })
    const projects = (await alice.api.get("/api/projects")).body.data.projects as Array<{ id: number; name: string }>
    inbox = projects.find((p) => p.name === "Inbox")!.id
    secret = (await alice.api.post("/api/projects", { name: SECRET_PROJECT })).body.data.id
    household = (await alice.api.post("/api/projects", { name: "Household", shared: true })).body.data.id
  })
  afterAll(async () => {
    await service?.stop()
    await fake?.close()
  })

  it("another user's reprocess of a task in a shared project is the private task's 404, and changes nothing", async () => {
    const shared = (await alice.api.post("/api/tasks", { title: "fix the shared sink", project_id: household, enrich: false })).body.data
    const hidden = (await alice.api.post("/api/tasks", { title: "alice's own errand", enrich: false })).body.data
    // Bob sees the shared task (and could edit it), but reprocess is not his to ask.
    expect((await bob.api.get(`/api/tasks/${shared.id}`)).status).toBe(200)

    const refused = await bob.api.post(`/api/tasks/${shared.id}/reprocess`)
    const privateOne = await bob.api.post(`/api/tasks/${hidden.id}/reprocess`)
    expect(refused.status).toBe(404)
    expect(privateOne.status).toBe(404)
    expect(refused.body).toEqual(privateOne.body)
    expect(refused.body).toEqual({ error: "Task not found", code: "NOT_FOUND", details: {} })

    await new Promise((r) => setTimeout(r, 400))
    expect(requestsAbout(fake, "fix the shared sink")).toEqual([])
    expect(await taskRow(shared.id)).toEqual({ enrichment_status: null, requested: null, queued: 0 })
    expect((await alice.api.get(`/api/tasks/${shared.id}`)).body.data).toMatchObject({
      title: "fix the shared sink",
      project_id: household,
      notes: "",
      priority: 0
    })
  })

  it("the owner's reprocess of a shared-project task sends no private context, and the answer cannot move it", async () => {
    answers.set("plan team offsite", {
      title: "Plan the team offsite",
      priority: 2,
      notes: "book a venue",
      project: SECRET_PROJECT
    })
    const task = (await alice.api.post("/api/tasks", { title: "plan team offsite", project_id: household, enrich: false })).body.data
    const res = await alice.api.post(`/api/tasks/${task.id}/reprocess`)
    expect(res.status).toBe(200)
    expect(res.body.data.enrichment_status).toBe("pending")
    const done = await waitForStatus(alice.api, task.id, "done")

    const [request] = requestsAbout(fake, "plan team offsite")
    expect(request).toBeDefined()
    expect(request!.prompt).not.toContain("Acme")
    expect(request!.prompt).not.toContain(SECRET_PROJECT)
    expect(request!.prompt).not.toContain("Inbox")
    // The rest of the answer applies; the project stays the shared one Bob can see.
    expect(done).toMatchObject({ title: "Plan the team offsite", priority: 2, notes: "book a venue", project_id: household })
    expect((await bob.api.get(`/api/tasks/${task.id}`)).body.data.project_id).toBe(household)
  })

  it("a private task's reprocess still carries the owner's context and private projects, and moves only into those", async () => {
    answers.set("update my cv", { title: "Update CV", project: SECRET_PROJECT })
    answers.set("tidy the garage", { title: "Tidy the garage", project: "Household" })
    const cv = (await alice.api.post("/api/tasks", { title: "update my cv", enrich: false })).body.data
    const garage = (await alice.api.post("/api/tasks", { title: "tidy the garage", enrich: false })).body.data
    expect((await alice.api.post(`/api/tasks/${cv.id}/reprocess`)).status).toBe(200)
    expect((await alice.api.post(`/api/tasks/${garage.id}/reprocess`)).status).toBe(200)

    expect(await waitForStatus(alice.api, cv.id, "done")).toMatchObject({ title: "Update CV", project_id: secret })
    const [request] = requestsAbout(fake, "update my cv")
    expect(request!.prompt).toContain(CONTEXT)
    expect(request!.prompt).toContain(SECRET_PROJECT)
    expect(request!.prompt).toContain("Inbox")
    // A shared project is not offered: what the private context made of a task is not
    // published to every user by the model's choice.
    expect(request!.prompt).not.toContain("Household")
    expect(await waitForStatus(alice.api, garage.id, "done")).toMatchObject({ title: "Tidy the garage", project_id: inbox })
  })

  it("a task moved into a shared project while the model answers gets none of that answer, and is asked again without the context", async () => {
    let calls = 0
    answers.set("prep questions", () =>
      ++calls === 1
        ? { json: { title: "Prep Acme interview questions", notes: "for the Acme interview" }, delayMs: 2000 }
        : { json: { title: "Prep questions", notes: "" } })
    const task = (await alice.api.post("/api/tasks", { title: "prep questions", enrich: false })).body.data
    expect((await alice.api.post(`/api/tasks/${task.id}/reprocess`)).status).toBe(200)
    const [first] = await waitForRequests(fake, "prep questions", 1)
    expect(first!.prompt).toContain(CONTEXT)
    expect((await alice.api.patch(`/api/tasks/${task.id}`, { project_id: household })).status).toBe(200)

    const [, second] = await waitForRequests(fake, "prep questions", 2)
    expect(second!.prompt).not.toContain("Acme")
    const done = await waitForStatus(alice.api, task.id, "done")
    expect(done).toMatchObject({ title: "Prep questions", notes: "", project_id: household })
    expect(JSON.stringify((await bob.api.get(`/api/tasks/${task.id}`)).body.data)).not.toContain("Acme")
  })

  it("the 11th reprocess in a minute is a 429 with Retry-After; a minute later it works again", async () => {
    const carol = await service.user("carol-limits")
    const task = (await carol.api.post("/api/tasks", { title: "limited task", enrich: false })).body.data
    const clock = freezeServiceClock(service)
    try {
      for (let i = 0; i < 10; i++) {
        expect((await carol.api.post(`/api/tasks/${task.id}/reprocess`)).status).toBe(200)
      }
      const limited = await carol.api.post(`/api/tasks/${task.id}/reprocess`)
      expect(limited.status).toBe(429)
      expect(limited.body).toMatchObject({ code: "TOO_MANY_REQUESTS", details: { retry_after: 6 } })
      expect(typeof limited.body.error).toBe("string")
      expect(limited.headers.get("retry-after")).toBe("6")
      // Another user's bucket is their own.
      const other = (await alice.api.post("/api/tasks", { title: "alice is not limited", enrich: false })).body.data
      expect((await alice.api.post(`/api/tasks/${other.id}/reprocess`)).status).toBe(200)

      clock.advance(5_000)
      expect((await carol.api.post(`/api/tasks/${task.id}/reprocess`)).status).toBe(429)
      clock.advance(55_000)
      expect((await carol.api.post(`/api/tasks/${task.id}/reprocess`)).status).toBe(200)
    } finally {
      clock.restore()
    }
  })

  it("the 11th quick take in a minute is a 429 with Retry-After; a minute later it works again", async () => {
    const dave = await service.user("dave-limits")
    const clock = freezeServiceClock(service)
    try {
      for (let i = 0; i < 10; i++) {
        const res = await dave.api.post("/api/ai/quick-take", { title: `idea ${i}` })
        expect(res.status).toBe(200)
      }
      const quickTakes = () => fake.requests.filter((r) => !r.wantsObject).length
      const before = quickTakes()
      const limited = await dave.api.post("/api/ai/quick-take", { title: "one too many" })
      expect(limited.status).toBe(429)
      expect(limited.body).toMatchObject({ code: "TOO_MANY_REQUESTS", details: { retry_after: 6 } })
      expect(limited.headers.get("retry-after")).toBe("6")
      expect(quickTakes()).toBe(before)
      clock.advance(60_000)
      expect((await dave.api.post("/api/ai/quick-take", { title: "next minute" })).status).toBe(200)
    } finally {
      clock.restore()
    }
  })
})
