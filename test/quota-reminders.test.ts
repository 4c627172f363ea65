import { Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase, type TestDatabase } from "./support/database.js"
import { shiftPeriodBack, storedPeriod, sweep } from "./support/quotas.js"
import { outboxEvents, snapshot, undoEntries } from "./support/rows.js"
import { type Client, startService, type TestService, type TestUser } from "./support/service.js"
import { createTask } from "./support/tasks.js"

/*
 * GET /api/reminders and the quota prompt actions (spec "Quota reminders" 1-5, §4.4
 * quota-prompts/did; RemindersApi.ts for /api/reminders, consider, restore, QuotaPrompt).
 *
 * The clock starts at 23:30 UTC on Wednesday 11 March 2026: in Berlin (CET, UTC+1) it is
 * already 00:30 on Thursday the 12th, so "today" is 2026-03-12 while the UTC date is the 11th.
 */
const NOW = new Date("2026-03-11T23:30:00Z")
const TODAY = "2026-03-12"
const UTC_DATE = "2026-03-11"

type Slot = { id: number; user_id: number; label: string; start_time: string; sort_order: number; created_at: string }
type Prompt = {
  prompt_key: string
  task_id: number
  number: number
  slot_id: number
  title: string
  current: number
  target: number
  period: string
  considered: boolean
  done: boolean
}
type Group = { slot: Slot; reminders: Array<any>; prompts: Array<Prompt>; count: number; considered: number }
type Listing = { date: string; groups: Array<Group>; total: number; prompts_total: number; has_any: boolean }

const slotsOf = async (api: Client) => {
  const res = await api.get("/api/time-slots")
  expect(res.status).toBe(200)
  const slots = res.body.data.time_slots as Array<Slot>
  const byLabel = (label: string) => slots.find((s) => s.label === label)!.id
  return {
    list: slots,
    early: byLabel("Early morning"),
    morning: byLabel("Morning"),
    midday: byLabel("Midday"),
    afternoon: byLabel("Afternoon"),
    evening: byLabel("Evening")
  }
}

const listing = async (api: Client): Promise<Listing> => {
  const res = await api.get("/api/reminders")
  expect(res.status, res.text).toBe(200)
  const data = res.body.data as Listing
  // The counts always agree with the rows.
  for (const g of data.groups) {
    expect(g.count).toBe(g.reminders.length + g.prompts.length)
    expect(Object.keys(g).sort()).toEqual(["considered", "count", "prompts", "reminders", "slot"])
  }
  expect(data.total).toBe(data.groups.reduce((n, g) => n + g.reminders.length, 0))
  expect(data.prompts_total).toBe(data.groups.reduce((n, g) => n + g.prompts.length, 0))
  expect(data.has_any).toBe(data.total + data.prompts_total > 0)
  return data
}

/** A quota's prompt rows as [slot id, number, done, considered], in slot order. */
const rowsOf = (data: Listing, taskId: number) =>
  data.groups.flatMap((g) =>
    g.prompts.filter((p) => p.task_id === taskId).map((p) => {
      expect(p.slot_id).toBe(g.slot.id)
      return [g.slot.id, p.number, p.done, p.considered] as const
    })
  )

const promptOf = (data: Listing, taskId: number, number: number) =>
  data.groups.flatMap((g) => g.prompts).find((p) => p.task_id === taskId && p.number === number)

const key = (taskId: number, number: number, date = TODAY) => `q:${taskId}:${number}:${date}`

describe("quota reminders", () => {
  let service: TestService
  let counter = 0
  /** A fresh Berlin user per test, so each starts from an empty day. */
  const newUser = (zone = "Europe/Berlin") => service.user(`user${++counter}`, zone)

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
  })
  afterAll(async () => {
    await service.stop()
  })

  const quota = (user: TestUser, title: string, target: number, rrule: string, extra: Record<string, unknown> = {}) =>
    createTask(user.api, { title, progress_target: target, rrule, ...extra })

  it("lists every time slot as a group, empty ones too, for the user's local day", async () => {
    const user = await newUser()
    const slots = await slotsOf(user.api)
    expect(slots.list.map((s) => s.start_time)).toEqual(["07:00", "09:00", "12:00", "16:00", "20:30"])
    const res = await user.api.get("/api/reminders")
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      data: {
        date: TODAY,
        groups: slots.list.map((slot) => ({ slot, reminders: [], prompts: [], count: 0, considered: 0 })),
        total: 0,
        prompts_total: 0,
        has_any: false
      }
    })
  })

  describe("prompt placement", () => {
    it("a daily quota with target N has N numbered prompts from the earliest slot; extras stack in the last", async () => {
      const user = await newUser()
      const s = await slotsOf(user.api)
      const three = await quota(user, "Water", 3, "FREQ=DAILY")
      const eight = await quota(user, "Push-ups", 8, "FREQ=DAILY", { quota_prompt_config: { slot_id: s.afternoon } })
      let data = await listing(user.api)
      expect(rowsOf(data, three.id)).toEqual([[s.early, 1, false, false], [s.morning, 2, false, false], [s.midday, 3, false, false]])
      // Configured to start in the afternoon: 1 there, 2-8 in the evening, shown as 8 only.
      expect(rowsOf(data, eight.id)).toEqual([[s.afternoon, 1, false, false], [s.evening, 8, false, false]])
      expect(data.prompts_total).toBe(5)
      expect(data.total).toBe(0)
      expect(data.has_any).toBe(true)
      expect(promptOf(data, three.id, 2)).toEqual({
        prompt_key: key(three.id, 2),
        task_id: three.id,
        number: 2,
        slot_id: s.morning,
        title: "Water",
        current: 0,
        target: 3,
        period: "daily",
        considered: false,
        done: false
      })

      // The user's quota prompt slot moves quotas without their own slot.
      expect((await user.api.patch("/api/user/preferences", { quota_prompt_slot_id: s.midday })).status).toBe(200)
      data = await listing(user.api)
      expect(rowsOf(data, three.id)).toEqual([[s.midday, 1, false, false], [s.afternoon, 2, false, false], [s.evening, 3, false, false]])
      expect(rowsOf(data, eight.id)).toEqual([[s.afternoon, 1, false, false], [s.evening, 8, false, false]])
      // default_reminder_slot_id stands in for it when it is unset.
      await user.api.patch("/api/user/preferences", { quota_prompt_slot_id: null, default_reminder_slot_id: s.morning })
      data = await listing(user.api)
      expect(rowsOf(data, three.id)).toEqual([[s.morning, 1, false, false], [s.midday, 2, false, false], [s.afternoon, 3, false, false]])
      // Starting in the last slot: everything stacks there.
      await user.api.patch(`/api/tasks/${three.id}`, { quota_prompt_config: { slot_id: s.evening } })
      data = await listing(user.api)
      expect(rowsOf(data, three.id)).toEqual([[s.evening, 3, false, false]])
      expect(promptOf(data, three.id, 3)?.prompt_key).toBe(key(three.id, 3))
    })

    it("a numbered row is done once today's count reaches its number", async () => {
      const user = await newUser()
      const s = await slotsOf(user.api)
      const q = await quota(user, "Water", 3, "FREQ=DAILY")
      await user.api.post(`/api/tasks/${q.id}/progress`, { delta: 2 })
      const data = await listing(user.api)
      expect(rowsOf(data, q.id)).toEqual([[s.early, 1, true, false], [s.morning, 2, true, false], [s.midday, 3, false, false]])
      expect(data.groups.map((g) => g.considered)).toEqual([1, 1, 0, 0, 0])
      for (const n of [1, 2, 3]) expect(promptOf(data, q.id, n)).toMatchObject({ current: 2, target: 3 })
      // Met: every row done, and the rows stay (a daily quota prompts all day).
      await user.api.post(`/api/tasks/${q.id}/progress`)
      expect(rowsOf(await listing(user.api), q.id)).toEqual([[s.early, 1, true, false], [s.morning, 2, true, false], [s.midday, 3, true, false]])
    })

    it("weekly, monthly and every-2-days quotas have one row (number 0) a day; yearly ones none by default", async () => {
      const user = await newUser()
      const s = await slotsOf(user.api)
      const weekly = await quota(user, "Swim", 2, "FREQ=WEEKLY")
      const monthly = await quota(user, "Museum", 3, "FREQ=MONTHLY")
      const everyOther = await quota(user, "Run", 2, "FREQ=DAILY;INTERVAL=2")
      const yearly = await quota(user, "Trips", 4, "FREQ=YEARLY")
      const yearlyOn = await quota(user, "Books", 12, "FREQ=YEARLY", { quota_prompt_config: { enabled: true, slot_id: s.evening } })
      let data = await listing(user.api)
      expect(rowsOf(data, weekly.id)).toEqual([[s.early, 0, false, false]])
      expect(rowsOf(data, monthly.id)).toEqual([[s.early, 0, false, false]])
      expect(rowsOf(data, everyOther.id)).toEqual([[s.early, 0, false, false]])
      expect(rowsOf(data, yearly.id)).toEqual([])
      expect(rowsOf(data, yearlyOn.id)).toEqual([[s.evening, 0, false, false]])
      expect(promptOf(data, weekly.id, 0)).toMatchObject({ prompt_key: key(weekly.id, 0), period: "weekly", current: 0, target: 2 })
      expect(promptOf(data, monthly.id, 0)?.period).toBe("monthly")
      expect(promptOf(data, everyOther.id, 0)?.period).toBe("every 2 days")
      expect(promptOf(data, yearlyOn.id, 0)?.period).toBe("yearly")
      expect(data.prompts_total).toBe(4)

      // Done for today once any progress is logged today.
      await user.api.post(`/api/tasks/${weekly.id}/progress`)
      data = await listing(user.api)
      expect(rowsOf(data, weekly.id)).toEqual([[s.early, 0, true, false]])
      expect(promptOf(data, weekly.id, 0)?.current).toBe(1)
      expect(rowsOf(data, monthly.id)).toEqual([[s.early, 0, false, false]])
      // Met: it stops appearing.
      await user.api.post(`/api/tasks/${weekly.id}/progress`)
      data = await listing(user.api)
      expect(rowsOf(data, weekly.id)).toEqual([])
      expect(data.prompts_total).toBe(3)
    })

    it("just after a boundary, before the sweep, the old count is treated as 0", async () => {
      const user = await newUser()
      const s = await slotsOf(user.api)
      const daily = await quota(user, "Water", 2, "FREQ=DAILY")
      const weekly = await quota(user, "Swim", 1, "FREQ=WEEKLY", { is_tracked: true })
      await user.api.post(`/api/tasks/${daily.id}/progress`, { delta: 2 })
      await user.api.post(`/api/tasks/${weekly.id}/progress`)
      let data = await listing(user.api)
      expect(rowsOf(data, daily.id)).toEqual([[s.early, 1, true, false], [s.morning, 2, true, false]])
      expect(rowsOf(data, weekly.id)).toEqual([]) // met
      // Both periods end in the past (as after an outage); the counts are still held.
      await shiftPeriodBack(service, daily.id, 1)
      await shiftPeriodBack(service, weekly.id, 7)
      expect((await storedPeriod(service, daily.id)).current).toBe(2)
      data = await listing(user.api)
      expect(rowsOf(data, daily.id)).toEqual([[s.early, 1, false, false], [s.morning, 2, false, false]])
      expect(promptOf(data, daily.id, 1)?.current).toBe(0)
      expect(promptOf(data, weekly.id, 0)).toMatchObject({ current: 0, slot_id: s.early })
      // The sweep closes them; the prompts read the same.
      await sweep(service)
      expect((await storedPeriod(service, daily.id)).current).toBe(0)
      const swept = await listing(user.api)
      expect(rowsOf(swept, daily.id)).toEqual(rowsOf(data, daily.id))
      expect(promptOf(swept, weekly.id, 0)).toEqual(promptOf(data, weekly.id, 0))
    })

    it("quota_prompt_config.enabled false and the user's quota_prompts_enabled false hide prompts", async () => {
      const user = await newUser()
      const s = await slotsOf(user.api)
      const off = await quota(user, "Quiet", 2, "FREQ=DAILY", { quota_prompt_config: { enabled: false } })
      const on = await quota(user, "Loud", 1, "FREQ=WEEKLY", { is_tracked: true })
      const reminder = await createTask(user.api, { title: "Call", is_reminder: true, due_at: "2026-03-12T09:00:00Z" })
      let data = await listing(user.api)
      expect(rowsOf(data, off.id)).toEqual([])
      expect(rowsOf(data, on.id)).toEqual([[s.early, 0, false, false]])

      expect((await user.api.patch("/api/user/preferences", { quota_prompts_enabled: false })).status).toBe(200)
      data = await listing(user.api)
      expect(data.prompts_total).toBe(0)
      expect(data.total).toBe(1) // reminders are unaffected
      expect(data.groups.flatMap((g) => g.reminders.map((r) => r.id))).toEqual([reminder.id])

      await user.api.patch("/api/user/preferences", { quota_prompts_enabled: true })
      await user.api.patch(`/api/tasks/${off.id}`, { quota_prompt_config: null })
      data = await listing(user.api)
      expect(rowsOf(data, off.id)).toEqual([[s.early, 1, false, false], [s.morning, 2, false, false]])
      expect(rowsOf(data, on.id)).toEqual([[s.early, 0, false, false]])
    })

    it("quotas of others in a shared project never appear; they do for their owner", async () => {
      const owner = await newUser()
      const other = await newUser()
      const project = await owner.api.post("/api/projects", { name: "Family", shared: true })
      expect(project.status).toBe(201)
      const shared = await quota(owner, "Family walks", 2, "FREQ=WEEKLY", { project_id: project.body.data.id })
      // The other user can see the task itself…
      expect((await other.api.get(`/api/tasks/${shared.id}`)).status).toBe(200)
      // …but it is not among their prompts, and they cannot act on its prompt.
      const theirs = await listing(other.api)
      expect(theirs.prompts_total).toBe(0)
      expect(rowsOf(await listing(owner.api), shared.id)).toHaveLength(1)
      const before = await snapshot(service)
      for (const action of ["did", "consider", "restore"]) {
        const res = await other.api.post(`/api/quota-prompts/${action}`, { keys: [key(shared.id, 0)] })
        expect(res.status, res.text).toBe(400)
      }
      expect(await snapshot(service)).toEqual(before)
    })
  })

  describe("POST /api/quota-prompts/did", () => {
    it("daily prompt k raises today's count to at least k, once per key; one undo entry per request", async () => {
      const user = await newUser()
      const s = await slotsOf(user.api)
      const q = await quota(user, "Water", 3, "FREQ=DAILY")
      const undoBefore = (await undoEntries(service, user.id)).length

      const first = await user.api.post("/api/quota-prompts/did", { keys: [key(q.id, 2)] })
      expect(first.status, first.text).toBe(200)
      expect(first.body.data).toMatchObject({ considered: 1, did: 1 })
      expect(first.body.data.tasks).toHaveLength(1)
      expect(first.body.data.tasks[0]).toMatchObject({
        id: q.id,
        progress_current: 2,
        quota_day_state: { date: TODAY, logged: 2, did: [key(q.id, 2)], considered: [key(q.id, 2)], did_applied: { [key(q.id, 2)]: 2 } }
      })
      let data = await listing(user.api)
      expect(rowsOf(data, q.id)).toEqual([[s.early, 1, true, false], [s.morning, 2, true, true], [s.midday, 3, false, false]])

      // A double tap changes nothing: no log, no event, no undo entry.
      const eventsBefore = (await outboxEvents(service, user.id)).length
      const again = await user.api.post("/api/quota-prompts/did", { keys: [key(q.id, 2)] })
      expect(again.status).toBe(200)
      expect(again.body.data).toMatchObject({ considered: 0, did: 0 })
      expect(again.body.data.tasks[0].progress_current).toBe(2)
      expect((await outboxEvents(service, user.id)).length).toBe(eventsBefore)
      expect((await undoEntries(service, user.id)).length).toBe(undoBefore + 1)

      // A lower number than the count adds nothing but is marked done and considered.
      const lower = await user.api.post("/api/quota-prompts/did", { keys: [key(q.id, 1)] })
      expect(lower.body.data).toMatchObject({ considered: 1, did: 1 })
      expect(lower.body.data.tasks[0].progress_current).toBe(2)
      expect((await outboxEvents(service, user.id)).length).toBe(eventsBefore) // the count did not move
      data = await listing(user.api)
      expect(rowsOf(data, q.id)).toEqual([[s.early, 1, true, true], [s.morning, 2, true, true], [s.midday, 3, false, false]])

      // Prompt 3 reaches the target; task.progressed reports it met.
      const third = await user.api.post("/api/quota-prompts/did", { keys: [key(q.id, 3)] })
      expect(third.body.data.tasks[0].progress_current).toBe(3)
      const events = await outboxEvents(service, user.id)
      expect(events.filter((e) => e.task_id === q.id).map((e) => [e.event, e.payload.progress_current, e.payload.met])).toEqual([
        ["task.created", undefined, undefined],
        ["task.progressed", 2, false],
        ["task.progressed", 3, true]
      ])
      expect(events.at(-1)!.payload).toMatchObject({ progress_target: 3, task: { id: q.id, progress_current: 3 } })
      const undo = (await undoEntries(service, user.id)).slice(undoBefore)
      expect(undo.map((u) => u.action)).toEqual(["quota_prompt", "quota_prompt", "quota_prompt"])
    })

    it("any other quota gets +1 per key, once; several quotas in one request are one undo entry and undo puts them back", async () => {
      const user = await newUser()
      const s = await slotsOf(user.api)
      const weekly = await quota(user, "Swim", 3, "FREQ=WEEKLY")
      const monthly = await quota(user, "Museum", 2, "FREQ=MONTHLY")
      const daily = await quota(user, "Water", 4, "FREQ=DAILY")
      await user.api.post(`/api/tasks/${daily.id}/progress`) // 1 logged by hand
      const undoBefore = (await undoEntries(service, user.id)).length
      const eventsBefore = (await outboxEvents(service, user.id)).length

      const res = await user.api.post("/api/quota-prompts/did", {
        keys: [key(weekly.id, 0), key(monthly.id, 0), key(daily.id, 1), key(daily.id, 3), key(weekly.id, 0)]
      })
      expect(res.status, res.text).toBe(200)
      expect(res.body.data).toMatchObject({ considered: 4, did: 4 })
      const byId = new Map((res.body.data.tasks as Array<any>).map((t) => [t.id, t]))
      expect([...byId.keys()].sort((a, b) => a - b)).toEqual([weekly.id, monthly.id, daily.id])
      expect(byId.get(weekly.id).progress_current).toBe(1)
      expect(byId.get(monthly.id).progress_current).toBe(1)
      expect(byId.get(daily.id).progress_current).toBe(3)

      // One task.progressed per quota that moved, one undo entry for the request.
      const events = (await outboxEvents(service, user.id)).slice(eventsBefore)
      expect(events.map((e) => [e.event, e.task_id, e.payload.progress_current]).sort()).toEqual(
        [["task.progressed", weekly.id, 1], ["task.progressed", monthly.id, 1], ["task.progressed", daily.id, 3]].sort()
      )
      const undo = (await undoEntries(service, user.id)).slice(undoBefore)
      expect(undo.map((u) => [u.action, u.tasks_affected])).toEqual([["quota_prompt", 3]])

      let data = await listing(user.api)
      expect(rowsOf(data, weekly.id)).toEqual([[s.early, 0, true, true]])
      expect(rowsOf(data, daily.id)).toEqual([[s.early, 1, true, true], [s.morning, 2, true, false], [s.midday, 3, true, true], [s.afternoon, 4, false, false]])
      // Did it again on the weekly row: already done today, nothing added.
      const again = await user.api.post("/api/quota-prompts/did", { keys: [key(weekly.id, 0)] })
      expect(again.body.data).toMatchObject({ considered: 0, did: 0 })
      expect(again.body.data.tasks[0].progress_current).toBe(1)

      // Undo takes the whole request back: counts and prompt state.
      const undone = await user.api.post("/api/undo")
      expect(undone.status, undone.text).toBe(200)
      expect(undone.body.data).toMatchObject({ undone_action: "quota_prompt", tasks_affected: 3 })
      data = await listing(user.api)
      expect(rowsOf(data, weekly.id)).toEqual([[s.early, 0, false, false]])
      expect(rowsOf(data, daily.id)).toEqual([[s.early, 1, true, false], [s.morning, 2, false, false], [s.midday, 3, false, false], [s.afternoon, 4, false, false]])
      for (const [id, current] of [[weekly.id, 0], [monthly.id, 0], [daily.id, 1]] as const) {
        const task = (await user.api.get(`/api/tasks/${id}`)).body.data
        expect(task.progress_current).toBe(current)
        expect(task.quota_day_state.did).toEqual([])
      }
    })
  })

  describe("consider and restore", () => {
    it("Considered marks rows handled for today without logging; restore takes it back", async () => {
      const user = await newUser()
      const s = await slotsOf(user.api)
      const daily = await quota(user, "Water", 2, "FREQ=DAILY")
      const weekly = await quota(user, "Swim", 2, "FREQ=WEEKLY")

      const res = await user.api.post("/api/quota-prompts/consider", { keys: [key(daily.id, 1), key(weekly.id, 0)] })
      expect(res.status, res.text).toBe(200)
      expect(res.body.data.considered).toBe(2)
      expect(res.body.data.did).toBe(0)
      expect((res.body.data.tasks as Array<any>).map((t) => t.progress_current)).toEqual([0, 0])
      let data = await listing(user.api)
      expect(rowsOf(data, daily.id)).toEqual([[s.early, 1, false, true], [s.morning, 2, false, false]])
      expect(rowsOf(data, weekly.id)).toEqual([[s.early, 0, false, true]])
      expect(data.groups.map((g) => g.considered)).toEqual([2, 0, 0, 0, 0])

      // Considering again counts nothing new.
      expect((await user.api.post("/api/quota-prompts/consider", { keys: [key(weekly.id, 0)] })).body.data.considered).toBe(0)

      const restored = await user.api.post("/api/quota-prompts/restore", { keys: [key(weekly.id, 0), key(daily.id, 2)] })
      expect(restored.status, restored.text).toBe(200)
      expect(restored.body.data.restored).toBe(1)
      expect(restored.body.data.tasks).toHaveLength(2)
      data = await listing(user.api)
      expect(rowsOf(data, weekly.id)).toEqual([[s.early, 0, false, false]])
      expect(rowsOf(data, daily.id)).toEqual([[s.early, 1, false, true], [s.morning, 2, false, false]])
      expect((await user.api.post("/api/quota-prompts/restore", { keys: [key(weekly.id, 0)] })).body.data.restored).toBe(0)
      // No progress was logged by any of it.
      for (const id of [daily.id, weekly.id]) {
        expect((await user.api.get(`/api/tasks/${id}`)).body.data).toMatchObject({ progress_current: 0, quota_day_state: { logged: 0, did: [] } })
      }
    })
  })

  describe("bad keys: the whole request is a 400 and nothing changes", () => {
    let user: TestUser
    let stranger: TestUser
    let daily: Record<string, any>
    let weekly: Record<string, any>
    let plain: Record<string, any>
    let theirs: Record<string, any>

    beforeAll(async () => {
      user = await newUser()
      stranger = await newUser()
      daily = await quota(user, "Water", 3, "FREQ=DAILY")
      weekly = await quota(user, "Swim", 2, "FREQ=WEEKLY")
      plain = await createTask(user.api, { title: "Plain", priority: 1 })
      theirs = await quota(stranger, "Theirs", 2, "FREQ=DAILY")
    })

    const cases: ReadonlyArray<readonly [string, () => Array<string>]> = [
      ["the UTC date, not the user's local day", () => [key(daily.id, 1), key(weekly.id, 0, UTC_DATE)]],
      ["tomorrow", () => [key(daily.id, 1), key(weekly.id, 0, "2026-03-13")]],
      ["another user's quota", () => [key(daily.id, 1), key(theirs.id, 1)]],
      ["a task that is not a quota", () => [key(daily.id, 1), key(plain.id, 0)]],
      ["an unknown task", () => [key(daily.id, 1), key(2_000_000, 0)]],
      ["number 0 on a daily quota", () => [key(weekly.id, 0), key(daily.id, 0)]],
      ["a number on a weekly quota", () => [key(daily.id, 1), key(weekly.id, 1)]],
      ["a malformed key", () => [key(daily.id, 1), "q:abc:1:2026-03-12"]],
      ["an impossible date", () => [key(daily.id, 1), `q:${weekly.id}:0:2026-02-30`]],
      ["no keys at all", () => []]
    ]
    for (const [name, keys] of cases) {
      it(`${name}`, async () => {
        for (const action of ["did", "consider", "restore"]) {
          const before = await snapshot(service)
          const res = await user.api.post(`/api/quota-prompts/${action}`, { keys: keys() })
          expect(res.status, `${action}: ${res.text}`).toBe(400)
          expect(res.body.code).toBe("VALIDATION_ERROR")
          expect(await snapshot(service)).toEqual(before)
        }
      })
    }
  })

  it("reminders sit in the slot whose start is the latest at or before their local time (before the first: the first)", async () => {
    const user = await newUser()
    const s = await slotsOf(user.api)
    const at = async (title: string, due: string) =>
      (await createTask(user.api, { title, is_reminder: true, due_at: due })).id
    // Berlin is UTC+1 on the 12th.
    const early = await at("06:00", "2026-03-12T05:00:00Z")
    const seven = await at("07:00", "2026-03-12T06:00:00Z")
    const nineMinus = await at("08:59", "2026-03-12T07:59:00Z")
    const nine = await at("09:00", "2026-03-12T08:00:00Z")
    const half = await at("13:30", "2026-03-12T12:30:00Z")
    const late = await at("20:29", "2026-03-12T19:29:00Z")
    const evening = await at("20:30", "2026-03-12T19:30:00Z")
    const night = await at("23:59", "2026-03-12T22:59:00Z")
    const missed = await at("yesterday 18:00", "2026-03-11T17:00:00Z")
    await at("tomorrow 08:00", "2026-03-13T07:00:00Z")
    await createTask(user.api, { title: "Not a reminder", due_at: "2026-03-12T10:00:00Z" })
    const q = await quota(user, "Water", 1, "FREQ=WEEKLY", { is_tracked: true })

    const data = await listing(user.api)
    const ids = (slot: number) => data.groups.find((g) => g.slot.id === slot)!.reminders.map((r) => r.id)
    expect(ids(s.early)).toEqual([early, seven, nineMinus])
    expect(ids(s.morning)).toEqual([nine])
    expect(ids(s.midday)).toEqual([half])
    expect(ids(s.afternoon)).toEqual([missed, late])
    expect(ids(s.evening)).toEqual([evening, night])
    expect(data.total).toBe(9)
    expect(data.prompts_total).toBe(1)
    expect(data.groups.map((g) => g.count)).toEqual([4, 1, 1, 2, 2])
    expect(rowsOf(data, q.id)).toEqual([[s.early, 0, false, false]])
    expect(data.groups[0]!.reminders[0]).toMatchObject({ id: early, is_reminder: true, title: "06:00", due_at: "2026-03-12T05:00:00.000Z" })
  })
})

describe("quota prompts across days (SERVICE_NOW restarts)", () => {
  // Saturday 14 March 2026, 13:00 in Berlin; then Sunday, a new week.
  const SATURDAY = new Date("2026-03-14T12:00:00Z")
  const SUNDAY = new Date("2026-03-15T12:00:00Z")
  let db: TestDatabase
  let service: TestService

  beforeAll(async () => {
    db = await freshDatabase()
  })
  afterAll(async () => {
    await service?.stop()
    await db.drop()
  })

  it("a met weekly quota is gone until its period resets; daily rows start over the next day", async () => {
    service = await startService({ serviceNow: Option.some(SATURDAY) }, db)
    let user = await service.user("rosa", "Europe/Berlin")
    const weekly = await createTask(user.api, { title: "Swim", progress_target: 2, rrule: "FREQ=WEEKLY" })
    const daily = await createTask(user.api, { title: "Water", progress_target: 2, rrule: "FREQ=DAILY" })
    await user.api.post("/api/quota-prompts/did", { keys: [key(weekly.id, 0, "2026-03-14"), key(daily.id, 2, "2026-03-14")] })
    await user.api.post(`/api/tasks/${weekly.id}/progress`)
    let data = await listing(user.api)
    expect(data.date).toBe("2026-03-14")
    expect(rowsOf(data, weekly.id)).toEqual([]) // met for this week
    expect(data.groups.flatMap((g) => g.prompts.filter((p) => p.task_id === daily.id).map((p) => [p.number, p.done]))).toEqual([[1, true], [2, true]])
    await service.stop()

    service = await startService({ serviceNow: Option.some(SUNDAY) }, db)
    user = await service.user("rosa", "Europe/Berlin")
    data = await listing(user.api)
    expect(data.date).toBe("2026-03-15")
    // A new week (Sunday start), whether or not the start-up sweep has run: back, at 0.
    expect(promptOf(data, weekly.id, 0)).toMatchObject({ prompt_key: key(weekly.id, 0, "2026-03-15"), current: 0, done: false, considered: false })
    for (const n of [1, 2]) {
      expect(promptOf(data, daily.id, n)).toMatchObject({ prompt_key: key(daily.id, n, "2026-03-15"), current: 0, done: false, considered: false })
    }
    // Yesterday's keys are refused today.
    const stale = await user.api.post("/api/quota-prompts/did", { keys: [key(weekly.id, 0, "2026-03-14")] })
    expect(stale.status).toBe(400)
  })
})
