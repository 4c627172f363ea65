import { Option } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { rollForwardMissedReminders } from "../src/quotas/ReminderRollForward.js"
import { type FrozenClock, freezeServiceClock } from "./support/frozen-clock.js"
import { startService, type TestService } from "./support/service.js"
import { createTask } from "./support/tasks.js"

/**
 * DST gaps through HTTP: a DST gap moves only the occurrence it swallows. A
 * recurring task created without a due date keeps the rule's wall time although its first
 * occurrence was moved (Lord Howe, Havana), and the reminder sweep does not drop an
 * occurrence the gap moved past "now" (New York).
 */
describe("recurrence across DST gaps, through the API", () => {
  let service: TestService
  let clock: FrozenClock | undefined
  let counter = 0
  const read = async (api: { get: (p: string) => Promise<any> }, id: number) => (await api.get(`/api/tasks/${id}`)).body.data

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(new Date("2026-03-01T12:00:00Z")) })
  })
  afterEach(() => {
    clock?.restore()
    clock = undefined
  })
  afterAll(async () => {
    await service.stop()
  })

  it("Lord Howe, BYHOUR=2, no due date: the first 02:00 falls in the gap (02:30) and the series stays at 02:00", async () => {
    clock = freezeServiceClock(service)
    await clock.set(new Date("2026-10-03T12:00:00Z")) // 3 Oct 22:30 (+10:30)
    const user = await service.user(`dst${++counter}`, "Australia/Lord_Howe")
    const task = await createTask(user.api, { title: "Water plants", rrule: "FREQ=DAILY;BYHOUR=2" })
    // 4 October 02:00 does not exist (02:00 → 02:30, +11): that occurrence is at 02:30.
    expect(task).toMatchObject({ due_at: "2026-10-03T15:30:00.000Z", anchor_time: "02:00" })
    await clock.set(new Date("2026-10-03T16:00:00Z"))
    const done = await user.api.post(`/api/tasks/${task.id}/done`)
    expect(done.status).toBe(200)
    // Back at 02:00 (+11) on 5 October; before the fix the series drifted to 02:30.
    expect(done.body.data).toMatchObject({ next_due_at: "2026-10-04T15:00:00.000Z", due_at: "2026-10-04T15:00:00.000Z" })
  })

  it("Havana, daily, no due date, created on the day whose midnight does not exist: the next is 00:00, not 01:00", async () => {
    clock = freezeServiceClock(service)
    await clock.set(new Date("2026-03-08T17:00:00Z")) // 8 March 13:00 CDT
    const user = await service.user(`dst${++counter}`, "America/Havana")
    // (A bare FREQ=DAILY without a due date would read as a quota period: BYMINUTE=0 makes it a rule.)
    const task = await createTask(user.api, { title: "Journal", rrule: "FREQ=DAILY;BYMINUTE=0" })
    expect(task).toMatchObject({ due_at: "2026-03-09T04:00:00.000Z", anchor_time: "00:00" })
  })

  it("New York, a daily 02:30 reminder swept at 03:10 EDT on 8 March moves to that day's 03:30, not to 9 March", async () => {
    clock = freezeServiceClock(service)
    await clock.set(new Date("2026-03-06T12:00:00Z"))
    const user = await service.user(`dst${++counter}`, "America/New_York")
    const reminder = await createTask(user.api, { title: "Meds", is_reminder: true, due_at: "2026-03-07T07:30:00Z", rrule: "FREQ=DAILY" })
    expect(reminder.anchor_time).toBe("02:30")
    await clock.set(new Date("2026-03-08T07:10:00Z")) // 03:10 EDT
    expect(await service.run(rollForwardMissedReminders)).toBe(1)
    expect((await read(user.api, reminder.id)).due_at).toBe("2026-03-08T07:30:00.000Z") // 03:30 EDT
    await clock.set(new Date("2026-03-08T08:00:00Z"))
    expect(await service.run(rollForwardMissedReminders)).toBe(1)
    expect((await read(user.api, reminder.id)).due_at).toBe("2026-03-09T06:30:00.000Z") // 02:30 EDT again
  })
})
