import { Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, expectServiceTime, inboxOf, listIds, TASK_FIELDS } from "./support/tasks.js"

const NOW = new Date("2026-03-08T12:00:00Z")

describe("task create, read, update, delete, restore, reprocess", () => {
  let service: TestService
  let alice: TestUser // Asia/Tokyo, UTC+9 all year
  let bob: TestUser
  let aliceInbox: number

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
    alice = await service.user("alice", "Asia/Tokyo")
    bob = await service.user("bob", "UTC")
    aliceInbox = await inboxOf(alice.api)
  })
  afterAll(async () => {
    await service.stop()
  })

  describe("POST /api/tasks", () => {
    it("creates an open one-off task in the Inbox with the documented defaults", async () => {
      const res = await alice.api.post("/api/tasks", { title: "Buy milk" })
      expect(res.status).toBe(201)
      const task = res.body.data
      expect(Object.keys(res.body)).toEqual(["data"])
      expect(Object.keys(task).sort()).toEqual([...TASK_FIELDS].sort())
      expect(task).toMatchObject({
        user_id: alice.id,
        project_id: aliceInbox,
        title: "Buy milk",
        original_title: "Buy milk",
        short_title: "Buy milk",
        done: false,
        done_at: null,
        priority: 0,
        due_at: null,
        original_due_at: null,
        rrule: null,
        recurrence_mode: "from_due",
        anchor_time: null,
        anchor_dow: 0,
        anchor_dom: 0,
        target_at: null,
        deadline_at: null,
        horizon: null,
        horizon_set_at: null,
        target_auto: false,
        target_set_at: null,
        deadline_nag_off: false,
        auto_snooze_minutes: 0,
        deleted_at: null,
        archived_at: null,
        labels: [],
        notes: "",
        progress_target: 1,
        progress_current: 0,
        progress_period_start: null,
        quota_prompt_config: null,
        quota_day_state: { date: null, logged: 0, did: [], considered: [], did_applied: {} },
        completion_count: 0,
        skip_count: 0,
        snooze_count: 0,
        first_completed_at: null,
        last_completed_at: null,
        is_recurring: false,
        is_reminder: false,
        is_tracked: false,
        is_snoozed: false
      })
      expect(Number.isInteger(task.id)).toBe(true)
      // Stamped by the service clock (SERVICE_NOW), not the host's.
      expectServiceTime(task.created_at, NOW)
      expect(task.updated_at).toBe(task.created_at)
    })

    it("keeps the structured fields sent and anchors the due date on the user's local calendar", async () => {
      const task = await createTask(alice.api, {
        title: "  Call the dentist  ",
        short_title: "Dentist",
        // 20:00 in New York on Wednesday 25 November is 10:00 on Thursday 26 November in Tokyo.
        due_at: "2026-11-25T20:00:00-05:00",
        priority: 4,
        labels: ["health", "phone", "health"],
        notes: "Ask about the crown",
        horizon: "week",
        recurrence_mode: "from_completion",
        auto_snooze_minutes: 30
      })
      expect(task).toMatchObject({
        title: "Call the dentist",
        original_title: "  Call the dentist  ",
        short_title: "Dentist",
        due_at: "2026-11-26T01:00:00.000Z",
        original_due_at: "2026-11-26T01:00:00.000Z",
        anchor_time: "10:00",
        anchor_dow: 4,
        anchor_dom: 26,
        priority: 4,
        labels: ["health", "phone"],
        notes: "Ask about the crown",
        horizon: "week",
        recurrence_mode: "from_completion",
        auto_snooze_minutes: 30,
        is_recurring: false,
        is_snoozed: false
      })
      expect(task.horizon_set_at).toBe(task.created_at)
    })

    it("a recurring task gets is_recurring and its anchors; a reminder keeps is_reminder", async () => {
      const weekly = await createTask(alice.api, {
        title: "Water the plants",
        due_at: "2026-03-13T23:30:00Z", // Saturday 14 March, 08:30 in Tokyo
        rrule: "FREQ=WEEKLY"
      })
      expect(weekly).toMatchObject({
        rrule: "FREQ=WEEKLY",
        is_recurring: true,
        anchor_time: "08:30",
        anchor_dow: 6,
        anchor_dom: 14,
        due_at: "2026-03-13T23:30:00.000Z"
      })
      const reminder = await createTask(alice.api, { title: "Take vitamins", is_reminder: true, due_at: "2026-03-09T00:00:00Z" })
      expect(reminder).toMatchObject({ is_reminder: true, is_recurring: false, anchor_time: "09:00", anchor_dow: 1, anchor_dom: 9 })
    })

    it("a deadline without a target gives an automatic target; an explicit target records when it was set", async () => {
      const auto = await createTask(alice.api, { title: "File taxes", deadline_at: "2026-12-01T00:00:00+09:00" })
      expect(auto).toMatchObject({
        deadline_at: "2026-11-30T15:00:00.000Z",
        target_at: "2026-11-30T15:00:00.000Z",
        target_auto: true,
        target_set_at: null
      })
      const explicit = await createTask(alice.api, {
        title: "Renew passport",
        deadline_at: "2026-12-01T00:00:00Z",
        target_at: "2026-11-20T00:00:00Z"
      })
      expect(explicit).toMatchObject({ target_at: "2026-11-20T00:00:00.000Z", target_auto: false })
      expect(explicit.target_set_at).toBe(explicit.created_at)
    })

    it("a due date after the deadline is refused unless allowed or capped", async () => {
      const body = { title: "Book venue", deadline_at: "2026-06-01T00:00:00Z", due_at: "2026-06-10T00:00:00Z" }
      const refused = await alice.api.post("/api/tasks", body)
      expect(refused.status).toBe(400)
      expect(refused.body.code).toBe("VALIDATION_ERROR")
      expect(Object.keys(refused.body.details)).toEqual(["due_at"])
      const capped = await createTask(alice.api, { ...body, cap_at_deadline: true })
      expect(capped.due_at).toBe("2026-06-01T00:00:00.000Z")
      const allowed = await createTask(alice.api, { ...body, allow_past_deadline: true })
      expect(allowed.due_at).toBe("2026-06-10T00:00:00.000Z")
    })

    it("files the task in the named project; someone else's private project is refused", async () => {
      const garden = await alice.api.post("/api/projects", { name: "Garden" })
      expect(garden.status).toBe(201)
      const task = await createTask(alice.api, { title: "Plant tulips", project_id: garden.body.data.id })
      expect(task.project_id).toBe(garden.body.data.id)

      const bobsInbox = await inboxOf(bob.api)
      const refused = await alice.api.post("/api/tasks", { title: "Sneak in", project_id: bobsInbox })
      expect(refused.status).toBe(400)
      expect(refused.body).toEqual({
        error: "Project not found",
        code: "VALIDATION_ERROR",
        details: { project_id: "Project not found" }
      })
      const titles = [...(await alice.api.get("/api/tasks")).body.data.tasks, ...(await bob.api.get("/api/tasks")).body.data.tasks]
        .map((t: any) => t.title)
      expect(titles).not.toContain("Sneak in")
    })
  })

  describe("GET /api/tasks/{id}", () => {
    it("answers the task exactly as created; another user's private task is a 404", async () => {
      const created = await createTask(alice.api, { title: "Read a book", labels: ["leisure"] })
      const res = await alice.api.get(`/api/tasks/${created.id}`)
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ data: created })

      const foreign = await bob.api.get(`/api/tasks/${created.id}`)
      expect(foreign.status).toBe(404)
      expect(foreign.body).toEqual({ error: "Task not found", code: "NOT_FOUND", details: {} })
    })

    it("a task in a shared project is readable by every user", async () => {
      const shared = await alice.api.post("/api/projects", { name: "Household", shared: true })
      const task = await createTask(alice.api, { title: "Fix the fence", project_id: shared.body.data.id })
      const res = await bob.api.get(`/api/tasks/${task.id}`)
      expect(res.status).toBe(200)
      expect(res.body.data).toMatchObject({ id: task.id, title: "Fix the fence", user_id: alice.id })
    })
  })

  describe("PATCH /api/tasks/{id}", () => {
    it("updates only the fields sent and answers fields_changed and a description", async () => {
      const created = await createTask(alice.api, { title: "Write report", notes: "draft", labels: ["work"] })
      const res = await alice.api.patch(`/api/tasks/${created.id}`, { notes: "final version", priority: 2 })
      expect(res.status).toBe(200)
      const task = res.body.data
      expect(task.fields_changed).toEqual(["priority", "notes"])
      expect(task.description).toBe("Edited 'Write report' (priority, notes)")
      expect(task).toMatchObject({ title: "Write report", notes: "final version", priority: 2, labels: ["work"] })
      expectServiceTime(task.updated_at, NOW)
      expect(task.updated_at > created.updated_at).toBe(true)
      expect(task.created_at).toBe(created.created_at)
      // The stored task is what was answered, without the two extra fields.
      const { description: _d, fields_changed: _f, ...stored } = task
      expect((await alice.api.get(`/api/tasks/${created.id}`)).body.data).toEqual(stored)
    })

    it("a rename carries a short title that was never set apart; a short title of its own stays", async () => {
      const plain = await createTask(alice.api, { title: "Buy bread" })
      const renamed = await alice.api.patch(`/api/tasks/${plain.id}`, { title: "Buy rye bread" })
      expect(renamed.body.data).toMatchObject({
        title: "Buy rye bread",
        short_title: "Buy rye bread",
        original_title: "Buy bread",
        fields_changed: ["title", "short_title"]
      })

      const own = await createTask(alice.api, { title: "Prepare the quarterly board presentation", short_title: "Board deck" })
      const renamedOwn = await alice.api.patch(`/api/tasks/${own.id}`, { title: "Prepare the Q2 board presentation" })
      expect(renamedOwn.body.data).toMatchObject({
        title: "Prepare the Q2 board presentation",
        short_title: "Board deck",
        fields_changed: ["title"]
      })
    })

    it("a new due date is anchored in the user's zone; original_due_at keeps the first one until reset", async () => {
      const created = await createTask(alice.api, { title: "Pay rent" })
      const first = await alice.api.patch(`/api/tasks/${created.id}`, { due_at: "2026-04-30T15:00:00Z" })
      expect(first.status).toBe(200)
      expect(first.body.data).toMatchObject({
        due_at: "2026-04-30T15:00:00.000Z",
        original_due_at: "2026-04-30T15:00:00.000Z",
        anchor_time: "00:00",
        anchor_dow: 5,
        anchor_dom: 1
      })
      expect(first.body.data.fields_changed).toEqual(["due_at", "anchor_time", "anchor_dow", "anchor_dom", "original_due_at"])

      const moved = await alice.api.patch(`/api/tasks/${created.id}`, { due_at: "2026-05-02T03:15:00+09:00" })
      expect(moved.body.data).toMatchObject({
        due_at: "2026-05-01T18:15:00.000Z",
        original_due_at: "2026-04-30T15:00:00.000Z",
        anchor_time: "03:15",
        anchor_dow: 6,
        anchor_dom: 2,
        fields_changed: ["due_at", "anchor_time", "anchor_dow", "anchor_dom"]
      })

      const reset = await alice.api.patch(`/api/tasks/${created.id}`, { reset_original_due_at: true })
      expect(reset.body.data).toMatchObject({
        due_at: "2026-05-01T18:15:00.000Z",
        original_due_at: "2026-05-01T18:15:00.000Z",
        fields_changed: ["original_due_at"]
      })

      const cleared = await alice.api.patch(`/api/tasks/${created.id}`, { due_at: null })
      expect(cleared.body.data).toMatchObject({ due_at: null, anchor_time: null, anchor_dow: 0, anchor_dom: 0 })
    })

    it("sending the values the task already has changes nothing and says so", async () => {
      const created = await createTask(alice.api, { title: "Stretch", priority: 1, labels: ["health"] })
      const res = await alice.api.patch(`/api/tasks/${created.id}`, { title: "Stretch", priority: 1, labels: ["health"] })
      expect(res.status).toBe(200)
      expect(res.body.data.fields_changed).toEqual([])
      expect(res.body.data.description).toBe("No changes to 'Stretch'")
      expect(res.body.data.updated_at).toBe(created.updated_at)
    })

    it("moves a task between projects, replaces labels and sets a horizon", async () => {
      const errands = await alice.api.post("/api/projects", { name: "Errands" })
      const created = await createTask(alice.api, { title: "Post a parcel", labels: ["town"] })
      const res = await alice.api.patch(`/api/tasks/${created.id}`, {
        project_id: errands.body.data.id,
        labels: ["post", "town"],
        horizon: "day"
      })
      expect(res.body.data).toMatchObject({
        project_id: errands.body.data.id,
        labels: ["post", "town"],
        horizon: "day",
        fields_changed: ["labels", "project_id", "horizon", "horizon_set_at"]
      })
      expectServiceTime(res.body.data.horizon_set_at, NOW)

      const refused = await alice.api.patch(`/api/tasks/${created.id}`, { project_id: await inboxOf(bob.api) })
      expect(refused.status).toBe(400)
      expect(refused.body.details).toEqual({ project_id: "Project not found" })
      expect((await alice.api.get(`/api/tasks/${created.id}`)).body.data.project_id).toBe(errands.body.data.id)
    })

    it("another user can neither edit nor delete a private task", async () => {
      const created = await createTask(alice.api, { title: "Diary" })
      const patched = await bob.api.patch(`/api/tasks/${created.id}`, { title: "Hacked" })
      expect(patched.status).toBe(404)
      expect(patched.body).toEqual({ error: "Task not found", code: "NOT_FOUND", details: {} })
      const deleted = await bob.api.delete(`/api/tasks/${created.id}`)
      expect(deleted.status).toBe(404)
      expect((await alice.api.get(`/api/tasks/${created.id}`)).body.data).toEqual(created)
    })
  })

  describe("DELETE, trash and restore", () => {
    it("DELETE moves the task to the trash with a message; it leaves the list but stays readable by id", async () => {
      const created = await createTask(alice.api, { title: "Old idea" })
      expect(await listIds(alice.api)).toContain(created.id)

      const res = await alice.api.delete(`/api/tasks/${created.id}`)
      expect(res.status).toBe(200)
      expect(res.body.data.message).toBe("Task 'Old idea' moved to the trash")
      expect(res.body.data).toMatchObject({ id: created.id, title: "Old idea", done: false })
      expectServiceTime(res.body.data.deleted_at, NOW)
      expect(res.body.data.updated_at).toBe(res.body.data.deleted_at)

      expect(await listIds(alice.api)).not.toContain(created.id)
      const read = await alice.api.get(`/api/tasks/${created.id}`)
      expect(read.status).toBe(200)
      expect(read.body.data.deleted_at).toBe(res.body.data.deleted_at)

      // Deleting again leaves it where it is, with its first deletion time.
      const again = await alice.api.delete(`/api/tasks/${created.id}`)
      expect(again.status).toBe(200)
      expect(again.body.data.deleted_at).toBe(res.body.data.deleted_at)
    })

    it("GET /api/trash lists only the caller's trashed tasks, newest deletion first", async () => {
      const carol = await service.user("carol", "Europe/Berlin")
      const a = await createTask(carol.api, { title: "First made" })
      const b = await createTask(carol.api, { title: "Second made" })
      const c = await createTask(carol.api, { title: "Third made" })
      await createTask(carol.api, { title: "Kept" })
      // Delete in an order that differs from creation order.
      for (const id of [b.id, a.id, c.id]) expect((await carol.api.delete(`/api/tasks/${id}`)).status).toBe(200)
      const bobs = await createTask(bob.api, { title: "Bob's rubbish" })
      await bob.api.delete(`/api/tasks/${bobs.id}`)

      const trash = await carol.api.get("/api/trash")
      expect(trash.status).toBe(200)
      expect(trash.body.data.count).toBe(3)
      expect(trash.body.data.tasks.map((t: any) => t.title)).toEqual(["Third made", "First made", "Second made"])
      const stamps = trash.body.data.tasks.map((t: any) => t.deleted_at)
      expect([...stamps].sort().reverse()).toEqual(stamps)
    })

    it("restore brings a trashed task back into the list; restoring an open task is a 400", async () => {
      const created = await createTask(alice.api, { title: "Maybe later", due_at: "2026-03-20T01:00:00Z" })
      await alice.api.delete(`/api/tasks/${created.id}`)
      const res = await alice.api.post(`/api/tasks/${created.id}/restore`)
      expect(res.status).toBe(200)
      expect(res.body.data).toMatchObject({ id: created.id, title: "Maybe later", deleted_at: null, due_at: "2026-03-20T01:00:00.000Z" })
      expect(await listIds(alice.api)).toContain(created.id)
      const trash = await alice.api.get("/api/trash")
      expect(trash.body.data.tasks.map((t: any) => t.id)).not.toContain(created.id)

      const again = await alice.api.post(`/api/tasks/${created.id}/restore`)
      expect(again.status).toBe(400)
      expect(again.body).toEqual({
        error: "Task is not in the trash",
        code: "VALIDATION_ERROR",
        details: { id: "Task is not in the trash" }
      })
      expect((await bob.api.post(`/api/tasks/${created.id}/restore`)).status).toBe(404)
    })
  })

  describe("POST /api/tasks/{id}/reprocess", () => {
    it("queues the task and answers it unchanged; a trashed task is refused", async () => {
      const created = await createTask(alice.api, { title: "buy stuff for bbq saturday" })
      const res = await alice.api.post(`/api/tasks/${created.id}/reprocess`)
      expect(res.status).toBe(200)
      expect(res.body.data).toMatchObject({
        id: created.id,
        title: "buy stuff for bbq saturday",
        original_title: "buy stuff for bbq saturday",
        deleted_at: null
      })

      await alice.api.delete(`/api/tasks/${created.id}`)
      const trashed = await alice.api.post(`/api/tasks/${created.id}/reprocess`)
      expect(trashed.status).toBe(400)
      expect(trashed.body).toEqual({ error: "Task is in the trash", code: "VALIDATION_ERROR", details: { id: "Task is in the trash" } })
      expect((await bob.api.post(`/api/tasks/${created.id}/reprocess`)).status).toBe(404)
    })
  })
})
