import { Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { dailyStats, outboxEvents, snapshot, undoEntries } from "./support/rows.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, inboxOf } from "./support/tasks.js"

/** 12:00 UTC on 8 March is 01:00 on Monday 9 March in Auckland (NZDT, UTC+13). */
const NOW = new Date("2026-03-08T12:00:00Z")
const LOCAL_DATE = "2026-03-09"

/** The task as stored: a PATCH answer without its two extra fields. */
const storedPart = (answer: Record<string, unknown>) => {
  const { description: _d, fields_changed: _f, message: _m, ...task } = answer
  return task
}

describe("the mutation pipeline: undo entry, outbox events and daily statistics per write", () => {
  let service: TestService
  let counter = 0
  /** A fresh user per test, so each test sees only its own rows. */
  const kiwi = (): Promise<TestUser> => service.user(`kiwi${++counter}`, "Pacific/Auckland")

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
  })
  afterAll(async () => {
    await service.stop()
  })

  it("a create writes one 'create' undo entry holding the new task's values, one task.created event and tasks_created on the local date", async () => {
    const user = await kiwi()
    const task = await createTask(user.api, { title: "Plant tomatoes", labels: ["garden"], due_at: "2026-03-10T20:00:00Z" })

    const undo = await undoEntries(service, user.id)
    expect(undo).toHaveLength(1)
    expect(undo[0]).toMatchObject({
      action: "create",
      description: "Created 'Plant tomatoes'",
      tasks_affected: 1,
      undone: false,
      created_at: task.created_at
    })
    expect(undo[0]!.changes).toHaveLength(1)
    expect(undo[0]!.changes[0]).toMatchObject({ op: "insert", table: "tasks", id: task.id })
    expect(undo[0]!.changes[0]!.after).toMatchObject({
      id: task.id,
      user_id: user.id,
      title: "Plant tomatoes",
      labels: ["garden"],
      due_at: "2026-03-10T20:00:00.000Z",
      // 09:00 on Wednesday 11 March in Auckland.
      anchor_time: "09:00",
      anchor_dow: 3,
      anchor_dom: 11,
      // The Inbox, which the statement found itself.
      project_id: task.project_id
    })

    expect(await outboxEvents(service, user.id)).toEqual([
      { id: expect.any(Number), event: "task.created", task_id: task.id, payload: { task }, occurred_at: task.created_at }
    ])
    expect(await dailyStats(service, user.id)).toEqual([
      { date: LOCAL_DATE, completions: 0, tasks_created: 1, snoozes: 0 }
    ])

    await createTask(user.api, { title: "Stake tomatoes" })
    expect(await dailyStats(service, user.id)).toEqual([
      { date: LOCAL_DATE, completions: 0, tasks_created: 2, snoozes: 0 }
    ])
    expect((await undoEntries(service, user.id)).map((u) => u.action)).toEqual(["create", "create"])
    expect((await outboxEvents(service, user.id)).map((e) => e.event)).toEqual(["task.created", "task.created"])
  })

  it("an edit records before/after of the changed fields only and one task.updated event with fields_changed", async () => {
    const user = await kiwi()
    const created = await createTask(user.api, { title: "Write letter", labels: ["family"] })
    const res = await user.api.patch(`/api/tasks/${created.id}`, {
      title: "Write thank-you letter",
      priority: 2,
      notes: "to Gran",
      labels: ["family"]
    })
    expect(res.status).toBe(200)
    const answer = res.body.data
    expect(answer.fields_changed).toEqual(["title", "short_title", "priority", "notes"])

    const undo = await undoEntries(service, user.id)
    expect(undo.map((u) => u.action)).toEqual(["create", "edit"])
    expect(undo[1]).toEqual({
      id: expect.any(Number),
      action: "edit",
      description: "Edited 'Write thank-you letter' (title, short_title, priority, notes)",
      changes: [{
        op: "update",
        table: "tasks",
        id: created.id,
        before: { title: "Write letter", short_title: "Write letter", priority: 0, notes: "" },
        after: { title: "Write thank-you letter", short_title: "Write thank-you letter", priority: 2, notes: "to Gran" }
      }],
      tasks_affected: 1,
      undone: false,
      created_at: answer.updated_at
    })

    const events = await outboxEvents(service, user.id)
    expect(events.map((e) => e.event)).toEqual(["task.created", "task.updated"])
    expect(events[1]).toMatchObject({ task_id: created.id, occurred_at: answer.updated_at })
    expect(events[1]!.payload).toEqual({
      task: storedPart(answer),
      fields_changed: ["title", "short_title", "priority", "notes"]
    })
    // Edits are not creations.
    expect(await dailyStats(service, user.id)).toEqual([{ date: LOCAL_DATE, completions: 0, tasks_created: 1, snoozes: 0 }])
  })

  it("a due date edit records the anchors it moved, in the user's zone", async () => {
    const user = await kiwi()
    const created = await createTask(user.api, { title: "Vet appointment" })
    await user.api.patch(`/api/tasks/${created.id}`, { due_at: "2026-03-10T20:00:00Z" })
    const [, edit] = await undoEntries(service, user.id)
    expect(edit!.changes).toEqual([{
      op: "update",
      table: "tasks",
      id: created.id,
      before: { due_at: null, anchor_time: null, anchor_dow: 0, anchor_dom: 0, original_due_at: null },
      after: {
        due_at: "2026-03-10T20:00:00.000Z",
        anchor_time: "09:00",
        anchor_dow: 3,
        anchor_dom: 11,
        original_due_at: "2026-03-10T20:00:00.000Z"
      }
    }])
    const events = await outboxEvents(service, user.id)
    expect(events[1]!.payload.fields_changed).toEqual(["due_at", "anchor_time", "anchor_dow", "anchor_dom", "original_due_at"])
  })

  it("an edit that changes nothing records nothing", async () => {
    const user = await kiwi()
    const created = await createTask(user.api, { title: "Same as before", priority: 3 })
    const before = await snapshot(service)
    const res = await user.api.patch(`/api/tasks/${created.id}`, { title: "Same as before", priority: 3 })
    expect(res.status).toBe(200)
    expect(res.body.data.fields_changed).toEqual([])
    expect(await snapshot(service)).toEqual(before)
  })

  it("delete records 'delete' and task.deleted {task_id, title}; restore records 'restore' and task.updated", async () => {
    const user = await kiwi()
    const created = await createTask(user.api, { title: "Clean gutters" })
    const deleted = (await user.api.delete(`/api/tasks/${created.id}`)).body.data

    let undo = await undoEntries(service, user.id)
    expect(undo.map((u) => u.action)).toEqual(["create", "delete"])
    expect(undo[1]).toMatchObject({
      description: "Moved 'Clean gutters' to the trash",
      created_at: deleted.deleted_at,
      changes: [{ op: "update", table: "tasks", id: created.id, before: { deleted_at: null }, after: { deleted_at: deleted.deleted_at } }]
    })
    let events = await outboxEvents(service, user.id)
    expect(events.slice(1)).toEqual([
      {
        id: expect.any(Number),
        event: "task.deleted",
        task_id: created.id,
        payload: { task_id: created.id, title: "Clean gutters" },
        occurred_at: deleted.deleted_at
      }
    ])

    // Deleting what is already in the trash records nothing.
    const beforeAgain = await snapshot(service)
    expect((await user.api.delete(`/api/tasks/${created.id}`)).status).toBe(200)
    expect(await snapshot(service)).toEqual(beforeAgain)

    const restored = (await user.api.post(`/api/tasks/${created.id}/restore`)).body.data
    undo = await undoEntries(service, user.id)
    expect(undo.map((u) => u.action)).toEqual(["create", "delete", "restore"])
    expect(undo[2]).toMatchObject({
      description: "Restored 'Clean gutters' from the trash",
      changes: [{ op: "update", table: "tasks", id: created.id, before: { deleted_at: deleted.deleted_at }, after: { deleted_at: null } }]
    })
    events = await outboxEvents(service, user.id)
    expect(events.map((e) => e.event)).toEqual(["task.created", "task.deleted", "task.updated"])
    expect(events[2]!.payload).toEqual({ task: restored, fields_changed: ["deleted_at"] })
    expect(await dailyStats(service, user.id)).toEqual([{ date: LOCAL_DATE, completions: 0, tasks_created: 1, snoozes: 0 }])
  })

  it("a refused write leaves no undo entry, no event, no statistic and no change", async () => {
    const user = await kiwi()
    const other = await kiwi()
    const task = await createTask(user.api, { title: "Keep me", priority: 1, due_at: "2026-05-01T00:00:00Z" })
    const undated = await createTask(user.api, { title: "No date" })
    const foreignInbox = await inboxOf(other.api)
    const before = await snapshot(service)
    expect(before.undo.length).toBeGreaterThan(0)

    const attempts: Array<[string, () => Promise<{ status: number; body: any }>, number, string]> = [
      ["priority out of range", () => user.api.patch(`/api/tasks/${task.id}`, { priority: 9 }), 400, "priority"],
      ["quota without a period", () => user.api.patch(`/api/tasks/${undated.id}`, { progress_target: 3, title: "Changed" }), 400, "rrule"],
      ["quota with a due date", () => user.api.patch(`/api/tasks/${task.id}`, { is_tracked: true, rrule: "FREQ=DAILY" }), 400, "due_at"],
      ["someone else's project", () => user.api.patch(`/api/tasks/${task.id}`, { project_id: foreignInbox, notes: "x" }), 400, "project_id"],
      [
        "due after the deadline",
        () => user.api.patch(`/api/tasks/${task.id}`, { deadline_at: "2026-04-01T00:00:00Z", title: "Changed" }),
        400,
        "due_at"
      ],
      ["create a quota without a period", () => user.api.post("/api/tasks", { title: "Run", progress_target: 3 }), 400, "rrule"],
      ["create in an unknown project", () => user.api.post("/api/tasks", { title: "Lost", project_id: 999999 }), 400, "project_id"],
      ["create with a malformed date", () => user.api.post("/api/tasks", { title: "When?", due_at: "2026-02-30T10:00:00Z" }), 400, "due_at"],
      ["restore an open task", () => user.api.post(`/api/tasks/${task.id}/restore`), 400, "id"],
      ["edit by another user", () => other.api.patch(`/api/tasks/${task.id}`, { title: "Mine now" }), 404, ""],
      ["delete by another user", () => other.api.delete(`/api/tasks/${task.id}`), 404, ""],
      ["delete an unknown task", () => user.api.delete("/api/tasks/999999"), 404, ""]
    ]
    for (const [name, attempt, status, field] of attempts) {
      const res = await attempt()
      expect(res.status, name).toBe(status)
      if (field !== "") expect(Object.keys(res.body.details), name).toEqual([field])
      expect(await snapshot(service), name).toEqual(before)
    }
    expect((await user.api.get(`/api/tasks/${task.id}`)).body.data).toEqual(task)
    expect((await user.api.get(`/api/tasks/${undated.id}`)).body.data).toEqual(undated)
  })
})
