import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { rollForwardMissedReminders } from "../src/quotas/ReminderRollForward.js"
import { MISSED_REMINDERS_PAGE, missedReminders } from "../src/quotas/TaskRolloverSql.js"
import { type FrozenClock, freezeServiceClock } from "./support/frozen-clock.js"
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

  it("creating a reminder whose series has already ended is refused with 400 on rrule, and nothing is written", async () => {
    const user = await newYorker()
    const before = await snapshot(service)
    // 09:00 EST on Saturday 7 March: each series' last occurrence is before now (11:00 EDT on the 10th).
    for (const rrule of ["FREQ=DAILY;COUNT=1", "FREQ=DAILY;COUNT=3", "FREQ=DAILY;UNTIL=20260309T000000Z", "FREQ=WEEKLY;UNTIL=20260310T000000Z"]) {
      const res = await user.api.post("/api/tasks", { title: "Over already", is_reminder: true, due_at: "2026-03-07T14:00:00Z", rrule })
      expect(res.status, rrule).toBe(400)
      expect(res.body).toEqual({
        error: "rrule has no occurrence left: the reminder's series has already ended",
        code: "VALIDATION_ERROR",
        details: { rrule: "rrule has no occurrence left: the reminder's series has already ended" }
      })
    }
    expect(await snapshot(service)).toEqual(before)

    // An occurrence left after now: a missed reminder the sweep rolls forward (to the 11th, the 5th occurrence).
    const missed = await createTask(user.api, { title: "Five days", is_reminder: true, due_at: "2026-03-07T14:00:00Z", rrule: "FREQ=DAILY;COUNT=5" })
    // Its only occurrence still ahead.
    await createTask(user.api, { title: "Once", is_reminder: true, due_at: "2026-03-10T20:00:00Z", rrule: "FREQ=DAILY;COUNT=1" })
    // An ordinary recurring task may still start overdue: it waits to be completed.
    const task = await createTask(user.api, { title: "Overdue once", due_at: "2026-03-07T14:00:00Z", rrule: "FREQ=DAILY;COUNT=1" })
    expect(task).toMatchObject({ due_at: "2026-03-07T14:00:00.000Z", is_recurring: true })
    await rollForward()
    expect((await read(user, missed.id)).due_at).toBe("2026-03-11T13:00:00.000Z")
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

/**
 * A reminder the sweep cannot roll (its series ended, or its stored rule is refused) is
 * closed, so however many of them one user has, the sweep goes on to everyone else's. The
 * service clock is frozen and stepped: these reminders are created while their series still
 * run (creating an ended one is a 400) and found ended once the clock has moved past them.
 */
describe("reminders: roll-forward past reminders it cannot roll, fairly between users", () => {
  let service: TestService
  let clock: FrozenClock | undefined
  let counter = 0
  const newUser = (): Promise<TestUser> => service.user(`stuck${++counter}`)
  const rollForward = () => service.run(rollForwardMissedReminders)
  const dueDates = async (ids: ReadonlyArray<number>) =>
    (await query<{ id: number; due_at: string }>(service, (sql) =>
      sql`SELECT id, steady_iso(due_at) AS due_at FROM tasks WHERE id IN ${sql.in(ids)} ORDER BY id`)).map((r) => r.due_at)
  const stopped = async (ids: ReadonlyArray<number>) =>
    (await query<{ n: number }>(service, (sql) =>
      sql`SELECT count(*)::int AS n FROM tasks WHERE id IN ${sql.in(ids)} AND roll_stopped_at IS NOT NULL`))[0]!.n
  /** Every candidate the sweep would read at `at`, page by page. */
  const candidates = async (at: Date) => {
    const ids: Array<number> = []
    for (let after = 0; ;) {
      const page = await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) => missedReminders(sql, at, after)))
      ids.push(...page.map((r) => r.id))
      if (page.length < MISSED_REMINDERS_PAGE) return ids
      after = page.at(-1)!.id
    }
  }
  /** Creates `count` tasks, a few requests at a time; `body(i)` for the i-th. */
  const createMany = async (api: TestUser["api"], count: number, body: (i: number) => Record<string, unknown>) => {
    const out: Array<Record<string, any>> = []
    for (let i = 0; i < count; i += 8) {
      const batch = Array.from({ length: Math.min(8, count - i) }, (_, j) => createTask(api, body(i + j)))
      out.push(...await Promise.all(batch))
    }
    return out
  }

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(new Date("2026-10-31T12:00:00Z")) })
  })
  afterEach(() => {
    clock?.restore()
    clock = undefined
  })
  afterAll(async () => {
    await service.stop()
  })

  it("one user's backlog of missed reminders gets at most 100 rolls a sweep; another user's rolls in the same sweep", async () => {
    clock = freezeServiceClock(service)
    await clock.set(new Date("2026-12-01T06:00:00Z"))
    const busy = await newUser()
    const other = await newUser()
    const many = await createMany(busy.api, 150, () => ({ title: "Check", is_reminder: true, due_at: "2026-12-01T09:00:00Z", rrule: "FREQ=DAILY" }))
    const mine = await createTask(other.api, { title: "Stretch", is_reminder: true, due_at: "2026-12-01T09:00:00Z", rrule: "FREQ=DAILY" })
    const manyIds = many.map((t) => t.id as number)

    await clock.set(new Date("2026-12-01T12:00:00Z"))
    // First in this database: nobody else's reminder is missed. (The background sweep may take
    // a turn as well, which only lowers what this one moves.)
    const first = await rollForward()
    expect(first).toBeLessThanOrEqual(101)
    expect((await dueDates([mine.id]))).toEqual(["2026-12-02T09:00:00.000Z"])
    const rolledAfterFirst = (await dueDates(manyIds)).filter((d) => d === "2026-12-02T09:00:00.000Z").length
    expect(rolledAfterFirst).toBeGreaterThanOrEqual(100)
    await rollForward()
    expect(new Set(await dueDates(manyIds))).toEqual(new Set(["2026-12-02T09:00:00.000Z"]))
  }, 120_000)

  it("1,000 ended or refused reminders of one user do not hold back another user's missed reminder, at this sweep or the next", async () => {
    clock = freezeServiceClock(service)
    await clock.set(new Date("2026-10-31T12:00:00Z"))
    const alice = await newUser()
    const bob = await newUser()
    // Each has a single occurrence or a few left, all by 10 November.
    const stuck = await createMany(alice.api, 1000, (i) => ({
      title: "stuck",
      is_reminder: true,
      due_at: "2026-11-01T09:00:00Z",
      rrule: i % 2 === 0 ? "FREQ=DAILY;COUNT=1" : "FREQ=DAILY;UNTIL=20261110T000000Z"
    }))
    // Rules stored before today's validation, which the expander refuses.
    const refused = stuck.slice(0, 20).map((t) => t.id as number)
    await query(service, (sql) =>
      sql`UPDATE tasks SET rrule = 'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30' WHERE id IN ${sql.in(refused)} RETURNING id`)
    // Created last: the highest id, behind all of them.
    const daily = await createTask(bob.api, { title: "Vitamins", is_reminder: true, due_at: "2026-11-01T09:00:00Z", rrule: "FREQ=DAILY" })
    const stuckIds = stuck.map((t) => t.id as number)
    // A few of them as the wire shows them, from both ends.
    const sample = async () =>
      Promise.all(stuck.slice(0, 3).concat(stuck.slice(-3)).map(async (t) => (await alice.api.get(`/api/tasks/${t.id}`)).body.data))
    const stuckBefore = await sample()

    await clock.set(new Date("2026-11-12T12:00:00Z"))
    await rollForward()
    expect((await bob.api.get(`/api/tasks/${daily.id}`)).body.data.due_at).toBe("2026-11-13T09:00:00.000Z")
    // Closed, not moved: each keeps its rule and its last occurrence, as the user sees it.
    expect(await stopped(stuckIds)).toBe(1000)
    expect(new Set(await dueDates(stuckIds))).toEqual(new Set(["2026-11-01T09:00:00.000Z"]))
    expect(await sample()).toEqual(stuckBefore)

    // The next sweep reads none of them and rolls Bob's again.
    await clock.set(new Date("2026-11-13T12:00:00Z"))
    expect((await candidates(new Date("2026-11-13T12:00:00Z"))).filter((id) => stuckIds.includes(id))).toEqual([])
    await rollForward()
    expect((await bob.api.get(`/api/tasks/${daily.id}`)).body.data.due_at).toBe("2026-11-14T09:00:00.000Z")
  }, 180_000)

  it("an ended reminder is closed once and not read again; a new rule hands it back to the sweep", async () => {
    clock = freezeServiceClock(service)
    await clock.set(new Date("2026-11-20T12:00:00Z"))
    const user = await newUser()
    const ending = await createTask(user.api, {
      title: "Course",
      is_reminder: true,
      due_at: "2026-11-21T09:00:00Z",
      rrule: "FREQ=DAILY;UNTIL=20261123T000000Z"
    })
    await clock.set(new Date("2026-11-22T08:00:00Z"))
    await rollForward()
    const last = (await user.api.get(`/api/tasks/${ending.id}`)).body.data
    expect(last.due_at).toBe("2026-11-22T09:00:00.000Z")
    // 23 November: the 22nd was its last occurrence.
    await clock.set(new Date("2026-11-23T12:00:00Z"))
    await rollForward()
    expect(await stopped([ending.id])).toBe(1)
    expect((await user.api.get(`/api/tasks/${ending.id}`)).body.data).toEqual(last)
    // Still among the day's reminders, like a missed one-off, until completed.
    const today = (await user.api.get("/api/reminders")).body.data
    expect(today.groups.flatMap((g: any) => g.reminders.map((r: any) => r.id))).toContain(ending.id)

    // Not a candidate of later sweeps, and those sweeps write nothing to it.
    await clock.set(new Date("2026-11-24T12:00:00Z"))
    expect(await candidates(new Date("2026-11-24T12:00:00Z"))).not.toContain(ending.id)
    const row = () => query(service, (sql) => sql`SELECT to_jsonb(t) AS row FROM tasks t WHERE id = ${ending.id}`)
    const before = { row: await row(), undo: await undoEntries(service, user.id), events: await outboxEvents(service, user.id) }
    await rollForward()
    expect({ row: await row(), undo: await undoEntries(service, user.id), events: await outboxEvents(service, user.id) }).toEqual(before)

    // The user extends the series: the sweep takes it up again and rolls it.
    const patched = await user.api.patch(`/api/tasks/${ending.id}`, { rrule: "FREQ=DAILY;UNTIL=20261201T000000Z" })
    expect(patched.status).toBe(200)
    expect(await stopped([ending.id])).toBe(0)
    await rollForward()
    expect((await user.api.get(`/api/tasks/${ending.id}`)).body.data.due_at).toBe("2026-11-25T09:00:00.000Z")
  })
})
