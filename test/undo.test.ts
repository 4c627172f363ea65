import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { Quotas } from "../src/quotas/Quotas.js"
import { freshDatabase, type TestDatabase } from "./support/database.js"
import { dailyStats, outboxEvents, query, undoEntries } from "./support/rows.js"
import { startService, startServiceOnTestClock, type TestService, type TestUser } from "./support/service.js"
import { createTask } from "./support/tasks.js"

/**
 * Undo and redo over HTTP (spec §4.6, and the status/history shapes of UndoApi.ts), one test per
 * undoable action, plus the no-clobber rule, the redo stack, session counts and isolation.
 *
 * The clock is pinned at 09:00 UTC on Tuesday 10 March 2026: 10:00 in Berlin (CET, UTC+1).
 */
const NOW = new Date("2026-03-10T09:00:00Z")
const TODAY = "2026-03-10"

/** Berlin wall time on 12 March (CET). */
const thu = (hhmm: string) => `2026-03-12T${String(Number(hhmm.slice(0, 2)) - 1).padStart(2, "0")}:${hhmm.slice(3)}:00.000Z`

const nothingTo = (what: "undo" | "redo") => ({ error: `Nothing to ${what}`, code: "VALIDATION_ERROR", details: {} })

/** The task as stored, without updated_at (undo/redo moves it on) and the fields an action's answer adds. */
const core = (task: Record<string, unknown>) => {
  const { updated_at: _u, was_recurring: _w, next_due_at: _n, ...rest } = task
  return rest
}

interface CompletionRow {
  readonly id: number
  readonly completed_at: string
  readonly task_id: number
}

describe("undo and redo (spec §4.6)", () => {
  let service: TestService
  let counter = 0
  const berliner = (): Promise<TestUser> => service.user(`undo${++counter}`, "Europe/Berlin")

  const read = async (user: TestUser, id: number) => {
    const res = await user.api.get(`/api/tasks/${id}`)
    expect(res.status).toBe(200)
    return res.body.data as Record<string, any>
  }
  const undo = async (user: TestUser, body?: unknown) => {
    const res = await user.api.post("/api/undo", body)
    if (res.status !== 200) throw new Error(`POST /api/undo -> ${res.status} ${res.text}`)
    return res.body.data as Record<string, any>
  }
  const redo = async (user: TestUser, body?: unknown) => {
    const res = await user.api.post("/api/redo", body)
    if (res.status !== 200) throw new Error(`POST /api/redo -> ${res.status} ${res.text}`)
    return res.body.data as Record<string, any>
  }
  const completionsOf = async (user: TestUser, taskId: number): Promise<Array<CompletionRow>> =>
    (await user.api.get(`/api/completions?task_id=${taskId}`)).body.data.completions
  const status = async (user: TestUser) => (await user.api.get("/api/undo/status")).body.data
  /** The user's own tasks in the trash / open (lists also show tasks of other users' shared projects). */
  const trashIds = async (user: TestUser) =>
    ((await user.api.get("/api/trash")).body.data.tasks as Array<{ id: number; user_id: number }>)
      .filter((t) => t.user_id === user.id).map((t) => t.id)
  const openIds = async (user: TestUser) =>
    ((await user.api.get("/api/tasks")).body.data.tasks as Array<{ id: number; user_id: number }>)
      .filter((t) => t.user_id === user.id).map((t) => t.id)
  const statsToday = async (user: TestUser) => {
    const row = (await dailyStats(service, user.id)).find((s) => s.date === TODAY)
    return row === undefined ? undefined : { completions: row.completions, tasks_created: row.tasks_created, snoozes: row.snoozes }
  }
  /** Undo/redo never add an entry: the log's ids and actions stay as they were. */
  const entryIds = async (user: TestUser) => (await undoEntries(service, user.id)).map((e) => [e.id, e.action])

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
  })
  afterAll(async () => {
    await service.stop()
  })

  describe("each action", () => {
    it("create: undo moves the task to the trash, redo restores it", async () => {
      const user = await berliner()
      const task = await createTask(user.api, { title: "Pay rent", priority: 2 })
      const log = await entryIds(user)
      const u = await undo(user)
      expect(u).toEqual({ undone_action: "create", description: "Created 'Pay rent'", tasks_affected: 1, undoable_count: 0, redoable_count: 1 })
      const trashed = await read(user, task.id)
      expect(trashed.deleted_at).toMatch(/^2026-03-10T09:0\d:\d\d\.\d{3}Z$/)
      expect(core(trashed)).toEqual(core({ ...task, deleted_at: trashed.deleted_at }))
      expect(await trashIds(user)).toEqual([task.id])
      expect(await openIds(user)).toEqual([])

      const r = await redo(user)
      expect(r).toEqual({ redone_action: "create", description: "Created 'Pay rent'", tasks_affected: 1, undoable_count: 1, redoable_count: 0 })
      expect(core(await read(user, task.id))).toEqual(core(task))
      expect(await trashIds(user)).toEqual([])
      expect(await openIds(user)).toEqual([task.id])
      expect(await entryIds(user)).toEqual(log)
    })

    it("edit: undo puts the edited fields back, redo applies them again; task.updated events, no new entries", async () => {
      const user = await berliner()
      const task = await createTask(user.api, { title: "Pay rent" })
      const edit = await user.api.patch(`/api/tasks/${task.id}`, { priority: 3, notes: "Before Friday", labels: ["home"] })
      expect(edit.status).toBe(200)
      const log = await entryIds(user)
      const eventsBefore = (await outboxEvents(service, user.id)).length

      const u = await undo(user)
      expect(u).toEqual({ undone_action: "edit", description: edit.body.data.description, tasks_affected: 1, undoable_count: 1, redoable_count: 1 })
      expect(u.description).toMatch(/^Edited 'Pay rent' \(/)
      expect(core(await read(user, task.id))).toEqual(core(task))
      const events = (await outboxEvents(service, user.id)).slice(eventsBefore)
      expect(events.map((e) => [e.event, e.task_id])).toEqual([["task.updated", task.id]])
      expect([...events[0]!.payload.fields_changed].sort()).toEqual(["labels", "notes", "priority"])
      expect(events[0]!.payload.task).toMatchObject({ id: task.id, priority: 0, notes: "", labels: [] })

      const r = await redo(user)
      expect(r).toMatchObject({ redone_action: "edit", description: edit.body.data.description, undoable_count: 2, redoable_count: 0 })
      expect(await read(user, task.id)).toMatchObject({ priority: 3, notes: "Before Friday", labels: ["home"] })
      const redoEvents = (await outboxEvents(service, user.id)).slice(eventsBefore + 1)
      expect(redoEvents.map((e) => [e.event, e.task_id])).toEqual([["task.updated", task.id]])
      expect(redoEvents[0]!.payload.task).toMatchObject({ priority: 3 })
      expect(await entryIds(user)).toEqual(log)
    })

    it("done: undo deletes the completion and rolls back counts and statistics; redo records it again", async () => {
      const user = await berliner()
      const task = await createTask(user.api, { title: "Pay rent" })
      const done = await user.api.post(`/api/tasks/${task.id}/done`)
      expect(done.status).toBe(200)
      const [completion] = await completionsOf(user, task.id)
      expect(await statsToday(user)).toEqual({ completions: 1, tasks_created: 1, snoozes: 0 })

      const u = await undo(user)
      expect(u).toEqual({ undone_action: "done", description: "Marked 'Pay rent' done", tasks_affected: 1, undoable_count: 1, redoable_count: 1 })
      expect(core(await read(user, task.id))).toEqual(core(task))
      expect(await completionsOf(user, task.id)).toEqual([])
      expect(await statsToday(user)).toEqual({ completions: 0, tasks_created: 1, snoozes: 0 })

      const r = await redo(user)
      expect(r).toMatchObject({ redone_action: "done", description: "Marked 'Pay rent' done", undoable_count: 2, redoable_count: 0 })
      const again = await read(user, task.id)
      expect(again).toMatchObject({ done: true, completion_count: 1, done_at: done.body.data.done_at, archived_at: done.body.data.archived_at })
      expect(await completionsOf(user, task.id)).toEqual([completion])
      expect(await statsToday(user)).toEqual({ completions: 1, tasks_created: 1, snoozes: 0 })
    })

    it("done on a recurring task: undo puts the occurrence back on its due date", async () => {
      const user = await berliner()
      const task = await createTask(user.api, { title: "Water plants", due_at: thu("08:00"), rrule: "FREQ=DAILY" })
      const done = await user.api.post(`/api/tasks/${task.id}/done`)
      expect(done.body.data).toMatchObject({ was_recurring: true, completion_count: 1 })
      const advanced = done.body.data.due_at
      expect(advanced).not.toBe(task.due_at)
      await undo(user)
      expect(core(await read(user, task.id))).toEqual(core(task))
      expect(await completionsOf(user, task.id)).toEqual([])
      await redo(user)
      expect(await read(user, task.id)).toMatchObject({ due_at: advanced, completion_count: 1 })
      expect((await completionsOf(user, task.id)).length).toBe(1)
    })

    it("undone: undo marks the task done again with its completion; redo reopens it", async () => {
      const user = await berliner()
      const task = await createTask(user.api, { title: "Return books" })
      const done = (await user.api.post(`/api/tasks/${task.id}/done`)).body.data
      const [completion] = await completionsOf(user, task.id)
      const reopened = (await user.api.post(`/api/tasks/${task.id}/undone`)).body.data
      expect(await statsToday(user)).toMatchObject({ completions: 0 })

      const u = await undo(user)
      expect(u).toEqual({ undone_action: "undone", description: "Marked 'Return books' not done", tasks_affected: 1, undoable_count: 2, redoable_count: 1 })
      expect(core(await read(user, task.id))).toEqual(core(done))
      expect(await completionsOf(user, task.id)).toEqual([completion])
      expect(await statsToday(user)).toMatchObject({ completions: 1 })

      await redo(user)
      expect(core(await read(user, task.id))).toEqual(core(reopened))
      expect(await completionsOf(user, task.id)).toEqual([])
      expect(await statsToday(user)).toMatchObject({ completions: 0 })
    })

    it("snooze: undo puts due_at and snooze_count back, statistics follow; redo snoozes again", async () => {
      const user = await berliner()
      const task = await createTask(user.api, { title: "Call the bank", due_at: thu("09:00") })
      const snoozed = await user.api.post(`/api/tasks/${task.id}/snooze`, { until: "2026-03-14T10:00:00Z" })
      expect(snoozed.body.data).toMatchObject({ due_at: "2026-03-14T10:00:00.000Z", snooze_count: 1 })
      expect(await statsToday(user)).toMatchObject({ snoozes: 1 })

      const u = await undo(user)
      expect(u).toEqual({
        undone_action: "snooze",
        description: "Snoozed 'Call the bank' until 2026-03-14T10:00:00.000Z",
        tasks_affected: 1,
        undoable_count: 1,
        redoable_count: 1
      })
      const back = await read(user, task.id)
      expect(back).toMatchObject({ due_at: thu("09:00"), original_due_at: thu("09:00"), snooze_count: 0, is_snoozed: false })
      expect(core(back)).toEqual(core(task))
      expect(await statsToday(user)).toMatchObject({ snoozes: 0 })

      await redo(user)
      expect(await read(user, task.id)).toMatchObject({ due_at: "2026-03-14T10:00:00.000Z", snooze_count: 1, is_snoozed: true })
      expect(await statsToday(user)).toMatchObject({ snoozes: 1 })
    })

    it("skip: undo puts the occurrence and skip_count back; redo skips again", async () => {
      const user = await berliner()
      const task = await createTask(user.api, { title: "Gym", due_at: thu("18:00"), rrule: "FREQ=DAILY" })
      const skipped = (await user.api.post(`/api/tasks/${task.id}/skip-occurrence`)).body.data
      expect(skipped).toMatchObject({ skip_count: 1, was_recurring: true })
      const u = await undo(user)
      expect(u).toMatchObject({ undone_action: "skip", description: skipped.description, tasks_affected: 1 })
      expect(core(await read(user, task.id))).toEqual(core(task))
      await redo(user)
      expect(await read(user, task.id)).toMatchObject({ skip_count: 1, due_at: skipped.due_at })
    })

    it("delete: undo takes the task out of the trash, redo puts it back with the same deleted_at", async () => {
      const user = await berliner()
      const task = await createTask(user.api, { title: "Old idea" })
      const deleted = (await user.api.delete(`/api/tasks/${task.id}`)).body.data
      const u = await undo(user)
      expect(u).toEqual({ undone_action: "delete", description: "Moved 'Old idea' to the trash", tasks_affected: 1, undoable_count: 1, redoable_count: 1 })
      expect(core(await read(user, task.id))).toEqual(core(task))
      expect(await trashIds(user)).toEqual([])
      await redo(user)
      expect((await read(user, task.id)).deleted_at).toBe(deleted.deleted_at)
      expect(await trashIds(user)).toEqual([task.id])
    })

    it("restore: undo sends the task back to the trash, redo restores it", async () => {
      const user = await berliner()
      const task = await createTask(user.api, { title: "Second thoughts" })
      const deleted = (await user.api.delete(`/api/tasks/${task.id}`)).body.data
      await user.api.post(`/api/tasks/${task.id}/restore`)
      const u = await undo(user)
      expect(u).toEqual({
        undone_action: "restore",
        description: "Restored 'Second thoughts' from the trash",
        tasks_affected: 1,
        undoable_count: 2,
        redoable_count: 1
      })
      expect((await read(user, task.id)).deleted_at).toBe(deleted.deleted_at)
      await redo(user)
      expect((await read(user, task.id)).deleted_at).toBeNull()
    })

    it("progress: each log is one step; undo restores the count and quota_day_state", async () => {
      const user = await berliner()
      const quota = await createTask(user.api, { title: "Drink water", progress_target: 3, rrule: "FREQ=DAILY" })
      const first = (await user.api.post(`/api/tasks/${quota.id}/progress`)).body.data
      const second = (await user.api.post(`/api/tasks/${quota.id}/progress`, { delta: 2 })).body.data
      expect(second).toMatchObject({ progress_current: 3, met: true })
      expect(second.quota_day_state).toMatchObject({ date: TODAY, logged: 3 })

      const u = await undo(user)
      expect(u).toEqual({ undone_action: "progress", description: "Logged +2 on 'Drink water' (3/3)", tasks_affected: 1, undoable_count: 2, redoable_count: 1 })
      expect(core(await read(user, quota.id))).toEqual(core(stripExtras(first)))
      await undo(user)
      expect(core(await read(user, quota.id))).toEqual(core(quota))
      await redo(user)
      expect(await read(user, quota.id)).toMatchObject({ progress_current: 1, quota_day_state: first.quota_day_state })
      await redo(user)
      expect(await read(user, quota.id)).toMatchObject({ progress_current: 3, quota_day_state: second.quota_day_state })
    })

    it("quota_prompt: undo of Did it restores the count and the prompt; redo does it again", async () => {
      const user = await berliner()
      const quota = await createTask(user.api, { title: "Push-ups", progress_target: 3, rrule: "FREQ=DAILY" })
      const key = `q:${quota.id}:2:${TODAY}`
      const promptOf = async () => {
        const groups = (await user.api.get("/api/reminders")).body.data.groups as Array<{ prompts: Array<Record<string, any>> }>
        return groups.flatMap((g) => g.prompts).find((p) => p.prompt_key === key)
      }
      expect(await promptOf()).toMatchObject({ done: false, considered: false, current: 0 })
      const did = await user.api.post("/api/quota-prompts/did", { keys: [key] })
      expect(did.body.data).toMatchObject({ did: 1, considered: 1 })
      expect(await read(user, quota.id)).toMatchObject({ progress_current: 2 })
      expect(await promptOf()).toMatchObject({ done: true, considered: true, current: 2 })

      const u = await undo(user)
      expect(u).toEqual({ undone_action: "quota_prompt", description: "Did 1 quota prompt(s)", tasks_affected: 1, undoable_count: 1, redoable_count: 1 })
      expect(core(await read(user, quota.id))).toEqual(core(quota))
      expect(await promptOf()).toMatchObject({ done: false, considered: false, current: 0 })
      // Did it again after the undo logs again: the key is no longer marked done.
      await redo(user)
      expect(await read(user, quota.id)).toMatchObject({
        progress_current: 2,
        quota_day_state: { date: TODAY, logged: 2, did: [key], considered: [key], did_applied: { [key]: 2 } }
      })
      expect(await promptOf()).toMatchObject({ done: true, considered: true, current: 2 })
    })

    it("time_slot_edit and time_slot_delete: the slot and its reminders go back together", async () => {
      const user = await berliner()
      const slots = (await user.api.get("/api/time-slots")).body.data.time_slots as Array<Record<string, any>>
      const morning = slots.find((s) => s.label === "Morning")!
      const r = await createTask(user.api, { title: "Vitamins", is_reminder: true, due_at: thu("09:00") })
      await user.api.patch(`/api/time-slots/${morning.id}`, { start_time: "08:30" })
      expect((await read(user, r.id)).due_at).toBe(thu("08:30"))
      expect(await undo(user)).toMatchObject({
        undone_action: "time_slot_edit",
        description: "Moved the time slot 'Morning' from 09:00 to 08:30",
        tasks_affected: 1
      })
      expect((await read(user, r.id)).due_at).toBe(thu("09:00"))
      expect((await user.api.get("/api/time-slots")).body.data.time_slots).toEqual(slots)

      await user.api.delete(`/api/time-slots/${morning.id}`)
      expect((await read(user, r.id)).due_at).toBe(thu("07:00"))
      expect(await undo(user)).toMatchObject({
        undone_action: "time_slot_delete",
        description: "Deleted the time slot 'Morning' (09:00)",
        tasks_affected: 1,
        redoable_count: 1
      })
      expect((await read(user, r.id)).due_at).toBe(thu("09:00"))
      expect((await user.api.get("/api/time-slots")).body.data.time_slots).toEqual(slots)
      expect(await redo(user)).toMatchObject({ redone_action: "time_slot_delete" })
      expect((await read(user, r.id)).due_at).toBe(thu("07:00"))
    })

    it("project_create, project_edit, project_delete", async () => {
      const user = await berliner()
      const created = await user.api.post("/api/projects", { name: "Garden", color: "green" })
      expect(created.status).toBe(201)
      const project = created.body.data
      expect(await undo(user)).toEqual({
        undone_action: "project_create",
        description: "Created project 'Garden'",
        tasks_affected: 0,
        undoable_count: 0,
        redoable_count: 1
      })
      expect((await user.api.get(`/api/projects/${project.id}`)).status).toBe(404)
      expect(await redo(user)).toMatchObject({ redone_action: "project_create", undoable_count: 1, redoable_count: 0 })
      expect((await user.api.get(`/api/projects/${project.id}`)).body.data).toEqual(project)

      await user.api.patch(`/api/projects/${project.id}`, { name: "Allotment", description: "Plot 12" })
      expect(await undo(user)).toMatchObject({ undone_action: "project_edit", description: "Edited project 'Allotment'", tasks_affected: 0 })
      expect((await user.api.get(`/api/projects/${project.id}`)).body.data).toEqual(project)
      await redo(user)
      expect((await user.api.get(`/api/projects/${project.id}`)).body.data).toMatchObject({ name: "Allotment", description: "Plot 12" })

      const a = await createTask(user.api, { title: "Plant beans", project_id: project.id })
      const b = await createTask(user.api, { title: "Buy seeds", project_id: project.id })
      const deleted = await user.api.delete(`/api/projects/${project.id}`)
      expect(deleted.body.data).toEqual({ deleted: true, tasks_moved_to_inbox: 2 })
      const inbox = (await read(user, a.id)).project_id
      expect(inbox).not.toBe(project.id)
      expect(await undo(user)).toMatchObject({ undone_action: "project_delete", description: "Deleted project 'Allotment'", tasks_affected: 2 })
      expect((await user.api.get(`/api/projects/${project.id}`)).body.data).toMatchObject({ id: project.id, name: "Allotment", active_count: 2 })
      expect((await read(user, a.id)).project_id).toBe(project.id)
      expect((await read(user, b.id)).project_id).toBe(project.id)
      await redo(user)
      expect((await user.api.get(`/api/projects/${project.id}`)).status).toBe(404)
      expect((await read(user, b.id)).project_id).toBe(inbox)
    })
  })

  describe("the other recorded actions", () => {
    it("time_slot_create: undo removes the slot, redo brings it back with its id", async () => {
      const user = await berliner()
      const before = (await user.api.get("/api/time-slots")).body.data.time_slots
      const created = (await user.api.post("/api/time-slots", { label: "Siesta", start_time: "14:00" })).body.data
      expect(await undo(user)).toEqual({
        undone_action: "time_slot_create",
        description: "Added the time slot 'Siesta' at 14:00",
        tasks_affected: 0,
        undoable_count: 0,
        redoable_count: 1
      })
      expect((await user.api.get("/api/time-slots")).body.data.time_slots).toEqual(before)
      await redo(user)
      const after = (await user.api.get("/api/time-slots")).body.data.time_slots as Array<Record<string, unknown>>
      expect(after.find((s) => s.id === created.id)).toEqual(created)
      expect(after.map((s) => s.sort_order)).toEqual([0, 1, 2, 3, 4, 5])
    })

    it("project_reorder: undo puts the old order back", async () => {
      const user = await berliner()
      const a = (await user.api.post("/api/projects", { name: "A" })).body.data
      const b = (await user.api.post("/api/projects", { name: "B" })).body.data
      const names = async () => ((await user.api.get("/api/projects")).body.data.projects as Array<{ name: string }>).map((p) => p.name)
      const order = await names()
      expect((await user.api.patch("/api/projects/reorder", { project_ids: [b.id, a.id] })).status).toBe(200)
      expect(await names()).not.toEqual(order)
      expect(await undo(user)).toMatchObject({ undone_action: "project_reorder", tasks_affected: 0 })
      expect(await names()).toEqual(order)
      await redo(user)
      expect((await names()).indexOf("B")).toBeLessThan((await names()).indexOf("A"))
    })

    it("bulk_done, bulk_snooze and bulk_edit are one step each, over every task they touched", async () => {
      const user = await berliner()
      const one = await createTask(user.api, { title: "One", due_at: thu("09:00") })
      const two = await createTask(user.api, { title: "Two", due_at: thu("10:00") })
      const done = await user.api.post("/api/tasks/bulk/done", { ids: [one.id, two.id] })
      expect(done.status).toBe(200)
      expect(done.body).toMatchObject({ tasks_affected: 2 })
      expect(await statsToday(user)).toMatchObject({ completions: 2 })
      expect(await undo(user)).toMatchObject({ undone_action: "bulk_done", tasks_affected: 2, undoable_count: 2, redoable_count: 1 })
      expect(core(await read(user, one.id))).toEqual(core(one))
      expect(core(await read(user, two.id))).toEqual(core(two))
      expect(await completionsOf(user, one.id)).toEqual([])
      expect(await statsToday(user)).toMatchObject({ completions: 0 })
      await redo(user)
      expect(await read(user, two.id)).toMatchObject({ done: true, completion_count: 1 })
      expect(await statsToday(user)).toMatchObject({ completions: 2 })
      await undo(user)

      const snoozed = await user.api.post("/api/tasks/bulk/snooze", { task_ids: [one.id, two.id], until: "2026-03-20T08:00:00Z" })
      expect(snoozed.body).toMatchObject({ tasks_affected: 2 })
      expect(await undo(user)).toMatchObject({ undone_action: "bulk_snooze", tasks_affected: 2 })
      expect(core(await read(user, one.id))).toEqual(core(one))
      expect(core(await read(user, two.id))).toEqual(core(two))

      const edited = await user.api.post("/api/tasks/bulk/edit", { ids: [one.id, two.id], changes: { priority: 3 } })
      expect(edited.body).toMatchObject({ tasks_affected: 2 })
      expect(await undo(user)).toMatchObject({ undone_action: "bulk_edit", tasks_affected: 2 })
      expect((await read(user, one.id)).priority).toBe(0)
      expect((await read(user, two.id)).priority).toBe(0)
      await redo(user)
      expect((await read(user, two.id)).priority).toBe(3)
    })
  })

  describe("projects and their tasks", () => {
    it("undoing a task's creation and then its new project's creation works; the trashed task waits in the Inbox", async () => {
      const user = await berliner()
      const project = (await user.api.post("/api/projects", { name: "Garden" })).body.data
      const task = await createTask(user.api, { title: "Plant beans", project_id: project.id })
      const inbox = (await user.api.get("/api/projects")).body.data.projects.find((p: { is_inbox: boolean }) => p.is_inbox).id
      expect(await undo(user)).toMatchObject({ undone_action: "create" })
      expect(await undo(user)).toEqual({
        undone_action: "project_create",
        description: "Created project 'Garden'",
        tasks_affected: 0,
        undoable_count: 0,
        redoable_count: 2
      })
      expect((await user.api.get(`/api/projects/${project.id}`)).status).toBe(404)
      expect(await read(user, task.id)).toMatchObject({ project_id: inbox, deleted_at: expect.any(String) })
      // Both come back; the project keeps its id.
      await redo(user)
      await redo(user)
      expect((await user.api.get(`/api/projects/${project.id}`)).body.data).toMatchObject({ id: project.id, name: "Garden" })
      expect((await read(user, task.id)).deleted_at).toBeNull()
    })

    it("a project holding someone else's live task is not removed by undoing its creation: 400, nothing changes", async () => {
      const alice = await berliner()
      const bob = await berliner()
      const project = (await alice.api.post("/api/projects", { name: "Street party", shared: true })).body.data
      const task = await createTask(bob.api, { title: "Bring chairs", project_id: project.id })
      const res = await alice.api.post("/api/undo")
      expect(res.status).toBe(400)
      expect(res.body.code).toBe("VALIDATION_ERROR")
      expect((await alice.api.get(`/api/projects/${project.id}`)).body.data).toMatchObject({ id: project.id, active_count: 1 })
      expect(await read(bob, task.id)).toMatchObject({ project_id: project.id, deleted_at: null })
      expect(await status(alice)).toMatchObject({ undoable_count: 1, redoable_count: 0 })
    })
  })

  describe("the no-clobber rule", () => {
    it("own edits of the same field undo in order: edit priority, edit priority again, undo, undo", async () => {
      const user = await berliner()
      const task = await createTask(user.api, { title: "Pay rent" })
      await user.api.patch(`/api/tasks/${task.id}`, { priority: 2, notes: "first" })
      await user.api.patch(`/api/tasks/${task.id}`, { priority: 4 })
      await undo(user)
      expect(await read(user, task.id)).toMatchObject({ priority: 2, notes: "first" })
      await undo(user)
      expect(await read(user, task.id)).toMatchObject({ priority: 0, notes: "" })
      await redo(user)
      await redo(user)
      expect(await read(user, task.id)).toMatchObject({ priority: 4, notes: "first" })
    })

    it("a field someone else edited since keeps its newer value; the action's other fields revert", async () => {
      const alice = await berliner()
      const bob = await berliner()
      const shared = (await alice.api.post("/api/projects", { name: "Household", shared: true })).body.data
      const task = await createTask(alice.api, { title: "Pay rent", project_id: shared.id })
      await alice.api.patch(`/api/tasks/${task.id}`, { priority: 2, notes: "by Friday", title: "Pay the rent" })
      const bobEdit = await bob.api.patch(`/api/tasks/${task.id}`, { priority: 4 })
      expect(bobEdit.status).toBe(200)

      const u = await undo(alice)
      expect(u).toMatchObject({ undone_action: "edit", tasks_affected: 1 })
      expect(await read(alice, task.id)).toMatchObject({ priority: 4, notes: "", title: "Pay rent" })
      // Bob's entry is still his to undo; it takes priority back to what he found.
      expect((await undoEntries(service, bob.id)).map((e) => [e.action, e.undone])).toEqual([["edit", false]])
      expect(await undo(bob)).toMatchObject({ undone_action: "edit", undoable_count: 0, redoable_count: 1 })
      expect(await read(alice, task.id)).toMatchObject({ priority: 2, notes: "", title: "Pay rent" })
      // Alice's redo: priority changed since her undo (0 -> 2 by Bob's undo), so it keeps 2; the rest is redone.
      await redo(alice)
      expect(await read(alice, task.id)).toMatchObject({ priority: 2, notes: "by Friday", title: "Pay the rent" })
    })

    it("redo keeps a value edited since the undo", async () => {
      const alice = await berliner()
      const bob = await berliner()
      const shared = (await alice.api.post("/api/projects", { name: "Club", shared: true })).body.data
      const task = await createTask(alice.api, { title: "Book the hall", project_id: shared.id })
      await alice.api.patch(`/api/tasks/${task.id}`, { priority: 1, labels: ["club"] })
      await undo(alice)
      await bob.api.patch(`/api/tasks/${task.id}`, { priority: 3 })
      await redo(alice)
      expect(await read(alice, task.id)).toMatchObject({ priority: 3, labels: ["club"] })
    })

    it("an action whose every field was changed since is taken back as nothing, but still moves to the redo stack", async () => {
      const alice = await berliner()
      const bob = await berliner()
      const shared = (await alice.api.post("/api/projects", { name: "Team", shared: true })).body.data
      const task = await createTask(alice.api, { title: "Plan", project_id: shared.id })
      await alice.api.patch(`/api/tasks/${task.id}`, { priority: 1 })
      await bob.api.patch(`/api/tasks/${task.id}`, { priority: 2 })
      const eventsBefore = (await outboxEvents(service, alice.id)).length
      // Alice's log: the project, the task, the edit.
      expect(await undo(alice)).toMatchObject({ undone_action: "edit", undoable_count: 2, redoable_count: 1 })
      expect((await read(alice, task.id)).priority).toBe(2)
      // Nothing changed, so no task.updated event either.
      expect((await outboxEvents(service, alice.id)).length).toBe(eventsBefore)
    })
  })

  describe("the stacks", () => {
    it("redo re-applies the most recently undone action first", async () => {
      const user = await berliner()
      const a = await createTask(user.api, { title: "A" })
      const b = await createTask(user.api, { title: "B" })
      expect((await undo(user)).description).toBe("Created 'B'")
      expect((await undo(user)).description).toBe("Created 'A'")
      expect(await trashIds(user)).toEqual(expect.arrayContaining([a.id, b.id]))
      expect((await redo(user)).description).toBe("Created 'A'")
      expect(await openIds(user)).toEqual([a.id])
      expect((await redo(user)).description).toBe("Created 'B'")
    })

    it("a new action clears the redo stack", async () => {
      const user = await berliner()
      const task = await createTask(user.api, { title: "Pay rent" })
      await user.api.patch(`/api/tasks/${task.id}`, { priority: 1 })
      await user.api.patch(`/api/tasks/${task.id}`, { priority: 2 })
      await undo(user)
      expect(await undo(user)).toMatchObject({ undoable_count: 1, redoable_count: 2 })
      await user.api.patch(`/api/tasks/${task.id}`, { notes: "new" })
      expect(await status(user)).toMatchObject({ undoable_count: 2, redoable_count: 0 })
      const res = await user.api.post("/api/redo")
      expect(res.status).toBe(400)
      expect(res.body).toEqual(nothingTo("redo"))
      expect((await undoEntries(service, user.id)).map((e) => [e.action, e.undone])).toEqual([["create", false], ["edit", false]])
      expect(await read(user, task.id)).toMatchObject({ priority: 0, notes: "new" })
    })

    it("nothing to undo or redo is a 400 envelope and changes nothing", async () => {
      const user = await berliner()
      for (const path of ["/api/undo", "/api/redo"]) {
        const res = await user.api.post(path)
        expect(res.status).toBe(400)
        expect(res.body).toEqual(nothingTo(path === "/api/undo" ? "undo" : "redo"))
      }
      await createTask(user.api, { title: "Only one" })
      await undo(user)
      const again = await user.api.post("/api/undo", { session_start_id: 0 })
      expect(again.status).toBe(400)
      expect(again.body).toEqual(nothingTo("undo"))
      await redo(user)
      expect((await user.api.post("/api/redo")).body).toEqual(nothingTo("redo"))
      expect(await status(user)).toMatchObject({ undoable_count: 1, redoable_count: 0 })
    })

    it("a malformed session_start_id is a 400 and undoes nothing", async () => {
      const user = await berliner()
      await createTask(user.api, { title: "Keep me" })
      for (const body of [{ session_start_id: "x" }, { session_start_id: -1 }, { session_start_id: 1.5 }]) {
        const res = await user.api.post("/api/undo", body)
        expect(res.status).toBe(400)
        expect(res.body.code).toBe("VALIDATION_ERROR")
      }
      expect(await status(user)).toMatchObject({ undoable_count: 1, redoable_count: 0 })
    })
  })

  describe("status, session counts and history", () => {
    it("GET /api/undo/status: latest_id null and zero counts for a new user, then the newest entry id", async () => {
      const user = await berliner()
      expect(await status(user)).toEqual({ latest_id: null, undoable_count: 0, redoable_count: 0 })
      await createTask(user.api, { title: "One" })
      const entries = await undoEntries(service, user.id)
      expect(await status(user)).toEqual({ latest_id: entries[0]!.id, undoable_count: 1, redoable_count: 0 })
      await undo(user)
      expect(await status(user)).toEqual({ latest_id: entries[0]!.id, undoable_count: 0, redoable_count: 1 })
    })

    it("session_start_id limits only the returned counts, never what is undone", async () => {
      const user = await berliner()
      const early = await createTask(user.api, { title: "Before the session" })
      await user.api.patch(`/api/tasks/${early.id}`, { priority: 1 })
      const { latest_id } = await status(user)
      const t = await createTask(user.api, { title: "In the session" })
      await user.api.patch(`/api/tasks/${t.id}`, { priority: 2 })

      expect(await undo(user, { session_start_id: latest_id })).toMatchObject({ undone_action: "edit", undoable_count: 1, redoable_count: 1 })
      expect(await undo(user, { session_start_id: latest_id })).toMatchObject({ undone_action: "create", undoable_count: 0, redoable_count: 2 })
      // Undo goes on past the session start; the counts stay about the session.
      expect(await undo(user, { session_start_id: latest_id })).toMatchObject({
        undone_action: "edit",
        description: "Edited 'Before the session' (priority)",
        undoable_count: 0,
        redoable_count: 2
      })
      expect((await read(user, early.id)).priority).toBe(0)
      // Without it: all time.
      expect(await redo(user)).toMatchObject({ redone_action: "edit", undoable_count: 2, redoable_count: 2 })
      expect(await redo(user, { session_start_id: latest_id })).toMatchObject({ redone_action: "create", undoable_count: 1, redoable_count: 1 })
      expect(await redo(user, null)).toMatchObject({ redone_action: "edit", undoable_count: 4, redoable_count: 0 })
    })

    it("GET /api/undo/history: newest first, with the undone flag and a limit", async () => {
      const user = await berliner()
      const task = await createTask(user.api, { title: "Pay rent" })
      await user.api.post(`/api/tasks/${task.id}/done`)
      await user.api.post(`/api/tasks/${task.id}/undone`)
      await undo(user)
      const entries = await undoEntries(service, user.id)
      const res = await user.api.get("/api/undo/history")
      expect(res.status).toBe(200)
      expect(res.body.data).toEqual({
        history: [
          { id: entries[2]!.id, action: "undone", description: "Marked 'Pay rent' not done", created_at: entries[2]!.created_at, undone: true },
          { id: entries[1]!.id, action: "done", description: "Marked 'Pay rent' done", created_at: entries[1]!.created_at, undone: false },
          { id: entries[0]!.id, action: "create", description: "Created 'Pay rent'", created_at: entries[0]!.created_at, undone: false }
        ],
        count: 3
      })
      expect(res.body.data.history[0].created_at).toMatch(/^2026-03-10T09:0\d:\d\d\.\d{3}Z$/)
      const limited = await user.api.get("/api/undo/history?limit=2")
      expect(limited.body.data.count).toBe(2)
      expect(limited.body.data.history.map((h: { id: number }) => h.id)).toEqual([entries[2]!.id, entries[1]!.id])
      for (const bad of ["0", "1001", "x", "-1"]) expect((await user.api.get(`/api/undo/history?limit=${bad}`)).status).toBe(400)
    })
  })

  describe("isolation", () => {
    it("one user's undo never touches another user's entries", async () => {
      const alice = await berliner()
      const bob = await berliner()
      const task = await createTask(alice.api, { title: "Alice's" })
      await alice.api.patch(`/api/tasks/${task.id}`, { priority: 3 })
      const res = await bob.api.post("/api/undo")
      expect(res.status).toBe(400)
      expect(res.body).toEqual(nothingTo("undo"))
      expect((await bob.api.post("/api/redo")).status).toBe(400)
      expect((await read(alice, task.id)).priority).toBe(3)
      expect((await undoEntries(service, alice.id)).every((e) => !e.undone)).toBe(true)
      expect(await status(bob)).toEqual({ latest_id: null, undoable_count: 0, redoable_count: 0 })
      expect((await bob.api.get("/api/undo/history")).body.data).toEqual({ history: [], count: 0 })
      // Bob acting does not clear Alice's redo stack.
      await undo(alice)
      await createTask(bob.api, { title: "Bob's" })
      expect(await redo(alice)).toMatchObject({ redone_action: "edit" })
    })
  })
})

/** A progress answer without the fields the action adds. */
const stripExtras = (answer: Record<string, unknown>) => {
  const { met: _m, description: _d, ...rest } = answer
  return rest
}

describe("undo across a quota period boundary (spec §4.6: rollovers are not undoable)", () => {
  /** Each test has its own database, which its services share across restarts. */
  const databases: Array<TestDatabase> = []
  const services: Array<TestService> = []
  let database: TestDatabase
  const start = async (now: string) => {
    const s = await startService({ serviceNow: Option.some(new Date(now)) }, database)
    services.push(s)
    return s
  }
  const stop = async (s: TestService) => {
    services.splice(services.indexOf(s), 1)
    await s.stop()
  }

  beforeEach(async () => {
    // A service left running by a failed test must not hold the next test's data.
    for (const s of services.splice(0)) await s.stop()
    database = await freshDatabase()
    databases.push(database)
  })
  afterAll(async () => {
    for (const s of services.splice(0)) await s.stop()
    for (const db of databases) await db.drop()
  })

  const periodsOf = (s: TestService, taskId: number) =>
    query<{ period_start: string; count: number; met: boolean }>(s, (sql: SqlClient.SqlClient) =>
      sql<{ period_start: string; count: number; met: boolean }>`
        SELECT steady_iso(period_start) AS period_start, count, met FROM quota_periods WHERE task_id = ${taskId} ORDER BY period_start`)

  it("a progress log (or Did it) undone after its period rolled over leaves the count alone; the rollover wrote no entry", async () => {
    const first = await start("2026-03-10T09:00:00Z")
    const user = await first.user("carol", "Europe/Berlin")
    const quota = await createTask(user.api, { title: "Read", progress_target: 2, rrule: "FREQ=DAILY" })
    await user.api.post(`/api/tasks/${quota.id}/progress`, { delta: 2 })
    await user.api.post(`/api/tasks/${quota.id}/progress`)
    expect((await user.api.get(`/api/tasks/${quota.id}`)).body.data.progress_current).toBe(3)
    // Another user taps Did it on prompt 2 of a daily quota that same day.
    const erin = await first.user("erin", "Europe/Berlin")
    const prompted = await createTask(erin.api, { title: "Stretch", progress_target: 3, rrule: "FREQ=DAILY" })
    const key = `q:${prompted.id}:2:2026-03-10`
    expect((await erin.api.post("/api/quota-prompts/did", { keys: [key] })).body.data).toMatchObject({ did: 1 })
    await stop(first)

    // The next local day: the period of 10 March has ended.
    const second = await start("2026-03-11T09:00:00Z")
    await second.run(Effect.flatMap(Quotas, (q) => q.sweep()))
    const again = await second.user("carol", "Europe/Berlin")
    const rolled = (await again.api.get(`/api/tasks/${quota.id}`)).body.data
    expect(rolled).toMatchObject({ progress_current: 0, completion_count: 1, progress_period_start: "2026-03-10T23:00:00.000Z" })
    expect(await periodsOf(second, quota.id)).toEqual([{ period_start: "2026-03-09T23:00:00.000Z", count: 3, met: true }])
    expect((await undoEntries(second, again.id)).map((e) => e.action)).toEqual(["create", "progress", "progress"])

    const u = await again.api.post("/api/undo")
    expect(u.body.data).toEqual({ undone_action: "progress", description: "Logged +1 on 'Read' (3/2)", tasks_affected: 1, undoable_count: 2, redoable_count: 1 })
    const after = (await again.api.get(`/api/tasks/${quota.id}`)).body.data
    expect(after.progress_current).toBe(0)
    expect(after.quota_day_state).toEqual(rolled.quota_day_state)
    expect(await periodsOf(second, quota.id)).toEqual([{ period_start: "2026-03-09T23:00:00.000Z", count: 3, met: true }])
    // A log in the new period is undone as usual.
    await again.api.post(`/api/tasks/${quota.id}/progress`)
    expect((await again.api.post("/api/undo")).body.data).toMatchObject({ undone_action: "progress" })
    expect((await again.api.get(`/api/tasks/${quota.id}`)).body.data.progress_current).toBe(0)

    // Undoing the Did it after the rollover leaves the new period's count and state alone too.
    const erinAgain = await second.user("erin", "Europe/Berlin")
    const before = (await erinAgain.api.get(`/api/tasks/${prompted.id}`)).body.data
    expect(before).toMatchObject({ progress_current: 0, progress_period_start: "2026-03-10T23:00:00.000Z" })
    expect(await periodsOf(second, prompted.id)).toEqual([{ period_start: "2026-03-09T23:00:00.000Z", count: 2, met: false }])
    expect((await erinAgain.api.post("/api/undo")).body.data).toMatchObject({ undone_action: "quota_prompt", tasks_affected: 1 })
    expect((await erinAgain.api.get(`/api/tasks/${prompted.id}`)).body.data).toEqual(before)
    expect(await periodsOf(second, prompted.id)).toEqual([{ period_start: "2026-03-09T23:00:00.000Z", count: 2, met: false }])
    await stop(second)
  })

  it("a log undone just after its period ended, before the rollover ran, does not change the closed period's count", async () => {
    // 23:59:35 in Berlin: the log lands in 10 March, the undo comes after midnight. The service
    // runs on a TestClock, so midnight passes when the test moves the clock, and the rollover
    // fiber (swept at start, next due 5 minutes later) has not run when the undo arrives.
    const midnight = Date.parse("2026-03-10T23:00:00.000Z")
    const s = await startServiceOnTestClock(new Date("2026-03-10T22:59:35Z"), {}, database)
    services.push(s)
    const user = await s.user("dave", "Europe/Berlin")
    const quota = await createTask(user.api, { title: "Walk", progress_target: 1, is_tracked: true, rrule: "FREQ=DAILY" })
    expect(quota.progress_period_start).toBe("2026-03-09T23:00:00.000Z")
    const logged = (await user.api.post(`/api/tasks/${quota.id}/progress`)).body.data
    expect(logged.progress_current).toBe(1)
    expect(Date.parse(logged.updated_at)).toBeLessThan(midnight)
    expect(logged.updated_at).toBe("2026-03-10T22:59:35.000Z")
    await s.clock.setTime(new Date(midnight + 500))
    const u = await user.api.post("/api/undo")
    expect(u.status).toBe(200)
    expect(u.body.data).toMatchObject({ undone_action: "progress" })
    await s.run(Effect.flatMap(Quotas, (q) => q.sweep()))
    // The 10 March period keeps the logged count: it was met.
    expect(await periodsOf(s, quota.id)).toEqual([{ period_start: "2026-03-09T23:00:00.000Z", count: 1, met: true }])
    expect((await user.api.get(`/api/tasks/${quota.id}`)).body.data).toMatchObject({ progress_current: 0, completion_count: 1 })
    await stop(s)
  })
})
