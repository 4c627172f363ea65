import { Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { rollForwardMissedReminders } from "../src/scheduler/ReminderRollForward.js"
import { dailyStats, outboxEvents, query, snapshot, undoEntries } from "./support/rows.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, expectServiceTime } from "./support/tasks.js"

/**
 * Spec §3, quota reminders rule 6: completing a reminder task marks it considered; a missed
 * reminder rolls forward on its own. The clock is pinned at 15:00 UTC on Tuesday 10 March
 * 2026: 11:00 EDT in New York (which sprang forward on 8 March), 16:00 CET in Berlin.
 */
const NOW = new Date("2026-03-10T15:00:00Z")

describe("reminders: roll-forward of missed ones, considered on completion", () => {
  let service: TestService
  let counter = 0
  const newYorker = (): Promise<TestUser> => service.user(`rem${++counter}`, "America/New_York")
  const read = async (user: TestUser, id: number) => (await user.api.get(`/api/tasks/${id}`)).body.data
  const previousDueAt = async (id: number) =>
    (await query<{ previous_due_at: string | null }>(service, (sql) =>
      sql`SELECT steady_iso(previous_due_at) AS previous_due_at FROM tasks WHERE id = ${id}`))[0]!.previous_due_at
  const rollForward = () => service.run(rollForwardMissedReminders)

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
  })
  afterAll(async () => {
    await service.stop()
  })

  it("a missed recurring reminder moves to its next occurrence after now, same local time, with no completion and no undo entry", async () => {
    const user = await newYorker()
    const berlin = await service.user(`rem-berlin${++counter}`, "Europe/Berlin")
    // 09:00 EST on Saturday 7 March: three occurrences (7, 8, 9 and 10 March at 09:00) have passed.
    const missed = await createTask(user.api, { title: "Take vitamins", is_reminder: true, due_at: "2026-03-07T14:00:00Z", rrule: "FREQ=DAILY" })
    // Weekly on Monday 08:00 in Berlin, from 2 March: 2 and 9 March have passed.
    const weekly = await createTask(berlin.api, { title: "Bins out", is_reminder: true, due_at: "2026-03-02T07:00:00Z", rrule: "FREQ=WEEKLY" })
    // Left alone: a one-off reminder, an ordinary recurring task, a reminder still ahead, a trashed one.
    const oneOff = await createTask(user.api, { title: "Call plumber", is_reminder: true, due_at: "2026-03-09T14:00:00Z" })
    const task = await createTask(user.api, { title: "Daily review", due_at: "2026-03-07T14:00:00Z", rrule: "FREQ=DAILY" })
    const ahead = await createTask(user.api, { title: "Evening meds", is_reminder: true, due_at: "2026-03-11T00:00:00Z", rrule: "FREQ=DAILY" })
    const trashed = await createTask(user.api, { title: "Old reminder", is_reminder: true, due_at: "2026-03-07T14:00:00Z", rrule: "FREQ=DAILY" })
    await user.api.delete(`/api/tasks/${trashed.id}`)
    const untouched = await Promise.all([oneOff, task, ahead, trashed].map((t) => read(user, t.id)))
    const undoBefore = await undoEntries(service, user.id)
    const eventsBefore = await outboxEvents(service, user.id)

    const moved = await rollForward()
    expect(moved).toBe(2)

    const rolled = await read(user, missed.id)
    expect(rolled).toEqual({
      ...missed,
      // 09:00 EDT on Wednesday 11 March: the first 09:00 after 11:00 on the 10th.
      due_at: "2026-03-11T13:00:00.000Z",
      original_due_at: "2026-03-11T13:00:00.000Z",
      updated_at: rolled.updated_at
    })
    expectServiceTime(rolled.updated_at, NOW)
    expect(rolled).toMatchObject({
      anchor_time: "09:00",
      is_snoozed: false,
      done: false,
      completion_count: 0,
      skip_count: 0,
      last_completed_at: null,
      last_considered_at: null
    })
    expect(await previousDueAt(missed.id)).toBe("2026-03-07T14:00:00.000Z")
    // Monday 16 March, 08:00 CET.
    expect((await read(berlin, weekly.id)).due_at).toBe("2026-03-16T07:00:00.000Z")

    expect(await Promise.all([oneOff, task, ahead, trashed].map((t) => read(user, t.id)))).toEqual(untouched)

    // Not a completion, not an undoable action, no event, no statistic.
    expect((await user.api.get("/api/completions")).body.data).toEqual({ completions: [], count: 0 })
    expect(await undoEntries(service, user.id)).toEqual(undoBefore)
    expect(await outboxEvents(service, user.id)).toEqual(eventsBefore)
    expect(await dailyStats(service, user.id)).toEqual([{ date: "2026-03-10", completions: 0, tasks_created: 5, snoozes: 0 }])
    expect((await undoEntries(service, berlin.id)).map((u) => u.action)).toEqual(["create"])

    // A second sweep finds nothing left to move.
    const before = await snapshot(service)
    expect(await rollForward()).toBe(0)
    expect(await snapshot(service)).toEqual(before)
  })

  it("a reminder whose series has ended stays where it is", async () => {
    const user = await newYorker()
    const ended = await createTask(user.api, {
      title: "Course reminder",
      is_reminder: true,
      due_at: "2026-03-07T14:00:00Z",
      rrule: "FREQ=DAILY;UNTIL=20260309T000000Z"
    })
    const before = await snapshot(service)
    await rollForward()
    expect(await read(user, ended.id)).toEqual(ended)
    expect(await snapshot(service)).toEqual(before)
  })

  it("completing a recurring reminder marks it considered and records a reminder completion", async () => {
    const user = await newYorker()
    // 20:00 EDT today.
    const reminder = await createTask(user.api, { title: "Lock the shed", is_reminder: true, due_at: "2026-03-11T00:00:00Z", rrule: "FREQ=DAILY" })
    expect(reminder.last_considered_at).toBeNull()
    const res = await user.api.post(`/api/tasks/${reminder.id}/done`)
    expect(res.status).toBe(200)
    const answer = res.body.data
    expectServiceTime(answer.last_considered_at, NOW)
    expect(answer).toMatchObject({
      is_reminder: true,
      done: false,
      due_at: "2026-03-12T00:00:00.000Z",
      was_recurring: true,
      next_due_at: "2026-03-12T00:00:00.000Z",
      completion_count: 1,
      last_completed_at: answer.last_considered_at
    })
    const completions = (await user.api.get(`/api/completions?task_id=${reminder.id}`)).body.data.completions
    expect(completions).toEqual([expect.objectContaining({
      is_reminder: true,
      completed_at: answer.last_considered_at,
      due_at_was: "2026-03-11T00:00:00.000Z",
      due_at_next: "2026-03-12T00:00:00.000Z"
    })])
  })

  it("completing a one-off reminder marks it considered and done", async () => {
    const user = await newYorker()
    const reminder = await createTask(user.api, { title: "Collect parcel", is_reminder: true, due_at: "2026-03-10T20:00:00Z" })
    const answer = (await user.api.post(`/api/tasks/${reminder.id}/done`)).body.data
    expectServiceTime(answer.last_considered_at, NOW)
    expect(answer).toMatchObject({ done: true, done_at: answer.last_considered_at, was_recurring: false, next_due_at: null })
  })

  it("completing an ordinary task does not touch last_considered_at", async () => {
    const user = await newYorker()
    const task = await createTask(user.api, { title: "Ordinary", due_at: "2026-03-10T20:00:00Z" })
    const answer = (await user.api.post(`/api/tasks/${task.id}/done`)).body.data
    expect(answer).toMatchObject({ done: true, last_considered_at: null })
  })

  it("undone on a reminder takes the considered mark back with the completion", async () => {
    const user = await newYorker()
    const reminder = await createTask(user.api, { title: "Water seedlings", is_reminder: true, due_at: "2026-03-11T00:00:00Z", rrule: "FREQ=DAILY" })
    const done = (await user.api.post(`/api/tasks/${reminder.id}/done`)).body.data
    expect(done.last_considered_at).not.toBeNull()

    const res = await user.api.post(`/api/tasks/${reminder.id}/undone`)
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({
      due_at: "2026-03-11T00:00:00.000Z",
      completion_count: 0,
      last_completed_at: null,
      last_considered_at: null
    })
    // Back among today's reminders, not yet considered.
    const today = (await user.api.get("/api/reminders")).body.data
    const group = today.groups.find((g: any) => g.reminders.some((r: any) => r.id === reminder.id))
    expect(group).toBeDefined()
    expect(group.considered).toBe(0)
  })
})
