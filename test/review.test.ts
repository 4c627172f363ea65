import { Option } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { REVIEW_SESSION_LIFETIME_MS } from "../src/triage/Review.js"
import { freshDatabase, type TestDatabase } from "./support/database.js"
import { type FrozenClock, freezeServiceClock } from "./support/frozen-clock.js"
import { snapshot, undoEntries } from "./support/rows.js"
import { type Client, makeClient, startService, type TestService, type TestUser } from "./support/service.js"
import { createTask } from "./support/tasks.js"

/**
 * GET /api/review and POST /api/review/execute (spec §4.4, §8), in the fixed shape TriageApi.ts
 * declares. Sessions live in the database; their expiry is tested by stopping
 * the service clock (it runs in this process on Date.now plus the SERVICE_NOW offset) and
 * stepping it over the hour exactly.
 *
 * The clock is pinned at 12:00 UTC on Tuesday 10 March 2026; every user is on UTC.
 */
const NOW = new Date("2026-03-10T12:00:00Z")
/** A small global bound on stored sessions, so its eviction can be seen with a few users. */
const SESSION_LIMIT = 3
const CONFIG = { serviceNow: Option.some(NOW), reviewSessionLimit: SESSION_LIMIT }
const UNTIL = "2026-03-12T09:00:00.000Z"

type Task = Record<string, any>
interface Review {
  session_id: string
  groups: Array<{ label: string; tasks: Array<{ seq: number; id: number; title: string; due_at: string; priority: number; rrule: string | null; labels: Array<string> }> }>
  total_tasks: number
}

describe("review sessions (spec §4.4)", () => {
  let database: TestDatabase
  let service: TestService
  let clock: FrozenClock | undefined
  let counter = 0
  const newUser = (): Promise<TestUser> => service.user(`review${++counter}`, "UTC")

  const review = async (api: Client): Promise<Review> => {
    const res = await api.get("/api/review")
    if (res.status !== 200) throw new Error(`GET /api/review -> ${res.status} ${res.text}`)
    expect(Object.keys(res.body)).toEqual(["data"])
    expect(Object.keys(res.body.data).sort()).toEqual(["groups", "session_id", "total_tasks"])
    return res.body.data
  }
  const execute = (api: Client, body: unknown) => api.post("/api/review/execute", body)
  const read = async (api: Client, id: number): Promise<Task> => (await api.get(`/api/tasks/${id}`)).body.data
  const seqs = (r: Review) => r.groups.map((g) => [g.label, g.tasks.map((t) => [t.seq, t.title])])

  /** A user with four overdue and two upcoming tasks, plus tasks review leaves out. */
  const setUp = async () => {
    const user = await newUser()
    const make = (title: string, body: Record<string, unknown>) => createTask(user.api, { title, ...body })
    const t = {
      o2: await make("o2", { due_at: "2026-03-10T11:00:00Z" }),
      o1: await make("o1", { due_at: "2026-03-08T09:00:00Z", priority: 1, labels: ["home"] }),
      u2: await make("u2", { due_at: "2026-03-11T11:00:00Z" }),
      o3: await make("o3", { due_at: "2026-03-09T09:00:00Z", rrule: "FREQ=DAILY" }),
      u1: await make("u1", { due_at: "2026-03-10T13:00:00Z", priority: 2 }),
      o4: await make("o4", { due_at: "2026-03-09T12:00:00Z", priority: 4 }),
      beyond: await make("beyond", { due_at: "2026-03-11T13:00:00Z" }),
      undated: await make("undated", {}),
      reminder: await make("reminder", { due_at: "2026-03-10T14:00:00Z", is_reminder: true }),
      quota: await make("quota", { progress_target: 2, rrule: "FREQ=WEEKLY" }),
      done: await make("done", { due_at: "2026-03-09T09:00:00Z" }),
      trashed: await make("trashed", { due_at: "2026-03-09T09:00:00Z" })
    }
    expect((await user.api.post(`/api/tasks/${t.done.id}/done`)).status).toBe(200)
    expect((await user.api.delete(`/api/tasks/${t.trashed.id}`)).status).toBe(200)
    return { user, t }
  }
  const EXPECTED_SEQS = [
    ["Overdue", [[1, "o1"], [2, "o3"], [3, "o4"], [4, "o2"]]],
    ["Due in the next 24 hours", [[5, "u1"], [6, "u2"]]]
  ]

  let bob: TestUser
  let sharedProject: number

  beforeAll(async () => {
    database = await freshDatabase()
    service = await startService(CONFIG, database)
    bob = await service.user("review-bob", "UTC")
    sharedProject = (await bob.api.post("/api/projects", { name: "Shared", shared: true })).body.data.id
    await createTask(bob.api, { title: "Bob overdue in shared", due_at: "2026-03-09T09:00:00Z", project_id: sharedProject })
  })
  afterEach(() => {
    clock?.restore()
    clock = undefined
  })
  afterAll(async () => {
    await service.stop()
    await database.drop()
  })

  it("numbers overdue tasks first, then those due within 24 hours, each by due date; only the caller's own open tasks", async () => {
    const { t, user } = await setUp()
    const r = await review(user.api)
    expect(r.session_id).toMatch(/^[0-9a-f-]{36}$/)
    expect(seqs(r)).toEqual(EXPECTED_SEQS)
    expect(r.total_tasks).toBe(6)
    expect(r.groups[0]!.tasks[0]).toEqual({
      seq: 1,
      id: t.o1.id,
      title: "o1",
      due_at: "2026-03-08T09:00:00.000Z",
      priority: 1,
      rrule: null,
      labels: ["home"]
    })
    expect(r.groups[0]!.tasks[1]).toEqual({
      seq: 2,
      id: t.o3.id,
      title: "o3",
      due_at: "2026-03-09T09:00:00.000Z",
      priority: 0,
      rrule: "FREQ=DAILY",
      labels: []
    })
    // Each review is a new session with the same numbers.
    const again = await review(user.api)
    expect(again.session_id).not.toBe(r.session_id)
    expect(seqs(again)).toEqual(EXPECTED_SEQS)
    // Bob sees only his own task, not the caller's; the caller never sees Bob's shared one.
    expect(seqs(await review(bob.api))).toEqual([
      ["Overdue", [[1, "Bob overdue in shared"]]],
      ["Due in the next 24 hours", []]
    ])
    // Starting a review writes nothing.
    const before = await snapshot(service)
    await review(user.api)
    expect(await snapshot(service)).toEqual(before)
  })

  it("the 24-hour window and the overdue line are exact", async () => {
    clock = freezeServiceClock(service)
    const user = await newUser()
    await clock.set(NOW)
    await createTask(user.api, { title: "at now", due_at: "2026-03-10T12:00:00Z" })
    await createTask(user.api, { title: "a moment ago", due_at: "2026-03-10T11:59:59.999Z" })
    await createTask(user.api, { title: "just inside", due_at: "2026-03-11T11:59:59.999Z" })
    await createTask(user.api, { title: "exactly 24 h", due_at: "2026-03-11T12:00:00Z" })
    expect(seqs(await review(user.api))).toEqual([
      ["Overdue", [[1, "a moment ago"]]],
      ["Due in the next 24 hours", [[2, "at now"], [3, "just inside"]]]
    ])
  })

  it("execute runs done, snooze and skip on the numbered tasks; each action is one undo step; the session is then discarded", async () => {
    const { t, user } = await setUp()
    const r = await review(user.api)
    const before = (await undoEntries(service, user.id)).length
    const res = await execute(user.api, {
      session_id: r.session_id,
      actions: [
        { type: "done", targets: ["1"] },
        { type: "snooze", targets: ["3", "2-3"], until: "2026-03-12T10:00:00+01:00" },
        { type: "skip", targets: [" 5 "] }
      ]
    })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      data: {
        executed: true,
        results: [
          { type: "done", task_ids: [t.o1.id], count: 1 },
          { type: "snooze", task_ids: [t.o4.id, t.o3.id], count: 2 },
          { type: "skip", task_ids: [t.u1.id], count: 1 }
        ],
        total_affected: 4
      }
    })
    expect(await read(user.api, t.o1.id)).toMatchObject({ done: true })
    expect(await read(user.api, t.o3.id)).toMatchObject({ due_at: UNTIL, snooze_count: 1, is_snoozed: true, done: false })
    expect(await read(user.api, t.o4.id)).toMatchObject({ due_at: UNTIL, snooze_count: 1 })
    const skipped = await read(user.api, t.u1.id)
    expect(skipped).toMatchObject({ skip_count: 1, done: false })
    expect(skipped.archived_at).not.toBeNull()
    for (const key of ["o2", "u2"] as const) expect(await read(user.api, t[key].id)).toMatchObject({ done: false, snooze_count: 0, skip_count: 0 })
    const entries = (await undoEntries(service, user.id)).slice(before)
    expect(entries.map((e) => [e.action, e.tasks_affected])).toEqual([["bulk_done", 1], ["bulk_snooze", 2], ["skip", 1]])

    // Executed: the session is gone.
    const second = await execute(user.api, { session_id: r.session_id, actions: [{ type: "done", targets: ["4"] }] })
    expect(second.status).toBe(409)
    expect(second.body).toMatchObject({ code: "CONFLICT", details: {} })
    expect((await read(user.api, t.o2.id)).done).toBe(false)

    // A new review numbers what is left.
    expect(seqs(await review(user.api))).toEqual([
      ["Overdue", [[1, "o2"]]],
      ["Due in the next 24 hours", [[2, "u2"]]]
    ])
  })

  it("a task that changed since the review is counted only when the action applies to it", async () => {
    const { t, user } = await setUp()
    const r = await review(user.api)
    expect((await user.api.delete(`/api/tasks/${t.u2.id}`)).status).toBe(200)
    expect((await user.api.post(`/api/tasks/${t.o2.id}/done`)).status).toBe(200)
    const res = await execute(user.api, { session_id: r.session_id, actions: [{ type: "done", targets: ["4", "6"] }, { type: "skip", targets: ["5"] }] })
    expect(res.status).toBe(200)
    expect(res.body.data).toEqual({
      executed: true,
      results: [
        { type: "done", task_ids: [t.o2.id, t.u2.id], count: 0 },
        { type: "skip", task_ids: [t.u1.id], count: 1 }
      ],
      total_affected: 1
    })
  })

  it("refusals: unknown session 409, a number not in the session 404, snooze without until 400; nothing runs and the session survives", async () => {
    const { t, user } = await setUp()
    const r = await review(user.api)
    const before = await snapshot(service)

    const unknown = await execute(user.api, { session_id: "00000000-0000-0000-0000-000000000000", actions: [{ type: "done", targets: ["1"] }] })
    expect(unknown.status).toBe(409)
    expect(unknown.body).toEqual({ error: "Unknown or expired review session; start a new one", code: "CONFLICT", details: {} })

    // Someone else's session is unknown to this user.
    const bobs = await review(bob.api)
    expect((await execute(user.api, { session_id: bobs.session_id, actions: [{ type: "done", targets: ["1"] }] })).status).toBe(409)

    const missing = await execute(user.api, { session_id: r.session_id, actions: [{ type: "done", targets: ["1"] }, { type: "done", targets: ["5-7"] }] })
    expect(missing.status).toBe(404)
    expect(missing.body).toEqual({ error: "Number 7 is not in this review", code: "NOT_FOUND", details: {} })

    const noUntil = await execute(user.api, { session_id: r.session_id, actions: [{ type: "done", targets: ["1"] }, { type: "snooze", targets: ["2"] }] })
    expect(noUntil.status).toBe(400)
    expect(noUntil.body).toEqual({ error: "snooze needs until", code: "VALIDATION_ERROR", details: { "actions.1.until": "snooze needs until" } })

    for (const body of [
      { session_id: r.session_id, actions: [{ type: "done", targets: ["a-b"] }] },
      { session_id: r.session_id, actions: [{ type: "done", targets: ["5-2"] }] },
      { session_id: r.session_id, actions: [{ type: "done", targets: ["0"] }] },
      { session_id: r.session_id, actions: [{ type: "archive", targets: ["1"] }] },
      { session_id: r.session_id, actions: [{ type: "done", targets: [] }] },
      { session_id: r.session_id, actions: [] },
      { session_id: r.session_id, actions: [{ type: "snooze", targets: ["1"], until: "tomorrow" }] },
      { actions: [{ type: "done", targets: ["1"] }] },
      { session_id: "", actions: [{ type: "done", targets: ["1"] }] }
    ]) {
      const res = await execute(user.api, body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.body.code).toBe("VALIDATION_ERROR")
    }
    expect(await snapshot(service)).toEqual(before)

    // Still usable after every refusal.
    const ok = await execute(user.api, { session_id: r.session_id, actions: [{ type: "snooze", targets: ["1-2"], until: UNTIL }] })
    expect(ok.status).toBe(200)
    expect(ok.body.data).toEqual({
      executed: true,
      results: [{ type: "snooze", task_ids: [t.o1.id, t.o3.id], count: 2 }],
      total_affected: 2
    })
  })

  it("a session expires after one hour: usable at exactly one hour, refused a millisecond later", async () => {
    expect(REVIEW_SESSION_LIFETIME_MS).toBe(3_600_000)
    clock = freezeServiceClock(service)
    const { t, user } = await setUp()
    await clock.set(NOW)
    const early = await review(user.api)
    clock.advance(REVIEW_SESSION_LIFETIME_MS)
    const atHour = await execute(user.api, { session_id: early.session_id, actions: [{ type: "done", targets: ["1"] }] })
    expect(atHour.status).toBe(200)
    expect(atHour.body.data.results).toEqual([{ type: "done", task_ids: [t.o1.id], count: 1 }])
    // One session per user: the next one is taken out after the first has been executed.
    await clock.set(NOW)
    const late = await review(user.api)
    clock.advance(REVIEW_SESSION_LIFETIME_MS + 1)
    const expired = await execute(user.api, { session_id: late.session_id, actions: [{ type: "done", targets: ["1"] }] })
    expect(expired.status).toBe(409)
    expect(expired.body.code).toBe("CONFLICT")
    // Starting a new session purges the old ones; an expired id stays refused.
    const fresh = await review(user.api)
    expect((await execute(user.api, { session_id: late.session_id, actions: [{ type: "done", targets: ["1"] }] })).status).toBe(409)
    // An hour on: o1 is done, u1 (due at 13:00) is now overdue, and "beyond" (due 25 h after
    // the first review) is inside the window.
    expect(seqs(fresh)).toEqual([
      ["Overdue", [[1, "o3"], [2, "o4"], [3, "o2"], [4, "u1"]]],
      ["Due in the next 24 hours", [[5, "u2"], [6, "beyond"]]]
    ])
    expect(fresh.total_tasks).toBe(6)
  })

  it("sessions are kept in the database: one numbered before a restart is executed after it, once", async () => {
    const { t, user } = await setUp()
    const r = await review(user.api)
    await service.stop()
    service = await startService(CONFIG, database)
    const api = makeClient(service.baseUrl, { authorization: `Bearer ${user.token}` })
    const res = await execute(api, { session_id: r.session_id, actions: [{ type: "done", targets: ["1"] }] })
    expect(res.status).toBe(200)
    expect(res.body.data.results).toEqual([{ type: "done", task_ids: [t.o1.id], count: 1 }])
    expect((await execute(api, { session_id: r.session_id, actions: [{ type: "done", targets: ["2"] }] })).status).toBe(409)
    expect(seqs(await review(api))).toEqual([
      ["Overdue", [[1, "o3"], [2, "o4"], [3, "o2"]]],
      ["Due in the next 24 hours", [[4, "u1"], [5, "u2"]]]
    ])
  })

  it("of two executes of one session at once, exactly one runs", async () => {
    const { t, user } = await setUp()
    const r = await review(user.api)
    const body = { session_id: r.session_id, actions: [{ type: "snooze", targets: ["1"], until: UNTIL }] }
    const statuses = (await Promise.all([execute(user.api, body), execute(user.api, body)])).map((res) => res.status)
    expect(statuses.sort()).toEqual([200, 409])
    expect(await read(user.api, t.o1.id)).toMatchObject({ due_at: UNTIL, snooze_count: 1 })
  })

  it("a session id that is not a UUID is unknown (409), not an error", async () => {
    const { user } = await setUp()
    await review(user.api)
    const res = await execute(user.api, { session_id: "not-a-uuid", actions: [{ type: "done", targets: ["1"] }] })
    expect(res.status).toBe(409)
    expect(res.body.code).toBe("CONFLICT")
  })

  it("500 wide ranges far past the session are refused at once, before any is walked; the session survives", async () => {
    const { t, user } = await setUp()
    const r = await review(user.api)
    const before = await snapshot(service)
    // 500 targets of 1,001 numbers each: used to be half a million numbers deduplicated with
    // Array.includes (~10^11 steps) before the first lookup.
    const targets = Array.from({ length: 500 }, (_, i) => `${i * 1001 + 1}-${i * 1001 + 1001}`)
    const actions = Array.from({ length: 50 }, () => ({ type: "done", targets }))
    const startedAt = performance.now()
    const res = await execute(user.api, { session_id: r.session_id, actions })
    const elapsed = performance.now() - startedAt
    expect(res.status).toBe(404)
    expect(res.body).toEqual({ error: "Number 7 is not in this review", code: "NOT_FOUND", details: {} })
    expect(elapsed).toBeLessThan(1_000)
    expect(await snapshot(service)).toEqual(before)

    // The largest work a valid request can ask for: every number many times over, deduplicated.
    const many = Array.from({ length: 500 }, (_, i) => (i % 2 === 0 ? "1-6" : "6"))
    const fastAt = performance.now()
    const ok = await execute(user.api, { session_id: r.session_id, actions: [{ type: "snooze", targets: many, until: UNTIL }] })
    expect(performance.now() - fastAt).toBeLessThan(1_000)
    expect(ok.status).toBe(200)
    expect(ok.body.data.results).toEqual([
      { type: "snooze", task_ids: [t.o1.id, t.o3.id, t.o4.id, t.o2.id, t.u1.id, t.u2.id], count: 6 }
    ])
  })

  it("one live session per user: a new review replaces the last, whose id is then unknown", async () => {
    const { t, user } = await setUp()
    const first = await review(user.api)
    const second = await review(user.api)
    const stale = await execute(user.api, { session_id: first.session_id, actions: [{ type: "done", targets: ["1"] }] })
    expect(stale.status).toBe(409)
    expect(stale.body).toEqual({ error: "Unknown or expired review session; start a new one", code: "CONFLICT", details: {} })
    expect((await read(user.api, t.o1.id)).done).toBe(false)
    const ok = await execute(user.api, { session_id: second.session_id, actions: [{ type: "done", targets: ["1"] }] })
    expect(ok.status).toBe(200)
    expect(ok.body.data.results).toEqual([{ type: "done", task_ids: [t.o1.id], count: 1 }])
  })

  it(`at most ${SESSION_LIMIT} sessions are kept over all users (configured here); the oldest is dropped first`, async () => {
    const users = [await newUser(), await newUser(), await newUser(), await newUser()]
    for (const u of users) await createTask(u.api, { title: "due", due_at: "2026-03-10T11:00:00Z" })
    const sessions = []
    for (const u of users) sessions.push(await review(u.api))
    const statuses = []
    for (const [i, u] of users.entries()) {
      statuses.push((await execute(u.api, { session_id: sessions[i]!.session_id, actions: [{ type: "skip", targets: ["1"] }] })).status)
    }
    expect(statuses).toEqual([409, 200, 200, 200])
  })

  it("needs authentication", async () => {
    expect((await service.anonymous.get("/api/review")).status).toBe(401)
    expect((await service.anonymous.post("/api/review/execute", { session_id: "x", actions: [{ type: "done", targets: ["1"] }] })).status).toBe(401)
  })
})
