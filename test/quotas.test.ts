import { Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { dailyStats, outboxEvents, query, snapshot, undoEntries } from "./support/rows.js"
import { completionRows, periodRows, shiftPeriodBack, storedPeriod, sweep } from "./support/quotas.js"
import { type Response, startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, expectServiceTime } from "./support/tasks.js"

/*
 * Quota rules (spec §2.1 quota rules 1-7, §3 quota rows, §4.2 progress, §4.4 GET /api/quotas,
 * §6 task.progressed) through HTTP.
 *
 * The service clock starts at 02:00 UTC on Wednesday 11 March 2026, which is 22:00 on
 * Tuesday 10 March in New York (EDT, UTC-4): the user's local date differs from the UTC one.
 */
const NOW = new Date("2026-03-11T02:00:00Z")
const NY_TODAY = "2026-03-10"
const NY_DAY_START = "2026-03-10T04:00:00.000Z"
const NY_DAY_END = "2026-03-11T04:00:00.000Z"
const NEEDS_PERIOD = "A quota needs a period"

describe("quotas", () => {
  let service: TestService
  let alice: TestUser // America/New_York
  let bob: TestUser // UTC

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
    alice = await service.user("alice", "America/New_York")
    bob = await service.user("bob", "UTC")
  })
  afterAll(async () => {
    await service.stop()
  })

  /** Sends, expects a 400 with the error envelope, and checks that nothing changed. */
  const refused = async (send: () => Promise<Response>, error?: string, details?: Record<string, unknown>) => {
    const before = await snapshot(service)
    const periodsBefore = await periodRows(service)
    const res = await send()
    expect(res.status, res.text).toBe(400)
    expect(res.body.code).toBe("VALIDATION_ERROR")
    if (error !== undefined) expect(res.body.error).toBe(error)
    if (details !== undefined) expect(res.body.details).toEqual(details)
    expect(await snapshot(service)).toEqual(before)
    expect(await periodRows(service)).toEqual(periodsBefore)
    return res
  }

  const quota = (body: Record<string, unknown> = {}) =>
    createTask(alice.api, { title: "Push-ups", progress_target: 3, rrule: "FREQ=DAILY", ...body })

  describe("a quota must have a period (rule 2)", () => {
    it("creating a quota without an rrule is a 400 with the exact message", async () => {
      for (const body of [
        { title: "Swim", progress_target: 3 },
        { title: "Swim", progress_target: 3, rrule: null },
        { title: "Swim", is_tracked: true },
        { title: "Swim", is_tracked: true, progress_target: 1 }
      ]) {
        await refused(() => alice.api.post("/api/tasks", body), NEEDS_PERIOD, { rrule: NEEDS_PERIOD })
      }
    })

    it("setting rrule to null on a quota is a 400; other edits of it go through", async () => {
      const q = await quota({ title: "Read" })
      await refused(() => alice.api.patch(`/api/tasks/${q.id}`, { rrule: null }), NEEDS_PERIOD, { rrule: NEEDS_PERIOD })
      const ok = await alice.api.patch(`/api/tasks/${q.id}`, { title: "Read more" })
      expect(ok.status).toBe(200)
      expect(ok.body.data).toMatchObject({ title: "Read more", rrule: "FREQ=DAILY", fields_changed: ["title", "short_title"] })
    })

    it("turning a task without a period rule into a quota is a 400", async () => {
      const plain = await createTask(alice.api, { title: "Stretch", priority: 1 })
      await refused(() => alice.api.patch(`/api/tasks/${plain.id}`, { progress_target: 3 }), NEEDS_PERIOD, { rrule: NEEDS_PERIOD })
      await refused(() => alice.api.patch(`/api/tasks/${plain.id}`, { is_tracked: true }), NEEDS_PERIOD, { rrule: NEEDS_PERIOD })
      // With a period in the same edit it becomes a quota whose period starts today.
      const ok = await alice.api.patch(`/api/tasks/${plain.id}`, { progress_target: 3, rrule: "FREQ=DAILY" })
      expect(ok.status, ok.text).toBe(200)
      expect(ok.body.data).toMatchObject({
        progress_target: 3,
        rrule: "FREQ=DAILY",
        progress_period_start: NY_DAY_START,
        is_recurring: false,
        due_at: null
      })
      expect(await storedPeriod(service, plain.id)).toEqual({ start: NY_DAY_START, end: NY_DAY_END, current: 0 })
    })

    it("a bare period rule (FREQ=MONTHLY) on a task that is not a quota and has no due date is a 400", async () => {
      const message = "A bare period rule is valid only on a quota (set progress_target or is_tracked)"
      await refused(() => alice.api.post("/api/tasks", { title: "Pay rent", rrule: "FREQ=MONTHLY" }), message, { rrule: message })
      const plain = await createTask(alice.api, { title: "Water plants", priority: 2 })
      await refused(() => alice.api.patch(`/api/tasks/${plain.id}`, { rrule: "FREQ=MONTHLY" }), message, { rrule: message })
      // The same rule names the period of a quota.
      const monthly = await quota({ title: "Museum visits", progress_target: 2, rrule: "FREQ=MONTHLY" })
      expect(monthly.progress_period_start).toBe("2026-03-01T05:00:00.000Z") // 1 March 00:00 EST
      expect(await storedPeriod(service, monthly.id)).toMatchObject({ end: "2026-04-01T04:00:00.000Z" }) // 1 April 00:00 EDT
    })
  })

  describe("a quota has no due date (rule 1)", () => {
    it("due_at and original_due_at are null on a quota", async () => {
      const q = await quota({ title: "Walk", rrule: "FREQ=WEEKLY;INTERVAL=2", progress_target: 4 })
      expect(q).toMatchObject({ due_at: null, original_due_at: null, is_recurring: false, progress_current: 0 })
      const read = await alice.api.get(`/api/tasks/${q.id}`)
      expect(read.body.data).toMatchObject({ due_at: null, original_due_at: null })
      const edited = await alice.api.patch(`/api/tasks/${q.id}`, { progress_target: 5 })
      expect(edited.body.data).toMatchObject({ due_at: null, original_due_at: null, progress_target: 5 })
    })

    it("a date on create or on edit is a 400", async () => {
      const message = "A quota has no due date"
      await refused(
        () => alice.api.post("/api/tasks", { title: "Run", progress_target: 2, rrule: "FREQ=WEEKLY", due_at: "2026-03-12T12:00:00Z" }),
        message,
        { due_at: message }
      )
      const q = await quota({ title: "Run" })
      await refused(() => alice.api.patch(`/api/tasks/${q.id}`, { due_at: "2026-03-12T12:00:00Z" }), message, { due_at: message })
      const dated = await createTask(alice.api, { title: "Dentist", due_at: "2026-03-20T14:00:00Z" })
      await refused(() => alice.api.patch(`/api/tasks/${dated.id}`, { progress_target: 2, rrule: "FREQ=WEEKLY" }), message)
    })

    it("snoozing a quota is a 400", async () => {
      const q = await quota({ title: "Meditate" })
      await refused(() => alice.api.post(`/api/tasks/${q.id}/snooze`, { until: "2026-03-12T12:00:00Z" }))
    })
  })

  it("a quota cannot be a reminder (rule 4)", async () => {
    const message = "A quota cannot be a reminder"
    await refused(
      () => alice.api.post("/api/tasks", { title: "Vitamins", is_reminder: true, progress_target: 2, rrule: "FREQ=DAILY" }),
      message,
      { is_reminder: message }
    )
    await refused(
      () => alice.api.post("/api/tasks", { title: "Vitamins", is_reminder: true, is_tracked: true, rrule: "FREQ=DAILY" }),
      message
    )
    const reminder = await createTask(alice.api, { title: "Call mum", is_reminder: true, due_at: "2026-03-11T23:00:00Z" })
    await refused(() => alice.api.patch(`/api/tasks/${reminder.id}`, { progress_target: 2, rrule: "FREQ=DAILY", due_at: null }))
  })

  describe("done, undone and close_period on a quota (spec §3)", () => {
    it("done without close_period (absent or false) and undone are 400s", async () => {
      const q = await quota({ title: "Guitar" })
      await alice.api.post(`/api/tasks/${q.id}/progress`, { delta: 3 })
      await refused(() => alice.api.post(`/api/tasks/${q.id}/done`))
      await refused(() => alice.api.post(`/api/tasks/${q.id}/done`, {}))
      await refused(() => alice.api.post(`/api/tasks/${q.id}/done`, { close_period: false }))
      await refused(() => alice.api.post(`/api/tasks/${q.id}/undone`))
    })

    it("close_period: true on a met period records it as closed early and met, with a completion", async () => {
      const q = await quota({ title: "Squats", progress_target: 2 })
      for (let i = 0; i < 2; i++) expect((await alice.api.post(`/api/tasks/${q.id}/progress`)).status).toBe(200)
      const statsBefore = await dailyStats(service, alice.id)
      const res = await alice.api.post(`/api/tasks/${q.id}/done`, { close_period: true })
      expect(res.status, res.text).toBe(200)
      const task = res.body.data
      expect(task).toMatchObject({
        id: q.id,
        done: false,
        done_at: null,
        archived_at: null,
        progress_current: 0,
        progress_target: 2,
        completion_count: 1,
        was_recurring: false,
        next_due_at: null,
        due_at: null
      })
      // The rest of the day is a fresh period, from the moment of closing to the same end.
      const closedAt = task.progress_period_start as string
      expectServiceTime(closedAt, NOW)
      expect(task.first_completed_at).toBe(closedAt)
      expect(task.last_completed_at).toBe(closedAt)
      expect(await storedPeriod(service, q.id)).toEqual({ start: closedAt, end: NY_DAY_END, current: 0 })
      expect(await periodRows(service, q.id)).toEqual([
        {
          task_id: q.id,
          period_start: NY_DAY_START,
          period_end: closedAt,
          count: 2,
          target: 2,
          met: true,
          closed_at: closedAt,
          closed_early: true
        }
      ])
      expect(await completionRows(service, q.id)).toEqual([
        { task_id: q.id, completed_at: closedAt, due_at_was: null, due_at_next: null, is_tracked: false, is_reminder: false, progress_target: 2 }
      ])
      const completions = await alice.api.get(`/api/completions?task_id=${q.id}`)
      expect(completions.body.data.count).toBe(1)
      expect(completions.body.data.completions[0]).toMatchObject({ task_id: q.id, task_title: "Squats", progress_target: 2 })
      // Counted once in the day's statistics, on the user's local date.
      const after = await dailyStats(service, alice.id)
      const completionsOn = (rows: typeof after) => rows.find((r) => r.date === NY_TODAY)?.completions ?? 0
      expect(completionsOn(after) - completionsOn(statsBefore)).toBe(1)
      // Closing a period is no task.completed.
      expect((await outboxEvents(service, alice.id)).filter((e) => e.task_id === q.id).map((e) => e.event)).toEqual([
        "task.created",
        "task.progressed",
        "task.progressed"
      ])
    })

    it("close_period: true on a short period records it, not met, with no completion", async () => {
      const q = await quota({ title: "Pages", progress_target: 3, is_tracked: true })
      await alice.api.post(`/api/tasks/${q.id}/progress`)
      const res = await alice.api.post(`/api/tasks/${q.id}/done`, { close_period: true })
      expect(res.status).toBe(200)
      expect(res.body.data).toMatchObject({ progress_current: 0, completion_count: 0, first_completed_at: null, last_completed_at: null })
      const closedAt = res.body.data.progress_period_start
      expect(await periodRows(service, q.id)).toEqual([
        { task_id: q.id, period_start: NY_DAY_START, period_end: closedAt, count: 1, target: 3, met: false, closed_at: closedAt, closed_early: true }
      ])
      expect(await completionRows(service, q.id)).toEqual([])
    })
  })

  describe("POST /api/tasks/{id}/progress", () => {
    it("adds delta (default 1), keeps overflow, floors at 0, reports met and count/target", async () => {
      const q = await quota({ title: "Glasses of water", progress_target: 3 })
      const steps: ReadonlyArray<readonly [unknown, number, boolean, string, number]> = [
        // body, progress_current, met, description, logged today (net)
        [undefined, 1, false, "1/3", 1],
        [{}, 2, false, "2/3", 2],
        [{ delta: 1 }, 3, true, "3/3", 3],
        [{ delta: 5 }, 8, true, "8/3", 8],
        [{ delta: -6 }, 2, false, "2/3", 2],
        [{ delta: -100 }, 0, false, "0/3", 0],
        [{ delta: 100 }, 100, true, "100/3", 100]
      ]
      for (const [body, current, met, description, logged] of steps) {
        const res = await alice.api.post(`/api/tasks/${q.id}/progress`, body)
        expect(res.status, res.text).toBe(200)
        expect(res.body.data).toMatchObject({ id: q.id, progress_current: current, progress_target: 3, met, description, done: false })
        expect(res.body.data.quota_day_state).toEqual({ date: NY_TODAY, logged, did: [], considered: [], did_applied: {} })
      }
      // The quota stays open, in the same period.
      expect(await storedPeriod(service, q.id)).toEqual({ start: NY_DAY_START, end: NY_DAY_END, current: 100 })
      expect(await periodRows(service, q.id)).toEqual([])

      // One task.progressed per log, with the new count, and never task.completed.
      const events = (await outboxEvents(service, alice.id)).filter((e) => e.task_id === q.id)
      expect(events.map((e) => e.event)).toEqual(["task.created", ...steps.map(() => "task.progressed")])
      for (const [index, event] of events.slice(1).entries()) {
        const [, current, met] = steps[index]!
        expect(Object.keys(event.payload).sort()).toEqual(["met", "progress_current", "progress_target", "task"])
        expect(event.payload).toMatchObject({ progress_current: current, progress_target: 3, met })
        expect(event.payload.task).toMatchObject({ id: q.id, progress_current: current })
      }
      // One undo entry per log.
      const undo = (await undoEntries(service, alice.id)).filter((u) => u.changes.some((c) => c.table === "tasks" && c.id === q.id))
      expect(undo.map((u) => u.action)).toEqual(["create", ...steps.map(() => "progress")])
      expect(undo.slice(1).map((u) => u.tasks_affected)).toEqual(steps.map(() => 1))
    })

    it("a delta outside -100..100 or not an integer is a 400", async () => {
      const q = await quota({ title: "Steps" })
      for (const delta of [101, -101, 1.5, "2", null, true]) {
        await refused(() => alice.api.post(`/api/tasks/${q.id}/progress`, { delta }))
      }
    })

    it("progress on a task that is not a quota is a 400; on another user's task a 404", async () => {
      const plain = await createTask(alice.api, { title: "Laundry", priority: 1 })
      await refused(() => alice.api.post(`/api/tasks/${plain.id}/progress`))
      const theirs = await createTask(bob.api, { title: "Bob's quota", progress_target: 2, rrule: "FREQ=DAILY" })
      const before = await snapshot(service)
      expect((await alice.api.post(`/api/tasks/${theirs.id}/progress`)).status).toBe(404)
      expect(await snapshot(service)).toEqual(before)
    })

    it("the day's log follows the user's local date", async () => {
      // Bob is on UTC: his local date is already the 11th.
      const q = await createTask(bob.api, { title: "Chin-ups", progress_target: 5, rrule: "FREQ=DAILY" })
      expect(q.progress_period_start).toBe("2026-03-11T00:00:00.000Z")
      const res = await bob.api.post(`/api/tasks/${q.id}/progress`, { delta: 2 })
      expect(res.body.data.quota_day_state).toEqual({ date: "2026-03-11", logged: 2, did: [], considered: [], did_applied: {} })
    })
  })

  describe("a quota created before periods were required (rule 5)", () => {
    it("has no rrule, accumulates progress, stays editable unless the edit touches its rule", async () => {
      const [inbox] = await query<{ id: number }>(service, (sql) => sql`SELECT id FROM projects WHERE owner_id = ${alice.id} AND is_inbox`)
      const [legacy] = await query<{ id: number }>(service, (sql) =>
        sql`INSERT INTO tasks (user_id, project_id, title, original_title, short_title, progress_target, progress_current,
              created_at, updated_at)
            VALUES (${alice.id}, ${inbox!.id}, 'Old habit', 'Old habit', 'Old habit', 3, 2,
              '2025-06-01T00:00:00Z', '2025-06-01T00:00:00Z')
            RETURNING id`)
      const id = legacy!.id
      for (const expected of [3, 4]) {
        const res = await alice.api.post(`/api/tasks/${id}/progress`)
        expect(res.status, res.text).toBe(200)
        expect(res.body.data).toMatchObject({ rrule: null, progress_current: expected, progress_period_start: null, met: true })
      }
      // The sweep leaves it alone: it has no period to end.
      await sweep(service)
      expect(await storedPeriod(service, id)).toEqual({ start: null, end: null, current: 4 })
      expect(await periodRows(service, id)).toEqual([])

      const edited = await alice.api.patch(`/api/tasks/${id}`, { title: "Older habit", progress_target: 5, notes: "since 2025" })
      expect(edited.status, edited.text).toBe(200)
      expect(edited.body.data).toMatchObject({ title: "Older habit", progress_target: 5, rrule: null, progress_current: 4 })
      await refused(() => alice.api.patch(`/api/tasks/${id}`, { rrule: null }), NEEDS_PERIOD, { rrule: NEEDS_PERIOD })

      // Closing it records what accumulated since it was created.
      const closed = await alice.api.post(`/api/tasks/${id}/done`, { close_period: true })
      expect(closed.status, closed.text).toBe(200)
      expect(closed.body.data).toMatchObject({ progress_current: 0, completion_count: 0, progress_period_start: null })
      const [row] = await periodRows(service, id)
      expect(row).toMatchObject({ period_start: "2025-06-01T00:00:00.000Z", count: 4, target: 5, met: false, closed_early: true })

      // Giving it a period starts one.
      const ruled = await alice.api.patch(`/api/tasks/${id}`, { rrule: "FREQ=WEEKLY" })
      expect(ruled.status, ruled.text).toBe(200)
      expect(ruled.body.data.progress_period_start).toBe("2026-03-08T05:00:00.000Z") // Sunday 8 March, 00:00 EST
      expect(await storedPeriod(service, id)).toMatchObject({ end: "2026-03-15T04:00:00.000Z" })
    })
  })

  describe("GET /api/quotas", () => {
    it("lists the caller's open quotas with total and has_any; an ended period not yet rolled counts 0", async () => {
      const carol = await service.user("carol", "America/New_York")
      const empty = await carol.api.get("/api/quotas")
      expect(empty.status).toBe(200)
      expect(empty.body).toEqual({ data: { quotas: [], total: 0, has_any: false } })

      const daily = await createTask(carol.api, { title: "Daily", progress_target: 3, rrule: "FREQ=DAILY" })
      const weekly = await createTask(carol.api, { title: "Weekly", is_tracked: true, rrule: "FREQ=WEEKLY" })
      const trashed = await createTask(carol.api, { title: "Trashed", progress_target: 2, rrule: "FREQ=DAILY" })
      await createTask(carol.api, { title: "Not a quota", priority: 1 })
      await carol.api.delete(`/api/tasks/${trashed.id}`)
      await carol.api.post(`/api/tasks/${daily.id}/progress`, { delta: 2 })
      await carol.api.post(`/api/tasks/${weekly.id}/progress`)

      const listed = await carol.api.get("/api/quotas")
      expect(listed.status).toBe(200)
      expect(listed.body.data.total).toBe(2)
      expect(listed.body.data.has_any).toBe(true)
      const byId = new Map((listed.body.data.quotas as Array<any>).map((q) => [q.id, q]))
      expect([...byId.keys()].sort((a, b) => a - b)).toEqual([daily.id, weekly.id])
      expect(byId.get(daily.id)).toMatchObject({ progress_current: 2, progress_target: 3 })
      expect(byId.get(weekly.id)).toMatchObject({ progress_current: 1, progress_target: 1, is_tracked: true })

      // The daily period ended (moved a day back) but the sweep has not run: shown as 0.
      await shiftPeriodBack(service, daily.id, 1)
      const stale = await carol.api.get("/api/quotas")
      const staleById = new Map((stale.body.data.quotas as Array<any>).map((q) => [q.id, q]))
      expect(staleById.get(daily.id)).toMatchObject({ progress_current: 0 })
      expect(staleById.get(weekly.id)).toMatchObject({ progress_current: 1 })
      expect(stale.body.data.total).toBe(2)
      expect((await storedPeriod(service, daily.id)).current).toBe(2) // still held until the sweep
      // After the sweep the ended period is recorded with its count.
      await sweep(service)
      expect(await periodRows(service, daily.id)).toEqual([
        expect.objectContaining({ period_start: "2026-03-09T04:00:00.000Z", period_end: NY_DAY_START, count: 2, met: false })
      ])
      expect(await storedPeriod(service, daily.id)).toEqual({ start: NY_DAY_START, end: NY_DAY_END, current: 0 })

      // Another user's quotas never appear.
      const bobs = await bob.api.get("/api/quotas")
      expect((bobs.body.data.quotas as Array<any>).every((q) => q.user_id === bob.id)).toBe(true)
    })
  })
})
