import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { periodRows, storedPeriod } from "./support/quotas.js"
import { outboxEvents, snapshot, undoEntries } from "./support/rows.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, expectServiceTime, listIds } from "./support/tasks.js"

/**
 * Bulk done, snooze, snooze-overdue and edit over HTTP (spec §1, §3, §4.3, §7), with the
 * bound on ids per request and the fixed counts shape of BulkApi.ts. Every response is the bare counts object with every key.
 *
 * The clock is pinned at 12:00 UTC on Tuesday 10 March 2026; every user is on UTC.
 */
const NOW = new Date("2026-03-10T12:00:00Z")

const COUNT_KEYS = [
  "tasks_affected", "tasks_skipped", "skipped_urgent", "skipped_high", "snoozed_high", "skipped_reminders",
  "skipped_deadline", "capped_deadline", "skipped_no_due_date"
] as const
type Counts = Record<(typeof COUNT_KEYS)[number], number>
const ZERO: Counts = Object.fromEntries(COUNT_KEYS.map((k) => [k, 0])) as Counts
const counts = (some: Partial<Counts>) => ({ ...ZERO, ...some })
const doneCounts = (some: Partial<Counts> & { quota_skipped?: number }) => ({ ...ZERO, quota_skipped: 0, ...some })

/** An id no task has. */
const UNKNOWN = 2_000_000_000

type Task = Record<string, any>

describe("bulk operations (spec §4.3)", () => {
  let service: TestService
  let bob: TestUser
  let bobPrivate: Task
  let sharedProject: number
  let counter = 0
  const newUser = (): Promise<TestUser> => service.user(`bulk${++counter}`, "UTC")

  const read = async (user: TestUser, id: number): Promise<Task> => {
    const res = await user.api.get(`/api/tasks/${id}`)
    if (res.status !== 200) throw new Error(`GET /api/tasks/${id} -> ${res.status} ${res.text}`)
    return res.body.data
  }
  /** The task as stored, without updated_at. */
  const core = (task: Task) => {
    const { updated_at: _u, ...rest } = task
    return rest
  }
  const post = async (user: TestUser, path: string, body: unknown) => {
    const res = await user.api.post(path, body)
    return res
  }
  const bulkOk = async (user: TestUser, path: string, body: unknown) => {
    const res = await post(user, path, body)
    if (res.status !== 200) throw new Error(`POST ${path} -> ${res.status} ${res.text}`)
    // Bare, not wrapped in data (spec §1).
    expect(res.body.data).toBeUndefined()
    return res.body as Record<string, number>
  }
  const undo = async (user: TestUser) => {
    const res = await user.api.post("/api/undo")
    if (res.status !== 200) throw new Error(`POST /api/undo -> ${res.status} ${res.text}`)
    return res.body.data as Record<string, any>
  }
  const expect400 = (res: { status: number; body: any; text?: string }, field?: string) => {
    expect(res.status, res.text).toBe(400)
    expect(res.body.code).toBe("VALIDATION_ERROR")
    if (field !== undefined) expect(Object.keys(res.body.details)).toContain(field)
  }

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
    bob = await service.user("bulk-bob", "UTC")
    bobPrivate = await createTask(bob.api, { title: "Bob's private", due_at: "2026-03-09T09:00:00Z", priority: 1 })
    const shared = await bob.api.post("/api/projects", { name: "Household", shared: true })
    expect(shared.status).toBe(201)
    sharedProject = shared.body.data.id
  })
  afterAll(async () => {
    await service.stop()
  })

  describe("POST /api/tasks/bulk/done", () => {
    it("completes what it can in one undo entry; quotas, done, trashed, invisible and unknown ids are counted as skipped", async () => {
      const user = await newUser()
      const oneOff = await createTask(user.api, { title: "One-off", due_at: "2026-03-09T09:00:00Z" })
      const high = await createTask(user.api, { title: "High", priority: 3 })
      const urgent = await createTask(user.api, { title: "Urgent", priority: 4, due_at: "2026-03-11T09:00:00Z" })
      const recurring = await createTask(user.api, { title: "Daily", due_at: "2026-03-10T09:00:00Z", rrule: "FREQ=DAILY" })
      const reminder = await createTask(user.api, { title: "Reminder", is_reminder: true, due_at: "2026-03-10T15:00:00Z" })
      const quota = await createTask(user.api, { title: "Gym", progress_target: 3, rrule: "FREQ=WEEKLY" })
      const tracked = await createTask(user.api, { title: "Meditate", is_tracked: true, rrule: "FREQ=DAILY" })
      const done = await createTask(user.api, { title: "Already done" })
      const trashed = await createTask(user.api, { title: "Trashed" })
      expect((await user.api.post(`/api/tasks/${done.id}/done`)).status).toBe(200)
      expect((await user.api.delete(`/api/tasks/${trashed.id}`)).status).toBe(200)
      const untouched = {
        quota: await read(user, quota.id),
        tracked: await read(user, tracked.id),
        done: await read(user, done.id),
        trashed: await read(user, trashed.id),
        bob: await read(bob, bobPrivate.id)
      }
      const before = await undoEntries(service, user.id)
      const eventsBefore = (await outboxEvents(service, user.id)).length

      const body = await bulkOk(user, "/api/tasks/bulk/done", {
        ids: [oneOff.id, high.id, urgent.id, recurring.id, reminder.id, quota.id, tracked.id, done.id, trashed.id, bobPrivate.id, UNKNOWN, oneOff.id]
      })
      expect(body).toEqual(doneCounts({ tasks_affected: 5, tasks_skipped: 4, quota_skipped: 2 }))
      expect(Object.keys(body).sort()).toEqual([...COUNT_KEYS, "quota_skipped"].sort())

      for (const t of [oneOff, high, urgent, reminder]) {
        const now = await read(user, t.id)
        expect(now).toMatchObject({ done: true, completion_count: 1 })
        expectServiceTime(now.done_at, NOW)
        expect(now.archived_at).toBe(now.done_at)
      }
      // The recurring task advances like a single done.
      expect(await read(user, recurring.id)).toMatchObject({
        done: false,
        due_at: "2026-03-11T09:00:00.000Z",
        completion_count: 1,
        occurrence_at: "2026-03-10T09:00:00.000Z"
      })
      for (const [key, t] of [["quota", quota], ["tracked", tracked], ["done", done], ["trashed", trashed]] as const) {
        expect(core(await read(user, t.id)), key).toEqual(core(untouched[key]))
      }
      expect(await read(bob, bobPrivate.id)).toEqual(untouched.bob)

      const entries = (await undoEntries(service, user.id)).slice(before.length)
      expect(entries.map((e) => [e.action, e.tasks_affected, e.description])).toEqual([["bulk_done", 5, "Marked 5 task(s) done"]])
      const events = (await outboxEvents(service, user.id)).slice(eventsBefore)
      expect(events.map((e) => [e.event, e.task_id])).toEqual(
        [oneOff, high, urgent, recurring, reminder].map((t) => ["task.completed", t.id])
      )
      const completions = (await user.api.get("/api/completions")).body.data.completions as Array<Task>
      expect(completions.map((c) => c.task_id).sort()).toEqual([done, oneOff, high, urgent, recurring, reminder].map((t) => t.id).sort())

      // POST /api/undo takes the whole batch back.
      const u = await undo(user)
      expect(u).toMatchObject({ undone_action: "bulk_done", description: "Marked 5 task(s) done", tasks_affected: 5 })
      for (const t of [oneOff, high, urgent, reminder]) {
        expect(await read(user, t.id)).toMatchObject({ done: false, done_at: null, archived_at: null, completion_count: 0 })
      }
      expect(await read(user, recurring.id)).toMatchObject({ due_at: "2026-03-10T09:00:00.000Z", completion_count: 0, done: false })
      const after = (await user.api.get("/api/completions")).body.data.completions as Array<Task>
      expect(after.map((c) => c.task_id)).toEqual([done.id])
    })

    it("a batch of nothing but quotas is a 400 and changes nothing; close_period true closes their periods early", async () => {
      const user = await newUser()
      const quota = await createTask(user.api, { title: "Gym", progress_target: 3, rrule: "FREQ=WEEKLY" })
      const tracked = await createTask(user.api, { title: "Meditate", is_tracked: true, rrule: "FREQ=DAILY" })
      expect((await user.api.post(`/api/tasks/${quota.id}/progress`, { delta: 2 })).status).toBe(200)
      expect((await user.api.post(`/api/tasks/${tracked.id}/progress`)).status).toBe(200)
      const periodStart = (await read(user, quota.id)).progress_period_start
      // Week of Sunday 8 March (week_start sunday, UTC).
      expect(periodStart).toBe("2026-03-08T00:00:00.000Z")

      const before = await snapshot(service)
      for (const body of [
        { ids: [quota.id, tracked.id] },
        { ids: [quota.id, tracked.id], close_period: false },
        { ids: [quota.id] },
        // Ids the caller cannot see do not count as tasks: the visible batch is all quotas.
        { ids: [quota.id, bobPrivate.id, UNKNOWN] }
      ]) {
        const res = await post(user, "/api/tasks/bulk/done", body)
        expect400(res, "ids")
        expect(res.body.error).toBe("Every task in the batch is a quota; send close_period: true to close their periods")
      }
      expect(await snapshot(service)).toEqual(before)

      const oneOff = await createTask(user.api, { title: "One-off" })
      const body = await bulkOk(user, "/api/tasks/bulk/done", { ids: [quota.id, tracked.id, oneOff.id], close_period: true })
      expect(body).toEqual(doneCounts({ tasks_affected: 3 }))
      const q = await read(user, quota.id)
      expect(q).toMatchObject({ progress_current: 0, completion_count: 0, done: false })
      expectServiceTime(q.progress_period_start, NOW)
      const t = await read(user, tracked.id)
      expect(t).toMatchObject({ progress_current: 0, completion_count: 1, done: false })
      expect((await read(user, oneOff.id)).done).toBe(true)
      const periods = await periodRows(service, quota.id)
      expect(periods).toHaveLength(1)
      expect(periods[0]).toMatchObject({ task_id: quota.id, period_start: "2026-03-08T00:00:00.000Z", count: 2, target: 3, met: false, closed_early: true })
      expect(periods[0]!.period_end).toBe(q.progress_period_start)
      expect(await periodRows(service, tracked.id)).toEqual([
        expect.objectContaining({ period_start: "2026-03-10T00:00:00.000Z", count: 1, target: 1, met: true, closed_early: true })
      ])
      // The rest of the period starts afresh; the next boundary is unchanged.
      expect((await storedPeriod(service, quota.id)).end).toBe("2026-03-15T00:00:00.000Z")
      const entries = await undoEntries(service, user.id)
      expect(entries.at(-1)!.action).toBe("bulk_done")
      expect(entries.at(-1)!.tasks_affected).toBe(3)

      // A batch of only quotas with close_period true is fine.
      expect(await bulkOk(user, "/api/tasks/bulk/done", { ids: [quota.id], close_period: true })).toEqual(doneCounts({ tasks_affected: 1 }))
    })

    it("with close_period a trashed quota is skipped as trashed (tasks_skipped); without it, as a quota", async () => {
      const user = await newUser()
      const quota = await createTask(user.api, { title: "Read", progress_target: 2, rrule: "FREQ=MONTHLY" })
      const trashedQuota = await createTask(user.api, { title: "Trashed quota", progress_target: 2, rrule: "FREQ=MONTHLY" })
      expect((await user.api.delete(`/api/tasks/${trashedQuota.id}`)).status).toBe(200)
      const mixed = await createTask(user.api, { title: "Task" })
      const before = await read(user, trashedQuota.id)
      expect(await bulkOk(user, "/api/tasks/bulk/done", { ids: [quota.id, trashedQuota.id, mixed.id], close_period: true })).toEqual(
        doneCounts({ tasks_affected: 2, tasks_skipped: 1 })
      )
      expect(core(await read(user, trashedQuota.id))).toEqual(core(before))
      expect(await periodRows(service, trashedQuota.id)).toEqual([])
      const other = await createTask(user.api, { title: "Another task" })
      expect(await bulkOk(user, "/api/tasks/bulk/done", { ids: [trashedQuota.id, other.id] })).toEqual(
        doneCounts({ tasks_affected: 1, quota_skipped: 1 })
      )
      expect(core(await read(user, trashedQuota.id))).toEqual(core(before))
    })

    it("another user's shared-project task is visible, so it can be completed", async () => {
      const user = await newUser()
      const task = await createTask(bob.api, { title: "Shared chore", project_id: sharedProject })
      expect(await bulkOk(user, "/api/tasks/bulk/done", { ids: [task.id] })).toEqual(doneCounts({ tasks_affected: 1 }))
      expect((await read(bob, task.id)).done).toBe(true)
    })
  })

  describe("POST /api/tasks/bulk/snooze", () => {
    const UNTIL = "2026-03-12T09:00:00.000Z"

    it("snoozes with task_ids; reminders, quotas, deadlines, done, trashed and invisible ids are skipped; one bulk_snooze entry", async () => {
      const user = await newUser()
      const plain = await createTask(user.api, { title: "Plain", due_at: "2026-03-09T09:00:00Z" })
      const high = await createTask(user.api, { title: "High", priority: 3, due_at: "2026-03-11T09:00:00Z" })
      const urgent = await createTask(user.api, { title: "Urgent", priority: 4, due_at: "2026-03-10T08:00:00Z" })
      const undated = await createTask(user.api, { title: "Undated" })
      const deadlineOk = await createTask(user.api, { title: "Deadline later", due_at: "2026-03-10T10:00:00Z", deadline_at: "2026-03-20T00:00:00Z" })
      const deadlineHit = await createTask(user.api, { title: "Deadline sooner", due_at: "2026-03-10T10:00:00Z", deadline_at: "2026-03-11T00:00:00Z" })
      const reminder = await createTask(user.api, { title: "Reminder", is_reminder: true, due_at: "2026-03-10T18:00:00Z" })
      const quota = await createTask(user.api, { title: "Quota", progress_target: 2, rrule: "FREQ=WEEKLY" })
      const done = await createTask(user.api, { title: "Done", due_at: "2026-03-09T09:00:00Z" })
      const trashed = await createTask(user.api, { title: "Trashed", due_at: "2026-03-09T09:00:00Z" })
      expect((await user.api.post(`/api/tasks/${done.id}/done`)).status).toBe(200)
      expect((await user.api.delete(`/api/tasks/${trashed.id}`)).status).toBe(200)
      const skipped = [deadlineHit, reminder, quota, done, trashed]
      const kept = new Map<number, Task>()
      for (const t of skipped) kept.set(t.id, await read(user, t.id))
      const bobBefore = await read(bob, bobPrivate.id)
      const before = await undoEntries(service, user.id)

      const body = await bulkOk(user, "/api/tasks/bulk/snooze", {
        task_ids: [plain.id, high.id, urgent.id, undated.id, deadlineOk.id, deadlineHit.id, reminder.id, quota.id, done.id, trashed.id, bobPrivate.id, UNKNOWN],
        until: "2026-03-12T10:00:00+01:00"
      })
      expect(body).toEqual(counts({ tasks_affected: 5, snoozed_high: 1, skipped_reminders: 1, skipped_deadline: 1, tasks_skipped: 5 }))
      expect(Object.keys(body).sort()).toEqual([...COUNT_KEYS].sort())

      for (const [t, previous] of [[plain, plain.due_at], [high, high.due_at], [urgent, urgent.due_at], [undated, null], [deadlineOk, deadlineOk.due_at]] as const) {
        expect(await read(user, t.id)).toMatchObject({ due_at: UNTIL, snooze_count: 1, is_snoozed: true, original_due_at: previous })
      }
      for (const t of skipped) expect(core(await read(user, t.id))).toEqual(core(kept.get(t.id)!))
      expect(await read(bob, bobPrivate.id)).toEqual(bobBefore)
      const entries = (await undoEntries(service, user.id)).slice(before.length)
      expect(entries.map((e) => [e.action, e.tasks_affected, e.description])).toEqual([
        ["bulk_snooze", 5, `Snoozed 5 task(s) until ${UNTIL}`]
      ])

      const u = await undo(user)
      expect(u).toMatchObject({ undone_action: "bulk_snooze", tasks_affected: 5 })
      expect(await read(user, plain.id)).toMatchObject({ due_at: "2026-03-09T09:00:00.000Z", snooze_count: 0, is_snoozed: false })
      expect(await read(user, undated.id)).toMatchObject({ due_at: null, snooze_count: 0 })
    })

    it("accepts ids as well as task_ids; task_ids wins when both are sent; neither is a 400", async () => {
      const user = await newUser()
      const a = await createTask(user.api, { title: "A", due_at: "2026-03-09T09:00:00Z" })
      const b = await createTask(user.api, { title: "B", due_at: "2026-03-09T09:00:00Z" })
      expect(await bulkOk(user, "/api/tasks/bulk/snooze", { ids: [a.id], until: UNTIL })).toEqual(counts({ tasks_affected: 1 }))
      expect((await read(user, a.id)).due_at).toBe(UNTIL)
      expect(await bulkOk(user, "/api/tasks/bulk/snooze", { ids: [a.id], task_ids: [b.id], until: "2026-03-13T09:00:00Z" })).toEqual(
        counts({ tasks_affected: 1 })
      )
      expect((await read(user, a.id)).due_at).toBe(UNTIL)
      expect((await read(user, b.id)).due_at).toBe("2026-03-13T09:00:00.000Z")
      const entries = await undoEntries(service, user.id)
      expect(entries.slice(-2).map((e) => e.action)).toEqual(["bulk_snooze", "bulk_snooze"])

      const before = await snapshot(service)
      expect400(await post(user, "/api/tasks/bulk/snooze", { until: UNTIL }), "task_ids")
      expect400(await post(user, "/api/tasks/bulk/snooze", { task_ids: [a.id] }), "until")
      expect400(await post(user, "/api/tasks/bulk/snooze", { task_ids: [a.id], until: "next week" }), "until")
      expect(await snapshot(service)).toEqual(before)
    })

    it("a batch of only skipped tasks changes nothing and writes no undo entry", async () => {
      const user = await newUser()
      const quota = await createTask(user.api, { title: "Quota", progress_target: 2, rrule: "FREQ=WEEKLY" })
      const before = await snapshot(service)
      expect(await bulkOk(user, "/api/tasks/bulk/snooze", { task_ids: [quota.id, bobPrivate.id, bobPrivate.id], until: UNTIL })).toEqual(
        counts({ tasks_skipped: 2 })
      )
      expect(await snapshot(service)).toEqual(before)
    })
  })

  describe("POST /api/tasks/bulk/snooze-overdue", () => {
    it("moves every overdue P0-P3 task, never P4; snoozed_high counts P3 moved, skipped_urgent P4 left", async () => {
      const user = await newUser()
      const until = "2026-03-11T08:00:00.000Z"
      const make = (title: string, body: Record<string, unknown>) => createTask(user.api, { title, ...body })
      const p0 = await make("P0", { due_at: "2026-03-09T09:00:00Z", priority: 0 })
      const p1 = await make("P1", { due_at: "2026-03-10T11:00:00Z", priority: 1 })
      const p2 = await make("P2", { due_at: "2026-03-01T09:00:00Z", priority: 2 })
      const p3a = await make("P3a", { due_at: "2026-03-09T09:00:00Z", priority: 3 })
      const p3b = await make("P3b", { due_at: "2026-03-08T09:00:00Z", priority: 3 })
      const p4a = await make("P4a", { due_at: "2026-03-09T09:00:00Z", priority: 4 })
      const p4b = await make("P4b", { due_at: "2026-03-10T10:00:00Z", priority: 4 })
      const recurring = await make("Recurring", { due_at: "2026-03-09T07:00:00Z", rrule: "FREQ=DAILY", priority: 1 })
      const deadline = await make("Deadline", { due_at: "2026-03-09T08:00:00Z", deadline_at: "2026-03-10T20:00:00Z", priority: 2 })
      // Not overdue by the one definition.
      const future = await make("Future", { due_at: "2026-03-10T18:00:00Z" })
      const undated = await make("Undated", {})
      const reminder = await make("Past reminder", { due_at: "2026-03-09T09:00:00Z", is_reminder: true })
      const quota = await make("Quota", { progress_target: 2, rrule: "FREQ=DAILY" })
      const done = await make("Done", { due_at: "2026-03-09T09:00:00Z" })
      const trashed = await make("Trashed", { due_at: "2026-03-09T09:00:00Z" })
      expect((await user.api.post(`/api/tasks/${done.id}/done`)).status).toBe(200)
      expect((await user.api.delete(`/api/tasks/${trashed.id}`)).status).toBe(200)
      // Someone else's overdue task in a shared project is not the caller's.
      const bobsOverdue = await createTask(bob.api, { title: "Bob overdue shared", due_at: "2026-03-09T09:00:00Z", project_id: sharedProject })
      const others = [p4a, p4b, deadline, future, undated, reminder, quota, done, trashed]
      const kept = new Map<number, Task>()
      for (const t of others) kept.set(t.id, await read(user, t.id))
      const bobBefore = await read(bob, bobsOverdue.id)
      expect(await listIds(user.api, "overdue=true")).toEqual(
        [p2, p3b, recurring, deadline, p0, p3a, p4a, p4b, p1].map((t) => t.id)
      )
      const before = await undoEntries(service, user.id)

      const body = await bulkOk(user, "/api/tasks/bulk/snooze-overdue", { until })
      expect(body).toEqual(counts({ tasks_affected: 6, snoozed_high: 2, skipped_urgent: 2, skipped_deadline: 1 }))
      for (const t of [p0, p1, p2, p3a, p3b, recurring]) {
        expect(await read(user, t.id)).toMatchObject({ due_at: until, snooze_count: 1, is_snoozed: true })
      }
      for (const t of others) expect(core(await read(user, t.id))).toEqual(core(kept.get(t.id)!))
      expect(await read(bob, bobsOverdue.id)).toEqual(bobBefore)
      expect(await listIds(user.api, "overdue=true")).toEqual([deadline, p4a, p4b].map((t) => t.id))
      const entries = (await undoEntries(service, user.id)).slice(before.length)
      expect(entries.map((e) => [e.action, e.tasks_affected, e.description])).toEqual([
        ["bulk_snooze", 6, `Snoozed 6 overdue task(s) until ${until}`]
      ])

      // Again: nothing left to move, nothing recorded.
      const again = await snapshot(service)
      expect(await bulkOk(user, "/api/tasks/bulk/snooze-overdue", { until })).toEqual(counts({ skipped_urgent: 2, skipped_deadline: 1 }))
      expect(await snapshot(service)).toEqual(again)

      // Undo takes the whole sweep back.
      expect(await undo(user)).toMatchObject({ undone_action: "bulk_snooze", tasks_affected: 6 })
      expect(await listIds(user.api, "overdue=true")).toEqual(
        [p2, p3b, recurring, deadline, p0, p3a, p4a, p4b, p1].map((t) => t.id)
      )
    })

    it("with nothing overdue every counter is zero; until is required", async () => {
      const user = await newUser()
      await createTask(user.api, { title: "Future", due_at: "2026-03-12T09:00:00Z", priority: 4 })
      expect(await bulkOk(user, "/api/tasks/bulk/snooze-overdue", { until: "2026-03-13T09:00:00Z" })).toEqual(ZERO)
      expect(await undoEntries(service, user.id)).toHaveLength(1) // the create
      expect400(await post(user, "/api/tasks/bulk/snooze-overdue", {}), "until")
    })
  })

  describe("POST /api/tasks/bulk/edit", () => {
    it("applies changes to every visible task in ids and include_task_ids, in one bulk_edit entry", async () => {
      const user = await newUser()
      const project = (await user.api.post("/api/projects", { name: "Work" })).body.data.id as number
      const a = await createTask(user.api, { title: "A", priority: 0 })
      const b = await createTask(user.api, { title: "B", priority: 3, labels: ["old"], horizon: "day" })
      const reminder = await createTask(user.api, { title: "Reminder", is_reminder: true, due_at: "2026-03-11T09:00:00Z" })
      const quota = await createTask(user.api, { title: "Quota", progress_target: 2, rrule: "FREQ=WEEKLY" })
      const p4 = await createTask(user.api, { title: "Urgent", priority: 4 })
      const included = await createTask(user.api, { title: "Included" })
      const notSelected = await createTask(user.api, { title: "Not selected" })
      const done = await createTask(user.api, { title: "Done" })
      const trashed = await createTask(user.api, { title: "Trashed" })
      expect((await user.api.post(`/api/tasks/${done.id}/done`)).status).toBe(200)
      expect((await user.api.delete(`/api/tasks/${trashed.id}`)).status).toBe(200)
      const doneBefore = await read(user, done.id)
      const trashedBefore = await read(user, trashed.id)
      const sharedTask = await createTask(bob.api, { title: "Shared", project_id: sharedProject })
      const bobBefore = await read(bob, bobPrivate.id)
      const notSelectedBefore = await read(user, notSelected.id)
      const before = await undoEntries(service, user.id)
      const eventsBefore = (await outboxEvents(service, user.id)).length

      const changes = {
        priority: 2,
        labels: ["x", "y", "x"],
        project_id: project,
        horizon: "week",
        deadline_nag_off: true,
        quota_prompt_config: { enabled: false }
      }
      const body = await bulkOk(user, "/api/tasks/bulk/edit", {
        ids: [a.id, b.id, reminder.id, quota.id, p4.id, done.id, trashed.id, bobPrivate.id, UNKNOWN],
        include_task_ids: [included.id, a.id],
        changes
      })
      // Done and trashed tasks are skipped like invisible and unknown ids.
      expect(body).toEqual(counts({ tasks_affected: 6, tasks_skipped: 4 }))
      expect(Object.keys(body).sort()).toEqual([...COUNT_KEYS].sort())
      for (const t of [a, b, reminder, quota, p4, included]) {
        const now = await read(user, t.id)
        expect(now).toMatchObject({
          priority: 2,
          labels: ["x", "y"],
          project_id: project,
          horizon: "week",
          deadline_nag_off: true,
          quota_prompt_config: { enabled: false }
        })
        expectServiceTime(now.horizon_set_at, NOW)
      }
      expect(await read(bob, bobPrivate.id)).toEqual(bobBefore)
      expect(await read(user, notSelected.id)).toEqual(notSelectedBefore)
      expect(await read(user, done.id)).toEqual(doneBefore)
      expect(await read(user, trashed.id)).toEqual(trashedBefore)
      // The shared project's task was not in the batch.
      expect((await read(bob, sharedTask.id)).priority).toBe(0)

      const entries = (await undoEntries(service, user.id)).slice(before.length)
      expect(entries.map((e) => [e.action, e.tasks_affected, e.description])).toEqual([["bulk_edit", 6, "Edited 6 task(s)"]])
      const events = (await outboxEvents(service, user.id)).slice(eventsBefore)
      expect(events.map((e) => [e.event, e.task_id])).toEqual(
        [a, b, reminder, quota, p4, included].sort((x, y) => x.id - y.id).map((t) => ["task.updated", t.id])
      )
      expect([...events.find((e) => e.task_id === b.id)!.payload.fields_changed].sort()).toEqual(
        ["deadline_nag_off", "horizon", "horizon_set_at", "labels", "priority", "project_id", "quota_prompt_config"]
      )

      expect(await undo(user)).toMatchObject({ undone_action: "bulk_edit", tasks_affected: 6 })
      expect(await read(user, b.id)).toMatchObject({ priority: 3, labels: ["old"], horizon: "day", deadline_nag_off: false, quota_prompt_config: null })
      expect((await read(user, a.id)).project_id).toBe(a.project_id)
    })

    it("a task in a shared project may be edited; a project the caller cannot use refuses the whole batch", async () => {
      const user = await newUser()
      const mine = await createTask(user.api, { title: "Mine" })
      const sharedTask = await createTask(bob.api, { title: "Shared chore", project_id: sharedProject })
      expect(await bulkOk(user, "/api/tasks/bulk/edit", { ids: [mine.id, sharedTask.id], changes: { priority: 1 } })).toEqual(
        counts({ tasks_affected: 2 })
      )
      expect((await read(bob, sharedTask.id)).priority).toBe(1)

      const bobsProject = (await bob.api.post("/api/projects", { name: "Bob private" })).body.data.id as number
      const before = await snapshot(service)
      const res = await post(user, "/api/tasks/bulk/edit", { ids: [mine.id], changes: { priority: 4, project_id: bobsProject } })
      expect400(res, "changes.project_id")
      expect(await snapshot(service)).toEqual(before)
    })

    it("a shared task moves only to a project its owner can see too: one such task refuses the whole batch", async () => {
      const user = await newUser()
      const mine = await createTask(user.api, { title: "Mine" })
      const sharedTask = await createTask(bob.api, { title: "Sweep the yard", project_id: sharedProject })
      const userPrivate = (await user.api.post("/api/projects", { name: "My corner" })).body.data.id as number
      const userShared = (await user.api.post("/api/projects", { name: "My porch", shared: true })).body.data.id as number

      const before = await snapshot(service)
      const res = await post(user, "/api/tasks/bulk/edit", { ids: [mine.id, sharedTask.id], changes: { priority: 2, project_id: userPrivate } })
      expect(res.status, res.text).toBe(400)
      expect(res.body).toMatchObject({
        code: "VALIDATION_ERROR",
        details: {
          "changes.project_id": "The task's owner cannot see this project: only their own projects and shared ones can hold their tasks"
        }
      })
      expect(await snapshot(service)).toEqual(before)
      expect(await read(bob, sharedTask.id)).toMatchObject({ project_id: sharedProject, priority: 0 })

      // The same move into a shared project, or of the caller's own task alone, goes through.
      expect(await bulkOk(user, "/api/tasks/bulk/edit", { ids: [mine.id, sharedTask.id], changes: { project_id: userShared } }))
        .toEqual(counts({ tasks_affected: 2 }))
      expect((await read(bob, sharedTask.id)).project_id).toBe(userShared)
      expect(await bulkOk(user, "/api/tasks/bulk/edit", { ids: [mine.id], changes: { project_id: userPrivate } }))
        .toEqual(counts({ tasks_affected: 1 }))
      expect((await read(user, mine.id)).project_id).toBe(userPrivate)
    })

    it("affirm_horizon re-stamps horizon_set_at without changing the horizon", async () => {
      const user = await newUser()
      const t = await createTask(user.api, { title: "Grow me", horizon: "month" })
      await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`UPDATE tasks SET horizon_set_at = '2025-06-01T00:00:00Z' WHERE id = ${t.id}`))
      expect((await read(user, t.id)).horizon_set_at).toBe("2025-06-01T00:00:00.000Z")
      expect(await bulkOk(user, "/api/tasks/bulk/edit", { ids: [t.id], changes: { affirm_horizon: true } })).toEqual(
        counts({ tasks_affected: 1 })
      )
      const now = await read(user, t.id)
      expect(now.horizon).toBe("month")
      expectServiceTime(now.horizon_set_at, NOW)
    })

    it("target_at against deadlines: refused per task (skipped_deadline), allowed by allow_past_deadline_ids, clamped by cap_at_deadline_ids", async () => {
      const user = await newUser()
      const plain = await createTask(user.api, { title: "No deadline" })
      const early = await createTask(user.api, { title: "Early deadline", deadline_at: "2026-03-20T00:00:00Z" })
      const allowed = await createTask(user.api, { title: "Allowed past", deadline_at: "2026-03-20T00:00:00Z" })
      const capped = await createTask(user.api, { title: "Capped", deadline_at: "2026-03-20T00:00:00Z" })
      const late = await createTask(user.api, { title: "Late deadline", deadline_at: "2026-05-01T00:00:00Z" })
      const earlyBefore = await read(user, early.id)
      const target = "2026-04-01T00:00:00.000Z"

      const body = await bulkOk(user, "/api/tasks/bulk/edit", {
        ids: [plain.id, early.id, allowed.id, capped.id, late.id],
        changes: { target_at: target },
        allow_past_deadline_ids: [allowed.id],
        cap_at_deadline_ids: [capped.id, plain.id, late.id]
      })
      expect(body).toEqual(counts({ tasks_affected: 4, skipped_deadline: 1, capped_deadline: 1 }))
      expect(core(await read(user, early.id))).toEqual(core(earlyBefore))
      for (const [t, expected] of [[plain, target], [allowed, target], [capped, "2026-03-20T00:00:00.000Z"], [late, target]] as const) {
        const now = await read(user, t.id)
        expect(now, t.title).toMatchObject({ target_at: expected, target_auto: false, segment_targeted_at: expected })
        expectServiceTime(now.target_set_at, NOW)
      }

      // Null on a deadline task means back to automatic (spec §4.3).
      expect(await bulkOk(user, "/api/tasks/bulk/edit", { ids: [allowed.id, plain.id], changes: { target_at: null } })).toEqual(
        counts({ tasks_affected: 2 })
      )
      expect(await read(user, allowed.id)).toMatchObject({ target_at: "2026-03-20T00:00:00.000Z", target_auto: true })
      expect(await read(user, plain.id)).toMatchObject({ target_at: null, target_auto: false })
    })

    it("deadline_at against due dates: a due date after the new deadline is skipped, capped or allowed", async () => {
      const user = await newUser()
      const fine = await createTask(user.api, { title: "Due before", due_at: "2026-03-15T09:00:00Z" })
      const after = await createTask(user.api, { title: "Due after", due_at: "2026-03-30T09:00:00Z" })
      const cap = await createTask(user.api, { title: "Due after, capped", due_at: "2026-03-30T09:00:00Z" })
      const allow = await createTask(user.api, { title: "Due after, allowed", due_at: "2026-03-30T09:00:00Z" })
      const deadline = "2026-03-25T00:00:00.000Z"
      const afterBefore = await read(user, after.id)

      const body = await bulkOk(user, "/api/tasks/bulk/edit", {
        ids: [fine.id, after.id, cap.id, allow.id],
        changes: { deadline_at: deadline },
        cap_at_deadline_ids: [cap.id],
        allow_past_deadline_ids: [allow.id]
      })
      expect(body).toEqual(counts({ tasks_affected: 3, skipped_deadline: 1, capped_deadline: 1 }))
      expect(core(await read(user, after.id))).toEqual(core(afterBefore))
      expect(await read(user, fine.id)).toMatchObject({ deadline_at: deadline, due_at: "2026-03-15T09:00:00.000Z" })
      expect(await read(user, cap.id)).toMatchObject({ deadline_at: deadline, due_at: deadline })
      expect(await read(user, allow.id)).toMatchObject({ deadline_at: deadline, due_at: "2026-03-30T09:00:00.000Z" })
    })

    it("an automatic target follows a new deadline, earlier or later", async () => {
      const user = await newUser()
      const auto = await createTask(user.api, { title: "Auto target", deadline_at: "2026-04-30T00:00:00Z" })
      expect(auto).toMatchObject({ target_at: "2026-04-30T00:00:00.000Z", target_auto: true })
      expect(await bulkOk(user, "/api/tasks/bulk/edit", { ids: [auto.id], changes: { deadline_at: "2026-04-15T00:00:00Z" } })).toEqual(
        counts({ tasks_affected: 1 })
      )
      expect(await read(user, auto.id)).toMatchObject({
        deadline_at: "2026-04-15T00:00:00.000Z",
        target_at: "2026-04-15T00:00:00.000Z",
        target_auto: true,
        target_set_at: null
      })
      expect(await bulkOk(user, "/api/tasks/bulk/edit", { ids: [auto.id], changes: { deadline_at: "2026-05-15T00:00:00Z" } })).toEqual(
        counts({ tasks_affected: 1 })
      )
      expect(await read(user, auto.id)).toMatchObject({ target_at: "2026-05-15T00:00:00.000Z", target_auto: true })

      // A deadline on a task without a target gives it an automatic one, as on create (the same rule as on create, in domain/TaskRules.ts).
      const plain = await createTask(user.api, { title: "No target" })
      expect(await bulkOk(user, "/api/tasks/bulk/edit", { ids: [plain.id], changes: { deadline_at: "2026-04-20T00:00:00Z" } })).toEqual(
        counts({ tasks_affected: 1 })
      )
      expect(await read(user, plain.id)).toMatchObject({ target_at: "2026-04-20T00:00:00.000Z", target_auto: true, target_set_at: null })
      // Removing the deadline takes the automatic target with it.
      expect(await bulkOk(user, "/api/tasks/bulk/edit", { ids: [plain.id], changes: { deadline_at: null } })).toEqual(
        counts({ tasks_affected: 1 })
      )
      expect(await read(user, plain.id)).toMatchObject({ deadline_at: null, target_at: null, target_auto: false })
      // The single PATCH follows the same rule.
      const patched = await user.api.patch(`/api/tasks/${auto.id}`, { deadline_at: "2026-04-01T00:00:00Z" })
      expect(patched.status).toBe(200)
      expect(patched.body.data).toMatchObject({ target_at: "2026-04-01T00:00:00.000Z", target_auto: true })
      expect(patched.body.data.fields_changed.sort()).toEqual(["deadline_at", "target_at"])
    })

    it("date_task_ids with delta_minutes moves due dates; tasks without one count as skipped_no_due_date and are left alone", async () => {
      const user = await newUser()
      const a = await createTask(user.api, { title: "A", due_at: "2026-03-11T10:00:00Z" })
      const daily = await createTask(user.api, { title: "Daily", due_at: "2026-03-11T07:00:00Z", rrule: "FREQ=DAILY" })
      const reminder = await createTask(user.api, { title: "Reminder", due_at: "2026-03-11T08:00:00Z", is_reminder: true })
      const undated = await createTask(user.api, { title: "Undated" })
      const quota = await createTask(user.api, { title: "Quota", progress_target: 2, rrule: "FREQ=WEEKLY" })
      const notDated = await createTask(user.api, { title: "Not in date_task_ids", due_at: "2026-03-11T10:00:00Z" })
      const outsider = await createTask(user.api, { title: "Only in date_task_ids", due_at: "2026-03-11T10:00:00Z" })
      const nearDeadline = await createTask(user.api, { title: "Deadline", due_at: "2026-03-11T10:00:00Z", deadline_at: "2026-03-11T11:00:00Z" })
      const capped = await createTask(user.api, { title: "Deadline capped", due_at: "2026-03-11T10:00:00Z", deadline_at: "2026-03-11T11:00:00Z" })
      const kept = new Map<number, Task>()
      for (const t of [undated, quota, outsider, nearDeadline]) kept.set(t.id, await read(user, t.id))

      const body = await bulkOk(user, "/api/tasks/bulk/edit", {
        ids: [a.id, daily.id, reminder.id, undated.id, quota.id, notDated.id, nearDeadline.id, capped.id],
        date_task_ids: [a.id, daily.id, reminder.id, undated.id, quota.id, outsider.id, nearDeadline.id, capped.id],
        cap_at_deadline_ids: [capped.id],
        delta_minutes: 90,
        changes: { priority: 1 }
      })
      expect(body).toEqual(counts({ tasks_affected: 5, skipped_no_due_date: 2, skipped_deadline: 1, capped_deadline: 1 }))
      expect(await read(user, a.id)).toMatchObject({ due_at: "2026-03-11T11:30:00.000Z", anchor_time: "11:30", priority: 1 })
      expect(await read(user, daily.id)).toMatchObject({ due_at: "2026-03-11T08:30:00.000Z", anchor_time: "08:30", priority: 1 })
      expect(await read(user, reminder.id)).toMatchObject({ due_at: "2026-03-11T09:30:00.000Z", priority: 1 })
      expect(await read(user, notDated.id)).toMatchObject({ due_at: "2026-03-11T10:00:00.000Z", priority: 1 })
      expect(await read(user, capped.id)).toMatchObject({ due_at: "2026-03-11T11:00:00.000Z", priority: 1 })
      for (const t of [undated, quota, outsider, nearDeadline]) expect(core(await read(user, t.id)), t.title).toEqual(core(kept.get(t.id)!))

      // A negative delta moves earlier; without delta_minutes date_task_ids do nothing.
      expect(await bulkOk(user, "/api/tasks/bulk/edit", { ids: [a.id], date_task_ids: [a.id], delta_minutes: -1440 })).toEqual(
        counts({ tasks_affected: 1 })
      )
      expect((await read(user, a.id)).due_at).toBe("2026-03-10T11:30:00.000Z")
      expect(await bulkOk(user, "/api/tasks/bulk/edit", { ids: [undated.id], date_task_ids: [undated.id] })).toEqual(
        counts({ tasks_affected: 1 })
      )
    })

    it("per_task rrule sets each task's rule; a quota changing period starts the new period", async () => {
      const user = await newUser()
      const dated = await createTask(user.api, { title: "Dated", due_at: "2026-03-12T09:00:00Z" })
      const undated = await createTask(user.api, { title: "Undated" })
      const recurring = await createTask(user.api, { title: "Recurring", due_at: "2026-03-12T09:00:00Z", rrule: "FREQ=DAILY" })
      const quota = await createTask(user.api, { title: "Quota", progress_target: 4, rrule: "FREQ=WEEKLY" })
      const other = await createTask(user.api, { title: "Other" })
      expect(quota.progress_period_start).toBe("2026-03-08T00:00:00.000Z")

      const body = await bulkOk(user, "/api/tasks/bulk/edit", {
        ids: [dated.id, undated.id, recurring.id, quota.id, other.id],
        per_task: {
          [dated.id]: { rrule: "FREQ=WEEKLY" },
          [undated.id]: { rrule: "FREQ=DAILY;BYHOUR=18;BYMINUTE=0" },
          [recurring.id]: { rrule: null },
          [quota.id]: { rrule: "FREQ=MONTHLY" },
          [UNKNOWN]: { rrule: "FREQ=DAILY" }
        }
      })
      // A selected task the edit leaves as it was still counts as affected.
      expect(body).toEqual(counts({ tasks_affected: 5 }))
      expect(await read(user, dated.id)).toMatchObject({ rrule: "FREQ=WEEKLY", is_recurring: true, due_at: "2026-03-12T09:00:00.000Z" })
      expect(await read(user, undated.id)).toMatchObject({ rrule: "FREQ=DAILY;BYHOUR=18;BYMINUTE=0", is_recurring: true, due_at: "2026-03-10T18:00:00.000Z" })
      expect(await read(user, recurring.id)).toMatchObject({ rrule: null, is_recurring: false, due_at: "2026-03-12T09:00:00.000Z" })
      expect(await read(user, quota.id)).toMatchObject({ rrule: "FREQ=MONTHLY", progress_period_start: "2026-03-01T00:00:00.000Z" })
      expect((await storedPeriod(service, quota.id)).end).toBe("2026-04-01T00:00:00.000Z")
      expect((await read(user, other.id)).rrule).toBe(null)
    })

    it("a batch that would leave any selected quota without a period is refused whole (400) and nothing changes", async () => {
      const user = await newUser()
      const task = await createTask(user.api, { title: "Task" })
      const quota = await createTask(user.api, { title: "Quota", progress_target: 2, rrule: "FREQ=WEEKLY" })
      const quota2 = await createTask(user.api, { title: "Quota 2", is_tracked: true, rrule: "FREQ=DAILY" })
      const before = await snapshot(service)
      const res = await post(user, "/api/tasks/bulk/edit", {
        ids: [task.id, quota.id, quota2.id],
        changes: { priority: 3, labels: ["z"] },
        per_task: { [quota2.id]: { rrule: null } }
      })
      expect(res.status).toBe(400)
      expect(res.body).toEqual({ error: "A quota needs a period", code: "VALIDATION_ERROR", details: { rrule: "A quota needs a period" } })
      expect(await snapshot(service)).toEqual(before)
      // A legacy quota without a rule stays editable while the edit leaves its rule alone (quota rule 5).
      await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`UPDATE tasks SET rrule = NULL, progress_period_start = NULL, progress_period_end = NULL WHERE id = ${quota.id}`))
      expect(await bulkOk(user, "/api/tasks/bulk/edit", { ids: [task.id, quota.id], changes: { priority: 3 } })).toEqual(
        counts({ tasks_affected: 2 })
      )
      const legacyBefore = await snapshot(service)
      expect(await post(user, "/api/tasks/bulk/edit", { ids: [quota.id, task.id], per_task: { [quota.id]: { rrule: null } } })).toMatchObject({
        status: 400,
        body: { error: "A quota needs a period" }
      })
      expect(await snapshot(service)).toEqual(legacyBefore)
    })

    it("ids the caller cannot see are skipped exactly like unknown ids and never touched", async () => {
      const user = await newUser()
      const bobBefore = await read(bob, bobPrivate.id)
      const asBob = await bulkOk(user, "/api/tasks/bulk/edit", { ids: [bobPrivate.id], changes: { priority: 4, labels: ["mine"] } })
      const asUnknown = await bulkOk(user, "/api/tasks/bulk/edit", { ids: [UNKNOWN], changes: { priority: 4, labels: ["mine"] } })
      expect(asBob).toEqual(counts({ tasks_skipped: 1 }))
      expect(asUnknown).toEqual(asBob)
      expect(await bulkOk(user, "/api/tasks/bulk/done", { ids: [bobPrivate.id] })).toEqual(doneCounts({ tasks_skipped: 1 }))
      expect(await bulkOk(user, "/api/tasks/bulk/snooze", { task_ids: [bobPrivate.id], until: "2026-03-20T00:00:00Z" })).toEqual(
        counts({ tasks_skipped: 1 })
      )
      expect(await read(bob, bobPrivate.id)).toEqual(bobBefore)
      expect(await undoEntries(service, user.id)).toEqual([])
      expect(await outboxEvents(service, user.id)).toEqual([])
    })
  })

  describe("limits (bulk ids: 1-500 per request)", () => {
    it("0 and 501 ids are a 400 on every bulk endpoint; 500 is accepted", async () => {
      const user = await newUser()
      const ids = (n: number) => Array.from({ length: n }, (_, i) => UNKNOWN + i)
      const before = await snapshot(service)
      for (const n of [0, 501]) {
        expect400(await post(user, "/api/tasks/bulk/done", { ids: ids(n) }), "ids")
        expect400(await post(user, "/api/tasks/bulk/snooze", { task_ids: ids(n), until: "2026-03-20T00:00:00Z" }), "task_ids")
        expect400(await post(user, "/api/tasks/bulk/snooze", { ids: ids(n), until: "2026-03-20T00:00:00Z" }), "ids")
        expect400(await post(user, "/api/tasks/bulk/edit", { ids: ids(n), changes: { priority: 1 } }), "ids")
      }
      expect400(await post(user, "/api/tasks/bulk/edit", { ids: [UNKNOWN], include_task_ids: ids(501) }), "include_task_ids")
      expect400(await post(user, "/api/tasks/bulk/edit", { ids: [0] }))
      expect400(await post(user, "/api/tasks/bulk/edit", { ids: [2 ** 31] }))
      expect400(await post(user, "/api/tasks/bulk/edit", { ids: [UNKNOWN], changes: { priority: 5 } }))
      expect400(await post(user, "/api/tasks/bulk/edit", { ids: [UNKNOWN], per_task: { abc: { rrule: "FREQ=DAILY" } } }))
      expect400(await post(user, "/api/tasks/bulk/done", { ids: ["1"] }))
      expect400(await post(user, "/api/tasks/bulk/done", "{"))
      expect(await snapshot(service)).toEqual(before)

      expect(await bulkOk(user, "/api/tasks/bulk/done", { ids: ids(500) })).toEqual(doneCounts({ tasks_skipped: 500 }))
      expect(await bulkOk(user, "/api/tasks/bulk/snooze", { task_ids: ids(500), until: "2026-03-20T00:00:00Z" })).toEqual(
        counts({ tasks_skipped: 500 })
      )
      expect(await bulkOk(user, "/api/tasks/bulk/edit", { ids: ids(500), changes: { priority: 1 } })).toEqual(counts({ tasks_skipped: 500 }))
    })

    it("every bulk endpoint needs authentication", async () => {
      for (const path of ["done", "snooze", "snooze-overdue", "edit"]) {
        expect((await service.anonymous.post(`/api/tasks/bulk/${path}`, { ids: [1], task_ids: [1], until: "2026-03-20T00:00:00Z" })).status).toBe(401)
      }
    })
  })
})
