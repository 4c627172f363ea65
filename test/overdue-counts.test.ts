import { Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, inboxOf, listIds } from "./support/tasks.js"

/**
 * Spec §4.2: `GET /api/tasks?overdue=true` and the overdue number of `GET /api/tasks/counts`
 * are one definition: the user's own open tasks whose due date has passed; reminders and
 * quotas are never overdue. The clock is pinned at 03:30 UTC on Saturday 7 March 2026,
 * 22:30 on Friday 6 March in New York (EST, UTC-5).
 */
const NOW = new Date("2026-03-07T03:30:00Z")

describe("overdue: the list filter and the counts agree", () => {
  let service: TestService
  let user: TestUser
  let bob: TestUser
  const t: Record<string, Record<string, any>> = {}

  const counts = async (who: TestUser) => {
    const res = await who.api.get("/api/tasks/counts")
    expect(res.status).toBe(200)
    expect(Object.keys(res.body.data).sort()).toEqual(["overdue", "today", "total"])
    return res.body.data as { total: number; overdue: number; today: number }
  }

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
    user = await service.user("overdue-ny", "America/New_York")
    bob = await service.user("overdue-bob", "UTC")
    const shared = await bob.api.post("/api/projects", { name: "Household", shared: true })
    expect(shared.status).toBe(201)
    const sharedId = shared.body.data.id

    const make = async (key: string, body: Record<string, unknown>, who: TestUser = user) => {
      t[key] = await createTask(who.api, { title: key, ...body })
    }
    // Overdue.
    await make("pastOneOff", { due_at: "2026-03-06T12:00:00Z" }) // 07:00 today local
    await make("pastUrgent", { due_at: "2026-03-05T12:00:00Z", priority: 4 })
    await make("pastRecurring", { due_at: "2026-03-05T14:00:00Z", rrule: "FREQ=DAILY" })
    await make("pastInShared", { due_at: "2026-03-06T13:00:00Z", project_id: sharedId })
    await make("toSnooze", { due_at: "2026-03-04T12:00:00Z" })
    // Never overdue, or not overdue any more.
    await make("laterToday", { due_at: "2026-03-07T04:00:00Z" }) // 23:00 today local
    await make("tomorrow", { due_at: "2026-03-08T15:00:00Z" })
    await make("undated", {})
    await make("pastReminder", { due_at: "2026-03-06T15:00:00Z", is_reminder: true })
    await make("pastRecurringReminder", { due_at: "2026-03-05T15:00:00Z", is_reminder: true, rrule: "FREQ=DAILY" })
    await make("quota", { progress_target: 3, rrule: "FREQ=WEEKLY" })
    await make("trackedQuota", { is_tracked: true, rrule: "FREQ=DAILY" })
    await make("pastDone", { due_at: "2026-03-05T12:00:00Z" })
    await make("pastTrashed", { due_at: "2026-03-05T12:00:00Z" })
    await make("pastSkipped", { due_at: "2026-03-05T12:00:00Z" })
    expect((await user.api.post(`/api/tasks/${t.pastDone!.id}/done`)).status).toBe(200)
    expect((await user.api.delete(`/api/tasks/${t.pastTrashed!.id}`)).status).toBe(200)
    expect((await user.api.post(`/api/tasks/${t.pastSkipped!.id}/skip-occurrence`)).status).toBe(200)
    // Someone else's overdue task in a project shared with everyone.
    await make("bobsPast", { due_at: "2026-03-05T12:00:00Z", project_id: sharedId }, bob)
  })
  afterAll(async () => {
    await service.stop()
  })

  const ids = (...keys: Array<string>) => keys.map((k) => t[k]!.id)

  it("overdue=true and the overdue count name the same tasks; reminders, quotas and others' tasks are never overdue", async () => {
    const overdue = await listIds(user.api, "overdue=true")
    // By due date.
    expect(overdue).toEqual(ids("toSnooze", "pastUrgent", "pastRecurring", "pastOneOff", "pastInShared"))
    const c = await counts(user)
    expect(c.overdue).toBe(overdue.length)
    expect(c).toEqual({
      // Open, not trashed, not archived: everything but pastDone, pastTrashed, pastSkipped.
      total: 12,
      overdue: 5,
      // 6 March local: pastOneOff, pastInShared, laterToday, pastReminder.
      today: 4
    })

    // Bob's own overdue task counts for him, in his list and his number alike.
    expect(await listIds(bob.api, "overdue=true")).toEqual(ids("bobsPast"))
    expect((await counts(bob)).overdue).toBe(1)
  })

  it("overdue=false is the rest of the open list; kind narrows within overdue before pagination", async () => {
    const all = await listIds(user.api)
    const overdue = await listIds(user.api, "overdue=true")
    const notOverdue = await listIds(user.api, "overdue=false")
    // Together they are the whole open list, which includes Bob's task in the shared project:
    // visible, but only its owner's overdue.
    expect(all).toContain(t.bobsPast!.id)
    expect(notOverdue).toContain(t.bobsPast!.id)
    expect([...overdue, ...notOverdue].sort((a, b) => a - b)).toEqual([...all].sort((a, b) => a - b))
    expect(notOverdue).toEqual(expect.arrayContaining(ids("pastReminder", "pastRecurringReminder", "quota", "trackedQuota")))

    expect(await listIds(user.api, "overdue=true&kind=reminder")).toEqual([])
    expect(await listIds(user.api, "overdue=true&kind=quota")).toEqual([])
    expect(await listIds(user.api, "overdue=true&kind=task")).toEqual(overdue)
    expect(await listIds(user.api, "overdue=true&recurring=true")).toEqual(ids("pastRecurring"))
    expect(await listIds(user.api, "overdue=true&limit=2")).toEqual(overdue.slice(0, 2))
    expect(await listIds(user.api, "overdue=true&limit=2&offset=2")).toEqual(overdue.slice(2, 4))
  })

  it("the Inbox's overdue_count agrees with the overdue tasks filed there", async () => {
    const inbox = await inboxOf(user.api)
    const inInbox = await listIds(user.api, `overdue=true&project_id=${inbox}`)
    expect(inInbox).toEqual(ids("toSnooze", "pastUrgent", "pastRecurring", "pastOneOff"))
    const project = (await user.api.get(`/api/projects/${inbox}`)).body.data
    expect(project.overdue_count).toBe(inInbox.length)
  })

  it("snoozing an overdue task into the future takes it out of both; completing a recurring one moves it only when due is then in the future", async () => {
    const snoozed = await user.api.post(`/api/tasks/${t.toSnooze!.id}/snooze`, { until: "2026-03-08T12:00:00Z" })
    expect(snoozed.status).toBe(200)
    let overdue = await listIds(user.api, "overdue=true")
    expect(overdue).toEqual(ids("pastUrgent", "pastRecurring", "pastOneOff", "pastInShared"))
    expect((await counts(user)).overdue).toBe(4)

    // Snoozed to a time that has also passed: still overdue.
    await user.api.post(`/api/tasks/${t.pastOneOff!.id}/snooze`, { until: "2026-03-07T03:00:00Z" })
    overdue = await listIds(user.api, "overdue=true")
    expect(overdue).toEqual(ids("pastUrgent", "pastRecurring", "pastInShared", "pastOneOff"))
    expect((await counts(user)).overdue).toBe(4)

    // The recurring task's next occurrence (09:00 EST on 6 March) has passed too.
    const done = (await user.api.post(`/api/tasks/${t.pastRecurring!.id}/done`)).body.data
    expect(done.due_at).toBe("2026-03-06T14:00:00.000Z")
    expect(await listIds(user.api, "overdue=true")).toContain(t.pastRecurring!.id)
    // Skipping once more brings it to 09:00 on 7 March, ahead of now.
    const skipped = (await user.api.post(`/api/tasks/${t.pastRecurring!.id}/skip-occurrence`)).body.data
    expect(skipped.due_at).toBe("2026-03-07T14:00:00.000Z")

    overdue = await listIds(user.api, "overdue=true")
    expect(overdue).toEqual(ids("pastUrgent", "pastInShared", "pastOneOff"))
    expect(await counts(user)).toMatchObject({ overdue: 3, total: 12 })
  })
})
