import { Option } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type FrozenClock, freezeServiceClock } from "./support/frozen-clock.js"
import { periodRows, storedPeriod, sweep } from "./support/quotas.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask } from "./support/tasks.js"

/*
 * A task's calendar (zone and week_start) is its owner's, whoever acts on
 * it. Alice owns the tasks and lives in Auckland (NZDT, UTC+13, weeks from Monday); Bob acts
 * on them from London (GMT, UTC+0, weeks from Sunday): 13 hours apart.
 *
 * At 12:00 UTC on Thursday 15 January 2026 it is 01:00 on Friday the 16th in Auckland and
 * noon on the 15th in London, so every answer below differs between the two calendars.
 */
const NOW = new Date("2026-01-15T12:00:00.000Z")
// 09:00 in Auckland on the 16th; Alice's next 09:00 is on the 17th, Bob's would be 09:00 on the 16th (UTC).
const DUE = "2026-01-15T20:00:00.000Z"
const OWNER_NEXT = "2026-01-16T20:00:00.000Z"
// Alice's Friday 16 January: from 00:00 NZDT to the next midnight.
const OWNER_DAY = { start: "2026-01-15T11:00:00.000Z", end: "2026-01-16T11:00:00.000Z" }

describe("whose calendar: a shared task follows its owner's, whoever acts", () => {
  let service: TestService
  let alice: TestUser
  let bob: TestUser
  let household: number
  let clock: FrozenClock

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
    alice = await service.user("alice", "Pacific/Auckland")
    bob = await service.user("bob", "Europe/London")
    expect((await alice.api.patch("/api/user/preferences", { week_start: "monday" })).status).toBe(200)
    const project = await alice.api.post("/api/projects", { name: "Household", shared: true })
    expect(project.status, project.text).toBe(201)
    household = project.body.data.id
  })
  afterEach(() => clock?.restore())
  afterAll(async () => {
    await service?.stop()
  })

  const freezeAtNow = async () => {
    clock = freezeServiceClock(service)
    await clock.set(NOW)
  }

  const daily = async (title: string) => {
    const task = await createTask(alice.api, { title, project_id: household, rrule: "FREQ=DAILY", due_at: DUE, priority: 1 })
    expect(task).toMatchObject({ user_id: alice.id, anchor_time: "09:00", due_at: DUE })
    return task
  }

  it("done by the other user: the next occurrence is the owner's next 09:00", async () => {
    await freezeAtNow()
    const task = await daily("Water the plants")
    const res = await bob.api.post(`/api/tasks/${task.id}/done`)
    expect(res.status, res.text).toBe(200)
    expect(res.body.data).toMatchObject({ was_recurring: true, next_due_at: OWNER_NEXT, due_at: OWNER_NEXT, done: false })
  })

  it("skip and bulk done by the other user: the owner's next 09:00", async () => {
    await freezeAtNow()
    const skipped = await daily("Take out the bins")
    const skip = await bob.api.post(`/api/tasks/${skipped.id}/skip-occurrence`)
    expect(skip.status, skip.text).toBe(200)
    expect(skip.body.data).toMatchObject({ due_at: OWNER_NEXT })

    const bulk = await daily("Feed the fish")
    const res = await bob.api.post("/api/tasks/bulk/done", { ids: [bulk.id] })
    expect(res.status, res.text).toBe(200)
    expect((await alice.api.get(`/api/tasks/${bulk.id}`)).body.data).toMatchObject({ due_at: OWNER_NEXT })
  })

  it("a daily quota completed by the other user counts on the owner's day and closes at the owner's midnight", async () => {
    await freezeAtNow()
    const quota = await createTask(alice.api, { title: "Walk the dog", project_id: household, progress_target: 2, rrule: "FREQ=DAILY" })
    expect(await storedPeriod(service, quota.id)).toMatchObject(OWNER_DAY)

    const first = await bob.api.post(`/api/tasks/${quota.id}/progress`, { delta: 1 })
    expect(first.status, first.text).toBe(200)
    // The prompt day is Alice's Friday, not Bob's Thursday.
    expect(first.body.data.quota_day_state).toMatchObject({ date: "2026-01-16", logged: 1 })
    const second = await bob.api.post(`/api/tasks/${quota.id}/progress`, { delta: 1 })
    expect(second.body.data).toMatchObject({ met: true, progress_current: 2 })
    expect(second.body.data.quota_day_state).toMatchObject({ date: "2026-01-16", logged: 2 })

    // Alice's midnight, not Bob's (which is 11 hours later), ends the period.
    await clock.set(new Date(OWNER_DAY.end))
    await sweep(service)
    expect(await periodRows(service, quota.id)).toEqual([
      expect.objectContaining({ period_start: OWNER_DAY.start, period_end: OWNER_DAY.end, count: 2, target: 2, met: true })
    ])
    expect(await storedPeriod(service, quota.id)).toEqual({
      start: "2026-01-16T11:00:00.000Z",
      end: "2026-01-17T11:00:00.000Z",
      current: 0
    })
  })

  it("a quota's period rule changed by the other user: the owner's Monday week", async () => {
    await freezeAtNow()
    const quota = await createTask(alice.api, { title: "Clean the kitchen", project_id: household, progress_target: 3, rrule: "FREQ=DAILY" })
    const res = await bob.api.patch(`/api/tasks/${quota.id}`, { rrule: "FREQ=WEEKLY" })
    expect(res.status, res.text).toBe(200)
    // Monday 12 to Monday 19 January in Auckland (Bob's would be Sunday 11 to Sunday 18, UTC).
    expect(await storedPeriod(service, quota.id)).toMatchObject({
      start: "2026-01-11T11:00:00.000Z",
      end: "2026-01-18T11:00:00.000Z"
    })
  })
})
