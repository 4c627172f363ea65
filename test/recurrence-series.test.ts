import { Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startService, type TestService, type TestUser } from "./support/service.js"

/** A series is anchored at its first due date, so COUNT and INTERVAL count from there. */
describe("recurring series", () => {
  let service: TestService
  let user: TestUser
  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(new Date("2026-05-01T06:00:00.000Z")) })
    user = await service.user("series", "Europe/Berlin")
  })
  afterAll(async () => {
    await service.stop()
  })

  it("COUNT=3 gives exactly three occurrences, however they are completed or skipped", async () => {
    const created = await user.api.post("/api/tasks", {
      title: "Three doses",
      due_at: "2026-05-01T07:00:00.000Z",
      rrule: "FREQ=DAILY;COUNT=3"
    })
    const id = created.body.data.id
    const first = await user.api.post(`/api/tasks/${id}/done`)
    expect(first.body.data).toMatchObject({ done: false, due_at: "2026-05-02T07:00:00.000Z", next_due_at: "2026-05-02T07:00:00.000Z" })
    const skipped = await user.api.post(`/api/tasks/${id}/skip-occurrence`)
    expect(skipped.body.data).toMatchObject({ done: false, due_at: "2026-05-03T07:00:00.000Z", skip_count: 1 })
    const last = await user.api.post(`/api/tasks/${id}/done`)
    expect(last.status).toBe(200)
    expect(last.body.data).toMatchObject({ done: true, was_recurring: true, next_due_at: null, completion_count: 2 })
  })

  it("INTERVAL=2 keeps its rhythm from the first due date after a snooze", async () => {
    const created = await user.api.post("/api/tasks", {
      title: "Every other day",
      due_at: "2026-05-01T16:00:00.000Z",
      rrule: "FREQ=DAILY;INTERVAL=2"
    })
    const id = created.body.data.id
    await user.api.post(`/api/tasks/${id}/snooze`, { until: "2026-05-02T09:00:00.000Z" })
    const done = await user.api.post(`/api/tasks/${id}/done`)
    // The series runs 1st, 3rd, 5th… at 18:00 Berlin; the snoozed occurrence is followed by the 3rd.
    expect(done.body.data.due_at).toBe("2026-05-03T16:00:00.000Z")
  })
})
