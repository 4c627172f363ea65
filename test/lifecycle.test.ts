import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { dailyStats, outboxEvents, query, snapshot, undoEntries } from "./support/rows.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, expectServiceTime, listIds } from "./support/tasks.js"

/**
 * Spec §3, one test per row that is not about quotas, through HTTP.
 *
 * The service clock is pinned at 03:30 UTC on Saturday 7 March 2026, which is 22:30 on
 * Friday 6 March in New York (EST, UTC-5): the user's local date differs from the UTC one.
 * New York springs forward at 02:00 on Sunday 8 March (EDT, UTC-4); Berlin on 29 March.
 */
const NOW = new Date("2026-03-07T03:30:00Z")
const NY_TODAY = "2026-03-06"

/** 09:00 EST on Saturday 7 March, 09:00 EDT on Sunday 8 and Monday 9 March. */
const SAT_0900 = "2026-03-07T14:00:00.000Z"
const SUN_0900 = "2026-03-08T13:00:00.000Z"
const MON_0900 = "2026-03-09T13:00:00.000Z"

const WIRE_EXTRAS = ["was_recurring", "next_due_at", "description", "previous_due_at", "message", "fields_changed"]
/** The task as stored: an action's answer without the fields the action adds. */
const stored = (answer: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(answer).filter(([k]) => !WIRE_EXTRAS.includes(k)))

interface CompletionRow {
  readonly id: number
  readonly task_id: number
  readonly user_id: number
  readonly completed_at: string
  readonly due_at_was: string | null
  readonly due_at_next: string | null
  readonly task_title: string
  readonly project_id: number
  readonly is_reminder: boolean
  readonly is_tracked: boolean
  readonly progress_target: number
}

const refusal = (message: string, details: Record<string, string> = {}) => ({
  error: message,
  code: "VALIDATION_ERROR",
  details
})

describe("task lifecycle transitions (spec §3)", () => {
  let service: TestService
  let counter = 0
  /** A fresh user per test, so each test sees only its own rows. */
  const newYorker = (): Promise<TestUser> => service.user(`ny${++counter}`, "America/New_York")
  const berliner = (): Promise<TestUser> => service.user(`berlin${++counter}`, "Europe/Berlin")

  const completionsOf = async (user: TestUser, taskId: number): Promise<Array<CompletionRow>> => {
    const res = await user.api.get(`/api/completions?task_id=${taskId}`)
    expect(res.status).toBe(200)
    expect(res.body.data.count).toBe(res.body.data.completions.length)
    return res.body.data.completions
  }
  const read = async (user: TestUser, id: number) => (await user.api.get(`/api/tasks/${id}`)).body.data

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
  })
  afterAll(async () => {
    await service.stop()
  })

  describe("POST /api/tasks/{id}/done", () => {
    it("a one-off becomes done and archived: completion recorded, task.completed sent, counted on the user's local date, undoable", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "File taxes", due_at: "2026-03-06T20:00:00Z" })

      const res = await user.api.post(`/api/tasks/${task.id}/done`)
      expect(res.status).toBe(200)
      const answer = res.body.data
      expectServiceTime(answer.done_at, NOW)
      expect(answer).toEqual({
        ...task,
        done: true,
        done_at: answer.done_at,
        archived_at: answer.done_at,
        occurrence_at: "2026-03-06T20:00:00.000Z",
        completion_count: 1,
        first_completed_at: answer.done_at,
        last_completed_at: answer.done_at,
        updated_at: answer.done_at,
        is_snoozed: false,
        was_recurring: false,
        next_due_at: null
      })
      // The due date stays what it was.
      expect(answer.due_at).toBe("2026-03-06T20:00:00.000Z")
      expect(await read(user, task.id)).toEqual(stored(answer))

      // Out of the open list, into the done one.
      expect(await listIds(user.api)).not.toContain(task.id)
      expect(await listIds(user.api, "done=true")).toEqual([task.id])

      expect(await completionsOf(user, task.id)).toEqual([{
        id: expect.any(Number),
        task_id: task.id,
        user_id: user.id,
        completed_at: answer.done_at,
        due_at_was: "2026-03-06T20:00:00.000Z",
        due_at_next: null,
        task_title: "File taxes",
        project_id: task.project_id,
        is_reminder: false,
        is_tracked: false,
        progress_target: 1
      }])

      const events = await outboxEvents(service, user.id)
      expect(events.map((e) => e.event)).toEqual(["task.created", "task.completed"])
      expect(events[1]).toMatchObject({ task_id: task.id, occurred_at: answer.done_at, payload: { task: stored(answer) } })

      // 22:30 on 6 March in New York, although it is already 7 March in UTC.
      expect(await dailyStats(service, user.id)).toEqual([
        { date: NY_TODAY, completions: 1, tasks_created: 1, snoozes: 0 }
      ])

      const undo = await undoEntries(service, user.id)
      expect(undo.map((u) => u.action)).toEqual(["create", "done"])
      expect(undo[1]).toMatchObject({ description: "Marked 'File taxes' done", tasks_affected: 1, undone: false })
      expect(undo[1]!.changes.map((c) => [c.op, c.table])).toEqual([["update", "tasks"], ["insert", "completions"]])
    })

    it("a one-off without a due date records a completion with due_at_was and due_at_next null", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Call Mum" })
      const res = await user.api.post(`/api/tasks/${task.id}/done`)
      expect(res.status).toBe(200)
      expect(res.body.data).toMatchObject({ done: true, due_at: null, occurrence_at: null, was_recurring: false, next_due_at: null })
      const [completion, ...rest] = await completionsOf(user, task.id)
      expect(rest).toEqual([])
      expect(completion).toMatchObject({ completed_at: res.body.data.done_at, due_at_was: null, due_at_next: null })
    })

    it("a recurring task moves to its next occurrence at the same local wall time across the DST change", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Water plants", due_at: SAT_0900, rrule: "FREQ=DAILY" })
      expect(task).toMatchObject({ anchor_time: "09:00", is_recurring: true })

      const first = await user.api.post(`/api/tasks/${task.id}/done`)
      expect(first.status).toBe(200)
      const answer = first.body.data
      expectServiceTime(answer.last_completed_at, NOW)
      expect(answer).toEqual({
        ...task,
        // Still open, one occurrence later: 09:00 EDT is 13:00 UTC.
        due_at: SUN_0900,
        original_due_at: SUN_0900,
        occurrence_at: SAT_0900,
        completion_count: 1,
        first_completed_at: answer.last_completed_at,
        last_completed_at: answer.last_completed_at,
        updated_at: answer.last_completed_at,
        was_recurring: true,
        next_due_at: SUN_0900
      })
      expect(answer).toMatchObject({ done: false, done_at: null, archived_at: null, anchor_time: "09:00", is_snoozed: false })
      expect(await listIds(user.api)).toEqual([task.id])

      const second = (await user.api.post(`/api/tasks/${task.id}/done`)).body.data
      expect(second).toMatchObject({
        due_at: MON_0900,
        next_due_at: MON_0900,
        was_recurring: true,
        completion_count: 2,
        first_completed_at: answer.last_completed_at,
        occurrence_at: SUN_0900
      })
      expect(second.last_completed_at >= answer.last_completed_at).toBe(true)

      // Newest first, each with the due dates it moved between.
      const completions = await completionsOf(user, task.id)
      expect(completions.map((c) => [c.completed_at, c.due_at_was, c.due_at_next])).toEqual([
        [second.last_completed_at, SUN_0900, MON_0900],
        [answer.last_completed_at, SAT_0900, SUN_0900]
      ])
      const events = await outboxEvents(service, user.id)
      expect(events.map((e) => e.event)).toEqual(["task.created", "task.completed", "task.completed"])
      expect(events[1]!.payload).toEqual({ task: stored(answer) })
      expect(await dailyStats(service, user.id)).toEqual([{ date: NY_TODAY, completions: 2, tasks_created: 1, snoozes: 0 }])
      expect((await undoEntries(service, user.id)).map((u) => u.action)).toEqual(["create", "done", "done"])
    })

    it("a weekly task in Berlin keeps 08:30 local across the 29 March change", async () => {
      const user = await berliner()
      // Monday 23 March 08:30 CET (UTC+1) → Monday 30 March 08:30 CEST (UTC+2).
      const task = await createTask(user.api, { title: "Team sync notes", due_at: "2026-03-23T07:30:00Z", rrule: "FREQ=WEEKLY" })
      const res = await user.api.post(`/api/tasks/${task.id}/done`)
      expect(res.body.data).toMatchObject({
        due_at: "2026-03-30T06:30:00.000Z",
        next_due_at: "2026-03-30T06:30:00.000Z",
        was_recurring: true,
        done: false
      })
    })

    it("the last occurrence of a series that has ended completes the task", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, {
        title: "Course homework",
        due_at: SAT_0900,
        rrule: "FREQ=DAILY;UNTIL=20260308T000000Z"
      })
      const res = await user.api.post(`/api/tasks/${task.id}/done`)
      expect(res.status).toBe(200)
      expect(res.body.data).toMatchObject({
        done: true,
        archived_at: res.body.data.done_at,
        due_at: SAT_0900,
        was_recurring: true,
        next_due_at: null,
        completion_count: 1
      })
      const [completion] = await completionsOf(user, task.id)
      expect(completion).toMatchObject({ due_at_was: SAT_0900, due_at_next: null })
    })

    it("from_completion counts the interval from the completion, at the anchor time; from_due from the due date", async () => {
      const user = await newYorker()
      // Due 09:00 EST on Sunday 1 March, every third day.
      const body = { due_at: "2026-03-01T14:00:00Z", rrule: "FREQ=DAILY;INTERVAL=3" }
      const fromCompletion = await createTask(user.api, { title: "Haircut", ...body, recurrence_mode: "from_completion" })
      const fromDue = await createTask(user.api, { title: "Change filter", ...body })
      expect(fromCompletion).toMatchObject({ recurrence_mode: "from_completion", anchor_time: "09:00" })
      expect(fromDue.recurrence_mode).toBe("from_due")

      // Completed at 22:30 on Friday 6 March local: three days later is Monday 9 March, 09:00 EDT.
      const a = (await user.api.post(`/api/tasks/${fromCompletion.id}/done`)).body.data
      expect(a).toMatchObject({ due_at: MON_0900, next_due_at: MON_0900, was_recurring: true })
      // The rule's next match after 1 March: 4 March, 09:00 EST.
      const b = (await user.api.post(`/api/tasks/${fromDue.id}/done`)).body.data
      expect(b).toMatchObject({ due_at: "2026-03-04T14:00:00.000Z", next_due_at: "2026-03-04T14:00:00.000Z" })

      const [completion] = await completionsOf(user, fromCompletion.id)
      expect(completion).toMatchObject({ due_at_was: "2026-03-01T14:00:00.000Z", due_at_next: MON_0900 })
    })

    it("done on a trashed task is a 400 and changes nothing", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Old chore", due_at: SAT_0900 })
      expect((await user.api.delete(`/api/tasks/${task.id}`)).status).toBe(200)
      const before = await snapshot(service)
      const res = await user.api.post(`/api/tasks/${task.id}/done`)
      expect(res.status).toBe(400)
      expect(res.body).toEqual(refusal("Cannot complete a task in the trash; restore it first"))
      expect(await snapshot(service)).toEqual(before)
    })

    it("done twice on a one-off: the second is a 400 and records nothing", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Post the letter" })
      const first = await user.api.post(`/api/tasks/${task.id}/done`)
      expect(first.status).toBe(200)
      const before = await snapshot(service)
      const again = await user.api.post(`/api/tasks/${task.id}/done`)
      expect(again.status).toBe(400)
      expect(again.body).toEqual(refusal("Cannot complete a task that is already done"))
      expect(await snapshot(service)).toEqual(before)
      expect(await completionsOf(user, task.id)).toHaveLength(1)
    })

    it("done on an unknown or someone else's task is a 404", async () => {
      const user = await newYorker()
      const other = await newYorker()
      const task = await createTask(other.api, { title: "Not yours" })
      expect((await user.api.post(`/api/tasks/${task.id}/done`)).status).toBe(404)
      expect((await user.api.post("/api/tasks/999999/done")).status).toBe(404)
      expect((await read(other, task.id)).done).toBe(false)
    })
  })

  describe("POST /api/tasks/{id}/undone", () => {
    it("reopens a done one-off: completion removed, counts and statistics roll back, recorded as undoable", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Return library books", due_at: "2026-03-06T20:00:00Z" })
      await user.api.post(`/api/tasks/${task.id}/done`)

      const res = await user.api.post(`/api/tasks/${task.id}/undone`)
      expect(res.status).toBe(200)
      const answer = res.body.data
      expectServiceTime(answer.updated_at, NOW)
      expect(answer).toEqual({
        ...task,
        occurrence_at: "2026-03-06T20:00:00.000Z",
        updated_at: answer.updated_at
      })
      expect(answer).toMatchObject({
        done: false,
        done_at: null,
        archived_at: null,
        completion_count: 0,
        first_completed_at: null,
        last_completed_at: null
      })
      expect(await listIds(user.api)).toEqual([task.id])
      expect(await completionsOf(user, task.id)).toEqual([])
      expect(await dailyStats(service, user.id)).toEqual([{ date: NY_TODAY, completions: 0, tasks_created: 1, snoozes: 0 }])

      const undo = await undoEntries(service, user.id)
      expect(undo.map((u) => u.action)).toEqual(["create", "done", "undone"])
      expect(undo[2]).toMatchObject({ description: "Marked 'Return library books' not done", tasks_affected: 1 })
      expect(undo[2]!.changes.map((c) => [c.op, c.table])).toEqual([["update", "tasks"], ["delete", "completions"]])
      const events = await outboxEvents(service, user.id)
      expect(events.map((e) => e.event)).toEqual(["task.created", "task.completed", "task.updated"])
      expect(events[2]!.payload.task).toEqual(answer)
    })

    it("undone on an open one-off is a 400: nothing to put back", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Still open" })
      const before = await snapshot(service)
      const res = await user.api.post(`/api/tasks/${task.id}/undone`)
      expect(res.status).toBe(400)
      expect(res.body).toEqual(refusal("The task is not done; there is nothing to put back"))
      expect(await snapshot(service)).toEqual(before)
    })

    it("a recurring task's occurrence returns to the due date it had, one completion at a time", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Feed the cat", due_at: SAT_0900, rrule: "FREQ=DAILY" })
      const first = (await user.api.post(`/api/tasks/${task.id}/done`)).body.data
      const second = (await user.api.post(`/api/tasks/${task.id}/done`)).body.data
      expect(second.due_at).toBe(MON_0900)

      const back1 = await user.api.post(`/api/tasks/${task.id}/undone`)
      expect(back1.status).toBe(200)
      expect(back1.body.data).toMatchObject({
        due_at: SUN_0900,
        original_due_at: SUN_0900,
        done: false,
        completion_count: 1,
        first_completed_at: first.last_completed_at,
        last_completed_at: first.last_completed_at
      })
      expect((await completionsOf(user, task.id)).map((c) => c.due_at_next)).toEqual([SUN_0900])

      const back2 = await user.api.post(`/api/tasks/${task.id}/undone`)
      expect(back2.status).toBe(200)
      expect(back2.body.data).toMatchObject({
        due_at: SAT_0900,
        original_due_at: SAT_0900,
        completion_count: 0,
        first_completed_at: null,
        last_completed_at: null
      })
      expect(await completionsOf(user, task.id)).toEqual([])
      expect(await dailyStats(service, user.id)).toEqual([{ date: NY_TODAY, completions: 0, tasks_created: 1, snoozes: 0 }])
      expect((await undoEntries(service, user.id)).map((u) => u.action)).toEqual(["create", "done", "done", "undone", "undone"])

      // Nothing left to put back.
      const before = await snapshot(service)
      const none = await user.api.post(`/api/tasks/${task.id}/undone`)
      expect(none.status).toBe(400)
      expect(none.body).toEqual(refusal("The task has no completion to put back"))
      expect(await snapshot(service)).toEqual(before)
    })

    it("a recurring task snoozed since its completion cannot be put back (400)", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Stretch", due_at: SAT_0900, rrule: "FREQ=DAILY" })
      await user.api.post(`/api/tasks/${task.id}/done`)
      const snoozed = await user.api.post(`/api/tasks/${task.id}/snooze`, { until: "2026-03-08T18:00:00Z" })
      expect(snoozed.status).toBe(200)

      const before = await snapshot(service)
      const res = await user.api.post(`/api/tasks/${task.id}/undone`)
      expect(res.status).toBe(400)
      expect(res.body).toEqual(refusal("The due date changed since the last completion; it cannot be put back"))
      expect(await snapshot(service)).toEqual(before)
      expect(await read(user, task.id)).toMatchObject({ due_at: "2026-03-08T18:00:00.000Z", completion_count: 1 })
    })

    it("a recurring task that was never completed has nothing to put back (400)", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Floss", due_at: SAT_0900, rrule: "FREQ=DAILY" })
      const res = await user.api.post(`/api/tasks/${task.id}/undone`)
      expect(res.status).toBe(400)
      expect(res.body).toEqual(refusal("The task has no completion to put back"))
      expect(await read(user, task.id)).toEqual(task)
    })
  })

  describe("POST /api/tasks/{id}/skip-occurrence", () => {
    it("a recurring task advances: skip_count +1, completion_count untouched, task.skipped and never task.completed", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Run 5k", due_at: SAT_0900, rrule: "FREQ=DAILY" })
      const res = await user.api.post(`/api/tasks/${task.id}/skip-occurrence`)
      expect(res.status).toBe(200)
      const answer = res.body.data
      expectServiceTime(answer.updated_at, NOW)
      expect(answer).toEqual({
        ...task,
        due_at: SUN_0900,
        original_due_at: SUN_0900,
        occurrence_at: SAT_0900,
        skip_count: 1,
        updated_at: answer.updated_at,
        was_recurring: true,
        description: `Skipped 'Run 5k'; next occurrence ${SUN_0900}`
      })
      expect(answer).toMatchObject({ completion_count: 0, done: false, archived_at: null, last_completed_at: null })

      expect(await completionsOf(user, task.id)).toEqual([])
      const events = await outboxEvents(service, user.id)
      expect(events.map((e) => e.event)).toEqual(["task.created", "task.skipped"])
      expect(events[1]!.payload).toEqual({ task: stored(answer) })
      expect(await dailyStats(service, user.id)).toEqual([{ date: NY_TODAY, completions: 0, tasks_created: 1, snoozes: 0 }])
      const undo = await undoEntries(service, user.id)
      expect(undo.map((u) => u.action)).toEqual(["create", "skip"])
      expect(undo[1]!.description).toBe(answer.description)
    })

    it("a one-off is archived, not marked done", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Optional webinar", due_at: SAT_0900 })
      const res = await user.api.post(`/api/tasks/${task.id}/skip-occurrence`)
      expect(res.status).toBe(200)
      const answer = res.body.data
      expectServiceTime(answer.archived_at, NOW)
      expect(answer).toMatchObject({
        done: false,
        done_at: null,
        archived_at: answer.updated_at,
        due_at: SAT_0900,
        skip_count: 1,
        completion_count: 0,
        was_recurring: false,
        description: "Skipped 'Optional webinar'"
      })
      expect(await listIds(user.api)).not.toContain(task.id)
      expect(await listIds(user.api, "archived=true")).toEqual([task.id])
      expect(await completionsOf(user, task.id)).toEqual([])
      expect((await outboxEvents(service, user.id)).map((e) => e.event)).toEqual(["task.created", "task.skipped"])
    })

    it("a reminder is refused with 400 and nothing changes", async () => {
      const user = await newYorker()
      const recurring = await createTask(user.api, { title: "Vitamins", is_reminder: true, due_at: "2026-03-07T13:00:00Z", rrule: "FREQ=DAILY" })
      const oneOff = await createTask(user.api, { title: "Pick up parcel", is_reminder: true, due_at: "2026-03-07T16:00:00Z" })
      const before = await snapshot(service)
      for (const task of [recurring, oneOff]) {
        const res = await user.api.post(`/api/tasks/${task.id}/skip-occurrence`)
        expect(res.status).toBe(400)
        expect(res.body).toEqual(refusal("A reminder has no occurrence to skip"))
      }
      expect(await snapshot(service)).toEqual(before)
    })
  })

  describe("POST /api/tasks/{id}/snooze", () => {
    it("sets due_at to exactly until, keeps original_due_at, counts the snooze and sends task.snoozed", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Book dentist", due_at: SAT_0900 })

      // Any offset is accepted; 10:15 EDT on Monday 9 March is 14:15 UTC.
      const res = await user.api.post(`/api/tasks/${task.id}/snooze`, { until: "2026-03-09T10:15:00-04:00" })
      expect(res.status).toBe(200)
      const answer = res.body.data
      expectServiceTime(answer.updated_at, NOW)
      expect(answer).toEqual({
        ...task,
        due_at: "2026-03-09T14:15:00.000Z",
        original_due_at: SAT_0900,
        snooze_count: 1,
        is_snoozed: true,
        updated_at: answer.updated_at,
        previous_due_at: SAT_0900,
        description: "Snoozed 'Book dentist' until 2026-03-09T14:15:00.000Z"
      })

      const events = await outboxEvents(service, user.id)
      expect(events.map((e) => e.event)).toEqual(["task.created", "task.snoozed"])
      expect(events[1]!.payload).toEqual({ task: stored(answer), previous_due_at: SAT_0900 })
      expect(await dailyStats(service, user.id)).toEqual([{ date: NY_TODAY, completions: 0, tasks_created: 1, snoozes: 1 }])
      const undo = await undoEntries(service, user.id)
      expect(undo.map((u) => u.action)).toEqual(["create", "snooze"])
      expect(undo[1]!.description).toBe(answer.description)

      // A second snooze: previous_due_at is the first snooze's date; the original stays.
      const again = (await user.api.post(`/api/tasks/${task.id}/snooze`, { until: "2026-03-10T14:00:00Z" })).body.data
      expect(again).toMatchObject({
        due_at: "2026-03-10T14:00:00.000Z",
        previous_due_at: "2026-03-09T14:15:00.000Z",
        original_due_at: SAT_0900,
        snooze_count: 2,
        is_snoozed: true
      })
      expect(await dailyStats(service, user.id)).toEqual([{ date: NY_TODAY, completions: 0, tasks_created: 1, snoozes: 2 }])
    })

    it("a task without a due date gets one; previous_due_at is null", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Someday idea" })
      const res = await user.api.post(`/api/tasks/${task.id}/snooze`, { until: "2026-03-12T15:00:00Z" })
      expect(res.status).toBe(200)
      expect(res.body.data).toMatchObject({
        due_at: "2026-03-12T15:00:00.000Z",
        original_due_at: null,
        previous_due_at: null,
        snooze_count: 1
      })
      const events = await outboxEvents(service, user.id)
      expect(events[1]!.payload.previous_due_at).toBeNull()
    })

    it("a done or trashed task cannot be snoozed (400 with a clear message)", async () => {
      const user = await newYorker()
      const done = await createTask(user.api, { title: "Finished", due_at: SAT_0900 })
      await user.api.post(`/api/tasks/${done.id}/done`)
      const trashed = await createTask(user.api, { title: "Binned", due_at: SAT_0900 })
      await user.api.delete(`/api/tasks/${trashed.id}`)

      const before = await snapshot(service)
      const a = await user.api.post(`/api/tasks/${done.id}/snooze`, { until: "2026-03-10T14:00:00Z" })
      expect(a.status).toBe(400)
      expect(a.body).toEqual(refusal("Cannot snooze a task that is already done"))
      const b = await user.api.post(`/api/tasks/${trashed.id}/snooze`, { until: "2026-03-10T14:00:00Z" })
      expect(b.status).toBe(400)
      expect(b.body).toEqual(refusal("Cannot snooze a task in the trash; restore it first"))
      expect(await snapshot(service)).toEqual(before)
    })

    it("until after the deadline is a 400 unless allow_past_deadline or cap_at_deadline", async () => {
      const user = await newYorker()
      const body = { due_at: "2026-03-08T14:00:00Z", deadline_at: "2026-03-10T22:00:00Z" }
      const task = await createTask(user.api, { title: "Submit report", ...body })
      const until = "2026-03-11T14:00:00Z"

      const before = await snapshot(service)
      const refused = await user.api.post(`/api/tasks/${task.id}/snooze`, { until })
      expect(refused.status).toBe(400)
      const message = "until is after the deadline; send allow_past_deadline or cap_at_deadline"
      expect(refused.body).toEqual(refusal(message, { until: message }))
      expect(await snapshot(service)).toEqual(before)

      // Up to the deadline itself is fine.
      const atDeadline = await user.api.post(`/api/tasks/${task.id}/snooze`, { until: "2026-03-10T22:00:00Z" })
      expect(atDeadline.status).toBe(200)
      expect(atDeadline.body.data.due_at).toBe("2026-03-10T22:00:00.000Z")

      const capped = await createTask(user.api, { title: "Capped", ...body })
      const c = await user.api.post(`/api/tasks/${capped.id}/snooze`, { until, cap_at_deadline: true })
      expect(c.status).toBe(200)
      expect(c.body.data).toMatchObject({ due_at: "2026-03-10T22:00:00.000Z", previous_due_at: "2026-03-08T14:00:00.000Z" })

      const allowed = await createTask(user.api, { title: "Allowed", ...body })
      const d = await user.api.post(`/api/tasks/${allowed.id}/snooze`, { until, allow_past_deadline: true })
      expect(d.status).toBe(200)
      expect(d.body.data).toMatchObject({ due_at: "2026-03-11T14:00:00.000Z", deadline_at: "2026-03-10T22:00:00.000Z" })
    })

    it("snooze without until, or with a malformed one, is a 400", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Needs a date", due_at: SAT_0900 })
      const missing = await user.api.post(`/api/tasks/${task.id}/snooze`, {})
      expect(missing.status).toBe(400)
      expect(Object.keys(missing.body.details)).toEqual(["until"])
      const bad = await user.api.post(`/api/tasks/${task.id}/snooze`, { until: "2026-02-30T10:00:00Z" })
      expect(bad.status).toBe(400)
      expect(Object.keys(bad.body.details)).toEqual(["until"])
      expect(await read(user, task.id)).toEqual(task)
    })
  })

  describe("DELETE, restore and reprocess", () => {
    it("DELETE trashes with a message and task.deleted {task_id, title}; restore opens it again", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Clean garage", due_at: SAT_0900 })
      const res = await user.api.delete(`/api/tasks/${task.id}`)
      expect(res.status).toBe(200)
      const answer = res.body.data
      expectServiceTime(answer.deleted_at, NOW)
      expect(answer).toEqual({
        ...task,
        deleted_at: answer.deleted_at,
        updated_at: answer.deleted_at,
        message: "Task 'Clean garage' moved to the trash"
      })
      expect(await listIds(user.api)).toEqual([])
      expect(await listIds(user.api, "trashed=true")).toEqual([task.id])
      const events = await outboxEvents(service, user.id)
      expect(events.map((e) => [e.event, e.payload])).toEqual([
        ["task.created", { task }],
        ["task.deleted", { task_id: task.id, title: "Clean garage" }]
      ])

      const restored = await user.api.post(`/api/tasks/${task.id}/restore`)
      expect(restored.status).toBe(200)
      expect(restored.body.data).toEqual({ ...task, updated_at: restored.body.data.updated_at })
      expect(await listIds(user.api)).toEqual([task.id])
      expect((await undoEntries(service, user.id)).map((u) => u.action)).toEqual(["create", "delete", "restore"])
    })

    it("reprocess answers 200 with the task and records when enrichment was requested", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "bbq sat get charcoal + buns" })
      const res = await user.api.post(`/api/tasks/${task.id}/reprocess`)
      expect(res.status).toBe(200)
      expect(res.body.data).toEqual({ ...task, updated_at: res.body.data.updated_at })
      const [row] = await query<{ enrichment_requested_at: string | null }>(service, (sql) =>
        sql`SELECT steady_iso(enrichment_requested_at) AS enrichment_requested_at FROM tasks WHERE id = ${task.id}`)
      expectServiceTime(row!.enrichment_requested_at, NOW)
      // Queuing is bookkeeping: it is not an undoable action and sends no event.
      expect((await undoEntries(service, user.id)).map((u) => u.action)).toEqual(["create"])
      expect((await outboxEvents(service, user.id)).map((e) => e.event)).toEqual(["task.created"])
    })
  })

  describe("recurrence rules on create and PATCH", () => {
    const badRules: Array<[string, string, string]> = [
      ["does not parse", "FREQ=DAILY;FOO=1", "rrule does not parse: unknown part FOO"],
      ["is not a rule at all", "every tuesday", "rrule is not an RRULE (expected e.g. FREQ=DAILY)"],
      ["never matches", "FREQ=DAILY;UNTIL=20000101T000000Z", "rrule never matches a future date"],
      [
        "names an impossible date",
        "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",
        "rrule never matches: no calendar day satisfies its BYMONTH/BYWEEKNO/BYYEARDAY/BYMONTHDAY/BYDAY parts together"
      ],
      ["is minutely", "FREQ=MINUTELY", "rrule FREQ must be YEARLY, MONTHLY, WEEKLY, DAILY or HOURLY"]
    ]

    for (const [name, rule, reason] of badRules) {
      it(`a rule that ${name} is a 400 with the reason, on create and on PATCH`, async () => {
        const user = await newYorker()
        const task = await createTask(user.api, { title: "Recurring thing", due_at: SAT_0900, rrule: "FREQ=DAILY" })
        const before = await snapshot(service)

        const created = await user.api.post("/api/tasks", { title: "Bad rule", due_at: SAT_0900, rrule: rule })
        expect(created.status).toBe(400)
        expect(created.body).toEqual(refusal(reason, { rrule: reason }))
        const undated = await user.api.post("/api/tasks", { title: "Bad rule", rrule: rule })
        expect(undated.status).toBe(400)
        expect(undated.body.details).toEqual({ rrule: reason })

        const patched = await user.api.patch(`/api/tasks/${task.id}`, { rrule: rule })
        expect(patched.status).toBe(400)
        expect(patched.body).toEqual(refusal(reason, { rrule: reason }))
        expect(await snapshot(service)).toEqual(before)
      })
    }

    it("a recurring task created without due_at gets its first occurrence in the user's zone", async () => {
      const user = await newYorker()
      // 09:00 on 6 March local has passed (it is 22:30), so the first is 09:00 EST on 7 March.
      const task = await createTask(user.api, { title: "Morning pages", rrule: "FREQ=DAILY;BYHOUR=9;BYMINUTE=0" })
      expect(task).toMatchObject({
        due_at: SAT_0900,
        original_due_at: SAT_0900,
        anchor_time: "09:00",
        anchor_dow: 6,
        anchor_dom: 7,
        is_recurring: true
      })
      // And it recurs from there, still at 09:00 local after the change to EDT.
      const done = (await user.api.post(`/api/tasks/${task.id}/done`)).body.data
      expect(done).toMatchObject({ due_at: SUN_0900, next_due_at: SUN_0900 })

      // Weekly on Mondays without a time: the first Monday at local midnight.
      const weekly = await createTask(user.api, { title: "Plan the week", rrule: "FREQ=WEEKLY;BYDAY=MO" })
      expect(weekly).toMatchObject({ due_at: "2026-03-09T04:00:00.000Z", anchor_time: "00:00", anchor_dow: 1 })
    })

    it("adding a rule to an undated task by PATCH schedules its first occurrence", async () => {
      const user = await newYorker()
      const task = await createTask(user.api, { title: "Journal" })
      const res = await user.api.patch(`/api/tasks/${task.id}`, { rrule: "FREQ=DAILY;BYHOUR=9;BYMINUTE=0" })
      expect(res.status).toBe(200)
      expect(res.body.data).toMatchObject({
        rrule: "FREQ=DAILY;BYHOUR=9;BYMINUTE=0",
        due_at: SAT_0900,
        original_due_at: SAT_0900,
        anchor_time: "09:00",
        is_recurring: true
      })
      expect(res.body.data.fields_changed).toEqual(expect.arrayContaining(["rrule", "due_at"]))
    })

    it("a bare period rule without a due date is for quotas only (400)", async () => {
      const user = await newYorker()
      const res = await user.api.post("/api/tasks", { title: "Daily-ish", rrule: "FREQ=DAILY" })
      expect(res.status).toBe(400)
      expect(Object.keys(res.body.details)).toEqual(["rrule"])
    })
  })

  it("the service clock, not the host's, stamps every transition", async () => {
    const user = await newYorker()
    const task = await createTask(user.api, { title: "Clock check" })
    const done = (await user.api.post(`/api/tasks/${task.id}/done`)).body.data
    const rows = await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ completed_at: string }>`SELECT steady_iso(completed_at) AS completed_at FROM completions WHERE task_id = ${task.id}`))
    expect(rows.map((r) => r.completed_at)).toEqual([done.done_at])
    expectServiceTime(done.done_at, NOW)
  })
})
