import { Option, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { TaskId } from "../src/kernel/Ids.js"
import { TaskList } from "../src/tasks/Task.js"
import { DataOf, decode, wireData } from "./support/api-client.js"
import { query } from "./support/rows.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, taskIds } from "./support/tasks.js"

/** Sunday 8 March 2026, 08:00 in New York: the day clocks there spring forward (23-hour day). */
const NOW = new Date("2026-03-08T12:00:00Z")

describe("GET /api/tasks and GET /api/tasks/counts", () => {
  let service: TestService

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
  })
  afterAll(async () => {
    await service.stop()
  })

  /** States no endpoint reaches yet (done, archived) are set in the database directly. */
  const setState = (id: number, state: { done?: boolean; archived?: boolean }) =>
    query(service, (sql) =>
      sql`UPDATE tasks SET
            done = ${state.done ?? false},
            done_at = CASE WHEN ${state.done ?? false} THEN '2026-03-08T11:00:00Z'::timestamptz END,
            archived_at = CASE WHEN ${state.archived ?? false} THEN '2026-03-08T11:00:00Z'::timestamptz END
          WHERE id = ${id} RETURNING id`)

  const ids = (...tasks: ReadonlyArray<{ readonly id: number }>): Array<number> => tasks.map((t) => t.id)
  /** A new project of the user's, through the typed client. */
  const newProject = async (user: TestUser, name: string, shared?: boolean) =>
    (await user.client.projects.create({ payload: shared === undefined ? { name } : { name, shared } })).data.id

  it("answers {tasks, count}: open tasks ordered by due date (undated last), ties by id", async () => {
    const user = await service.user("order", "America/New_York")
    const t1 = await createTask(user.api, { title: "late March", due_at: "2026-03-20T10:00:00Z" })
    const t2 = await createTask(user.api, { title: "undated one" })
    const t3 = await createTask(user.api, { title: "soon", due_at: "2026-03-10T10:00:00Z" })
    const t4 = await createTask(user.api, { title: "late March too", due_at: "2026-03-20T10:00:00Z" })
    const t5 = await createTask(user.api, { title: "undated two" })
    const t6 = await createTask(user.api, { title: "overdue", due_at: "2026-03-01T10:00:00Z" })

    const res = await user.raw.get("/api/tasks")
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ data: { tasks: expect.any(Array), count: 6 } })
    const list = decode(DataOf(TaskList), res.body).data
    expect(list.tasks.map((t) => t.title)).toEqual([
      "overdue",
      "soon",
      "late March",
      "late March too",
      "undated one",
      "undated two"
    ])
    expect(list.tasks.map((t) => t.id)).toEqual(ids(t6, t3, t1, t4, t2, t5))
    // List items are the same Task objects GET /api/tasks/{id} answers, byte for byte.
    const wireTasks = decode(DataOf(Schema.Struct({ tasks: Schema.Array(Schema.Unknown) })), res.body).data.tasks
    expect(wireTasks[0]).toEqual(wireData((await user.raw.get(`/api/tasks/${t6.id}`)).body))
  })

  it("done, archived and trashed select those states; the default is open, kept and not trashed", async () => {
    const user = await service.user("states", "America/New_York")
    const open = await createTask(user.api, { title: "Open" })
    const finished = await createTask(user.api, { title: "Finished" })
    await setState(finished.id, { done: true, archived: true })
    const skipped = await createTask(user.api, { title: "Skipped" })
    await setState(skipped.id, { archived: true })
    const binned = await createTask(user.api, { title: "Binned" })
    await user.client.tasks.delete({ path: { id: TaskId.make(binned.id) } })

    expect(await taskIds(user.client)).toEqual(ids(open))
    expect(await taskIds(user.client, { done: false })).toEqual(ids(open))
    expect(await taskIds(user.client, { done: true })).toEqual(ids(finished))
    expect(await taskIds(user.client, { archived: true })).toEqual(ids(finished, skipped))
    expect(await taskIds(user.client, { archived: true, done: false })).toEqual(ids(skipped))
    expect(await taskIds(user.client, { archived: false })).toEqual(ids(open))
    expect(await taskIds(user.client, { trashed: true })).toEqual(ids(binned))
    expect(await taskIds(user.client, { trashed: false })).toEqual(ids(open))
    const done = await user.client.tasks.list({ urlParams: { done: true } })
    expect(done.data.tasks[0]).toMatchObject({ done: true, done_at: "2026-03-08T11:00:00.000Z", archived_at: "2026-03-08T11:00:00.000Z" })
  })

  it("project_id and its alias project narrow to one project", async () => {
    const user = await service.user("projects", "America/New_York")
    const work = await newProject(user, "Work")
    const inboxTask = await createTask(user.api, { title: "Inbox thing" })
    const w1 = await createTask(user.api, { title: "Quarterly plan", project_id: work, due_at: "2026-03-12T14:00:00Z" })
    const w2 = await createTask(user.api, { title: "Expense report", project_id: work, due_at: "2026-03-11T14:00:00Z" })

    expect(await taskIds(user.client, { project_id: work })).toEqual(ids(w2, w1))
    expect(await taskIds(user.client, { project: work })).toEqual(ids(w2, w1))
    expect(await taskIds(user.client, { project_id: inboxTask.project_id })).toEqual(ids(inboxTask))
    expect(await taskIds(user.client, { project_id: 999999 })).toEqual([])
  })

  it("label matches a label name exactly", async () => {
    const user = await service.user("labels", "America/New_York")
    const home = await createTask(user.api, { title: "Hoover", labels: ["home"] })
    const both = await createTask(user.api, { title: "Mow", labels: ["garden", "home"] })
    const cap = await createTask(user.api, { title: "Prune", labels: ["Garden"] })
    await createTask(user.api, { title: "Unlabelled" })

    expect(await taskIds(user.client, { label: "home" })).toEqual(ids(home, both))
    expect(await taskIds(user.client, { label: "garden" })).toEqual(ids(both))
    expect(await taskIds(user.client, { label: "Garden" })).toEqual(ids(cap))
    expect(await taskIds(user.client, { label: "hom" })).toEqual([])
  })

  it("search matches title and notes, ignores case and treats % and _ literally", async () => {
    const user = await service.user("search", "America/New_York")
    const deposit = await createTask(user.api, { title: "Pay 50% deposit" })
    const bricks = await createTask(user.api, { title: "Order 500 bricks" })
    const leak = await createTask(user.api, { title: "Kitchen leak", notes: "Call the PLUMBER before Friday" })
    const snake = await createTask(user.api, { title: "rename snake_case files" })
    await createTask(user.api, { title: "rename snakeXcase files" })

    expect(await taskIds(user.client, { search: "50%" })).toEqual(ids(deposit))
    expect(await taskIds(user.client, { search: "BRICKS" })).toEqual(ids(bricks))
    expect(await taskIds(user.client, { search: "plumber" })).toEqual(ids(leak))
    expect(await taskIds(user.client, { search: "snake_case" })).toEqual(ids(snake))
    expect(await taskIds(user.client, { search: "nothing-like-this" })).toEqual([])
    expect((await taskIds(user.client, { search: "" })).length).toBe(5)
  })

  it("kind, recurring and one_off narrow before pagination; quotas are listed by default", async () => {
    const user = await service.user("kinds", "America/New_York")
    const plain = await createTask(user.api, { title: "One-off", due_at: "2026-03-10T14:00:00Z" })
    const recurring = await createTask(user.api, { title: "Daily standup", due_at: "2026-03-11T14:00:00Z", rrule: "FREQ=DAILY" })
    const reminder = await createTask(user.api, { title: "Call mum", due_at: "2026-03-12T14:00:00Z", is_reminder: true })
    const recurringReminder = await createTask(user.api, {
      title: "Pills",
      due_at: "2026-03-13T14:00:00Z",
      is_reminder: true,
      rrule: "FREQ=DAILY"
    })
    const quota = await createTask(user.api, { title: "Gym 3x a week", progress_target: 3, rrule: "FREQ=WEEKLY" })
    const tracked = await createTask(user.api, { title: "Meditate daily", progress_target: 1, is_tracked: true, rrule: "FREQ=DAILY" })
    expect(quota).toMatchObject({ is_recurring: false, due_at: null, progress_target: 3 })

    const all = ids(plain, recurring, reminder, recurringReminder, quota, tracked)
    expect(await taskIds(user.client)).toEqual(all)
    expect(await taskIds(user.client, { kind: "task" })).toEqual(ids(plain, recurring))
    expect(await taskIds(user.client, { kind: "reminder" })).toEqual(ids(reminder, recurringReminder))
    expect(await taskIds(user.client, { kind: "quota" })).toEqual(ids(quota, tracked))
    expect(await taskIds(user.client, { recurring: true })).toEqual(ids(recurring, recurringReminder))
    expect(await taskIds(user.client, { recurring: false })).toEqual(ids(plain, reminder, quota, tracked))
    expect(await taskIds(user.client, { one_off: true })).toEqual(ids(plain, reminder))
    expect(await taskIds(user.client, { one_off: false })).toEqual(ids(recurring, recurringReminder, quota, tracked))
    expect(await taskIds(user.client, { kind: "task", recurring: true })).toEqual(ids(recurring))
    // Filtering happens before the page is cut: the first quota is the 5th task overall.
    expect(await taskIds(user.client, { kind: "quota", limit: 1 })).toEqual(ids(quota))
    expect(await taskIds(user.client, { kind: "reminder", limit: 1, offset: 1 })).toEqual(ids(recurringReminder))

    const bad = await user.raw.get("/api/tasks?kind=someday")
    expect(bad.status).toBe(400)
    expect(bad.body).toEqual({ error: "Invalid request", code: "VALIDATION_ERROR", details: { kind: "must be task, reminder or quota" } })
  })

  it("overdue=true is what is due now (never reminders or quotas); overdue=false is everything else", async () => {
    const user = await service.user("late", "America/New_York")
    const pastTask = await createTask(user.api, { title: "Past task", due_at: "2026-03-07T10:00:00Z" })
    const futureTask = await createTask(user.api, { title: "Future task", due_at: "2026-03-09T10:00:00Z" })
    const undated = await createTask(user.api, { title: "Undated" })
    const pastReminder = await createTask(user.api, { title: "Past reminder", due_at: "2026-03-07T09:00:00Z", is_reminder: true })
    const pastRecurring = await createTask(user.api, { title: "Past recurring", due_at: "2026-03-06T10:00:00Z", rrule: "FREQ=DAILY" })
    const quota = await createTask(user.api, { title: "Quota", progress_target: 2, rrule: "FREQ=DAILY" })
    const trashedPast = await createTask(user.api, { title: "Trashed past", due_at: "2026-03-05T10:00:00Z" })
    await user.client.tasks.delete({ path: { id: TaskId.make(trashedPast.id) } })

    expect(await taskIds(user.client, { overdue: true })).toEqual(ids(pastRecurring, pastTask))
    // A task without a due date is not overdue, so it belongs here.
    expect(await taskIds(user.client, { overdue: false })).toEqual(ids(pastReminder, futureTask, undated, quota))
    expect(await taskIds(user.client, { overdue: true, limit: 1 })).toEqual(ids(pastRecurring))
    expect(await taskIds(user.client, { overdue: true, limit: 1, offset: 1 })).toEqual(ids(pastTask))
    // Something in the trash is not due any more.
    expect(await taskIds(user.client, { overdue: true, trashed: true })).toEqual([])
    expect(await taskIds(user.client, { overdue: false, trashed: true })).toEqual(ids(trashedPast))
  })

  it("limit defaults to 200 and offset to 0; pages follow the same order without gaps or repeats", async () => {
    const user = await service.user("many", "America/New_York")
    const N = 205
    // Created in an order unlike their due order, so id order and due order differ.
    const order = Array.from({ length: N }, (_, i) => (i * 83) % N)
    const byHour = new Map<number, number>()
    for (let start = 0; start < N; start += 15) {
      const batch = order.slice(start, start + 15)
      const made = await Promise.all(batch.map((hour) =>
        createTask(user.api, {
          title: `Task at hour ${hour}`,
          due_at: new Date(Date.UTC(2026, 3, 1) + hour * 3_600_000).toISOString(),
          ...(hour % 10 === 0 ? { labels: ["tenth"] } : {})
        })
      ))
      batch.forEach((hour, i) => byHour.set(hour, made[i]!.id))
    }
    const expected = Array.from({ length: N }, (_, hour) => byHour.get(hour)!)

    const first = (await user.client.tasks.list({ urlParams: {} })).data
    expect(first.count).toBe(200)
    expect(first.tasks.map((t) => t.id)).toEqual(expected.slice(0, 200))
    expect(first.tasks[0]!.due_at).toBe("2026-04-01T00:00:00.000Z")

    expect(await taskIds(user.client, { limit: 1000 })).toEqual(expected)
    expect(await taskIds(user.client, { limit: 10, offset: 195 })).toEqual(expected.slice(195, 205))
    expect(await taskIds(user.client, { offset: 200 })).toEqual(expected.slice(200))
    expect(await taskIds(user.client, { offset: 205 })).toEqual([])
    expect(await taskIds(user.client, { limit: 1 })).toEqual([expected[0]])

    const pages: Array<number> = []
    for (let offset = 0; offset < N; offset += 50) pages.push(...await taskIds(user.client, { limit: 50, offset }))
    expect(pages).toEqual(expected)

    // The label filter runs before the page is cut: 5th-9th of the 21 "tenth" tasks.
    expect(await taskIds(user.client, { label: "tenth", limit: 5, offset: 5 })).toEqual([50, 60, 70, 80, 90].map((h) => byHour.get(h)))
    expect(await taskIds(user.client, { label: "tenth", offset: 20 })).toEqual([byHour.get(200)])
  })

  it("shared-project tasks of others merge into the order and the pages; overdue=true keeps only one's own", async () => {
    const owner = await service.user("owner", "America/New_York")
    const friend = await service.user("friend", "Europe/London")
    const family = await newProject(owner, "Family", true)
    const f1 = await createTask(friend.api, { title: "Friend soon", project_id: family, due_at: "2026-03-09T10:00:00Z" })
    const f2 = await createTask(friend.api, { title: "Friend late", project_id: family, due_at: "2026-03-01T10:00:00Z" })
    const o1 = await createTask(owner.api, { title: "Owner late", due_at: "2026-03-05T10:00:00Z" })
    const o2 = await createTask(owner.api, { title: "Owner later", due_at: "2026-03-10T10:00:00Z" })
    const o3 = await createTask(owner.api, { title: "Owner undated" })

    expect(await taskIds(owner.client)).toEqual(ids(f2, o1, f1, o2, o3))
    expect(await taskIds(owner.client, { limit: 2, offset: 1 })).toEqual(ids(o1, f1))
    expect(await taskIds(owner.client, { limit: 2, offset: 3 })).toEqual(ids(o2, o3))
    expect(await taskIds(owner.client, { overdue: true })).toEqual(ids(o1))
    expect(await taskIds(owner.client, { project_id: family })).toEqual(ids(f2, f1))
    expect(await taskIds(friend.client)).toEqual(ids(f2, f1))
    expect(await taskIds(friend.client, { overdue: true })).toEqual(ids(f2))
  })

  describe("GET /api/tasks/counts", () => {
    /**
     * On 8 March 2026 New York's day runs from 05:00Z (midnight EST) to 04:00Z next day
     * (midnight EDT): 23 hours. The same tasks fall differently in UTC's day.
     */
    const makeDay = async (user: TestUser, shareWith: TestUser) => {
      await createTask(user.api, { title: "A 23:30 the evening before", due_at: "2026-03-08T04:30:00Z" })
      await createTask(user.api, { title: "B local midnight", due_at: "2026-03-08T05:00:00Z" })
      await createTask(user.api, { title: "C this morning", due_at: "2026-03-08T11:00:00Z" })
      await createTask(user.api, { title: "D 23:30 tonight", due_at: "2026-03-09T03:30:00Z" })
      await createTask(user.api, { title: "E midnight tomorrow", due_at: "2026-03-09T04:00:00Z" })
      await createTask(user.api, { title: "F undated" })
      await createTask(user.api, { title: "G reminder", due_at: "2026-03-08T06:00:00Z", is_reminder: true })
      await createTask(user.api, { title: "H quota", progress_target: 5, rrule: "FREQ=WEEKLY" })
      await createTask(user.api, { title: "I 21:00 the evening before", due_at: "2026-03-08T02:00:00Z" })
      const trashed = await createTask(user.api, { title: "J trashed", due_at: "2026-03-08T10:00:00Z" })
      await user.client.tasks.delete({ path: { id: TaskId.make(trashed.id) } })
      const done = await createTask(user.api, { title: "K done", due_at: "2026-03-08T10:00:00Z" })
      await setState(done.id, { done: true, archived: true })
      const shared = await newProject(user, `Shared by ${user.username}`, true)
      await createTask(shareWith.api, { title: "L someone else's", project_id: shared, due_at: "2026-03-08T10:00:00Z" })
    }

    it("counts active tasks, overdue ones and those due in the user's local day", async () => {
      const ny = await service.user("counter-ny", "America/New_York")
      const utc = await service.user("counter-utc", "UTC")
      const helper = await service.user("counter-helper", "UTC")
      await makeDay(ny, helper)
      await makeDay(utc, helper)

      const nyCounts = await ny.raw.get("/api/tasks/counts")
      expect(nyCounts.status).toBe(200)
      // total: A-I; overdue: A, B, C, I; today (New York): B, C, D, G.
      expect(nyCounts.body).toEqual({ data: { total: 9, overdue: 4, today: 4 } })
      // today (UTC): A, B, C, G, I.
      expect((await utc.raw.get("/api/tasks/counts")).body).toEqual({ data: { total: 9, overdue: 4, today: 5 } })
    })

    it("a user with nothing has zeros", async () => {
      const fresh = await service.user("counter-empty", "Pacific/Auckland")
      expect((await fresh.raw.get("/api/tasks/counts")).body).toEqual({ data: { total: 0, overdue: 0, today: 0 } })
    })
  })
})
