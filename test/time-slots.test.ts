import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { snapshot, undoEntries } from "./support/rows.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, expectServiceTime } from "./support/tasks.js"

/**
 * Time slots over HTTP (spec §2.4, §3 "Time slot edits", §4.4; TimeSlotsApi.ts).
 *
 * The clock is pinned at 09:00 UTC on Tuesday 10 March 2026: 10:00 in Berlin (CET, UTC+1).
 * Berlin springs forward on Sunday 29 March (CEST, UTC+2), so a reminder on 30 March shows
 * that a moved reminder keeps its local date and takes the slot's new local time.
 */
const NOW = new Date("2026-03-10T09:00:00Z")

/** A Berlin wall time on 12 March (CET) or 30 March (CEST) as the wire shows it. */
const thu = (hhmm: string) => cet("2026-03-12", hhmm)
const mon30 = (hhmm: string) => utc("2026-03-30", hhmm, 2)
const cet = (date: string, hhmm: string) => utc(date, hhmm, 1)
const utc = (date: string, hhmm: string, offsetHours: number) => {
  const [h, m] = hhmm.split(":").map(Number) as [number, number]
  const [y, mo, d] = date.split("-").map(Number) as [number, number, number]
  return new Date(Date.UTC(y, mo - 1, d, h - offsetHours, m)).toISOString()
}

interface Slot {
  readonly id: number
  readonly user_id: number
  readonly label: string
  readonly start_time: string
  readonly sort_order: number
  readonly created_at: string
}

const SLOT_FIELDS = ["created_at", "id", "label", "sort_order", "start_time", "user_id"]

const refusal = (status: number, code: string) => ({ status, code })

describe("time slots (spec §3 'Time slot edits', §4.4)", () => {
  let service: TestService
  let counter = 0
  const berliner = (): Promise<TestUser> => service.user(`slots${++counter}`, "Europe/Berlin")

  const slotsOf = async (user: TestUser): Promise<Array<Slot>> => {
    const res = await user.api.get("/api/time-slots")
    expect(res.status).toBe(200)
    expect(res.body.data.count).toBe(res.body.data.time_slots.length)
    return res.body.data.time_slots
  }
  const slotNamed = async (user: TestUser, label: string) => (await slotsOf(user)).find((s) => s.label === label)!
  const read = async (user: TestUser, id: number) => {
    const res = await user.api.get(`/api/tasks/${id}`)
    expect(res.status).toBe(200)
    return res.body.data as Record<string, any>
  }
  const dueOf = async (user: TestUser, ids: Record<string, number>) => {
    const out: Record<string, unknown> = {}
    for (const [name, id] of Object.entries(ids)) out[name] = (await read(user, id)).due_at
    return out
  }
  const reminder = (user: TestUser, title: string, due_at: string, extra: Record<string, unknown> = {}) =>
    createTask(user.api, { title, due_at, is_reminder: true, ...extra })
  const expectRefused = (res: { status: number; body: any }, status: number, code: string) => {
    expect({ status: res.status, code: res.body?.code }).toEqual(refusal(status, code))
    expect(typeof res.body.error).toBe("string")
    expect(typeof res.body.details).toBe("object")
  }

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
  })
  afterAll(async () => {
    await service.stop()
  })

  describe("GET and POST /api/time-slots", () => {
    it("a new user has the five default slots, ordered by start_time with sort_order following", async () => {
      const user = await berliner()
      const res = await user.api.get("/api/time-slots")
      expect(res.status).toBe(200)
      expect(Object.keys(res.body.data).sort()).toEqual(["count", "time_slots"])
      const slots = res.body.data.time_slots as Array<Slot>
      expect(res.body.data.count).toBe(5)
      expect(slots.map((s) => [s.label, s.start_time, s.sort_order])).toEqual([
        ["Early morning", "07:00", 0],
        ["Morning", "09:00", 1],
        ["Midday", "12:00", 2],
        ["Afternoon", "16:00", 3],
        ["Evening", "20:30", 4]
      ])
      for (const slot of slots) {
        expect(Object.keys(slot).sort()).toEqual(SLOT_FIELDS)
        expect(slot.user_id).toBe(user.id)
      }
    })

    it("POST answers 201 with the slot; the list stays in start_time order and renumbers sort_order", async () => {
      const user = await berliner()
      const late = await user.api.post("/api/time-slots", { label: "Late", start_time: "23:15" })
      expect(late.status).toBe(201)
      expect(Object.keys(late.body)).toEqual(["data"])
      expect(late.body.data).toMatchObject({ user_id: user.id, label: "Late", start_time: "23:15", sort_order: 5 })
      expect(Object.keys(late.body.data).sort()).toEqual(SLOT_FIELDS)
      expectServiceTime(late.body.data.created_at, NOW)
      const dawn = await user.api.post("/api/time-slots", { label: "  Dawn  ", start_time: "05:30" })
      expect(dawn.status).toBe(201)
      expect(dawn.body.data).toMatchObject({ label: "Dawn", start_time: "05:30", sort_order: 0 })
      const lunch = await user.api.post("/api/time-slots", { label: "Lunch", start_time: "12:30" })
      expect(lunch.status).toBe(201)
      const slots = await slotsOf(user)
      expect(slots.map((s) => [s.label, s.start_time, s.sort_order])).toEqual([
        ["Dawn", "05:30", 0],
        ["Early morning", "07:00", 1],
        ["Morning", "09:00", 2],
        ["Midday", "12:00", 3],
        ["Lunch", "12:30", 4],
        ["Afternoon", "16:00", 5],
        ["Evening", "20:30", 6],
        ["Late", "23:15", 7]
      ])
      expect(slots.find((s) => s.label === "Late")!.id).toBe(late.body.data.id)
      // Creating a slot is an undoable action of its own.
      expect((await undoEntries(service, user.id)).map((u) => u.action)).toEqual([
        "time_slot_create",
        "time_slot_create",
        "time_slot_create"
      ])
    })

    it("a duplicate start_time or a malformed HH:MM is a 400 and creates nothing", async () => {
      const user = await berliner()
      const before = await slotsOf(user)
      const duplicate = await user.api.post("/api/time-slots", { label: "Second breakfast", start_time: "09:00" })
      expectRefused(duplicate, 400, "VALIDATION_ERROR")
      expect(Object.keys(duplicate.body.details)).toEqual(["start_time"])
      for (const start_time of ["7:00", "24:00", "12:60", "noon", "12:00:00", "", "12h30"]) {
        expectRefused(await user.api.post("/api/time-slots", { label: "Bad", start_time }), 400, "VALIDATION_ERROR")
      }
      expectRefused(await user.api.post("/api/time-slots", { label: "No time" }), 400, "VALIDATION_ERROR")
      expectRefused(await user.api.post("/api/time-slots", { label: "   ", start_time: "10:00" }), 400, "VALIDATION_ERROR")
      expect(await slotsOf(user)).toEqual(before)
      expect(await undoEntries(service, user.id)).toEqual([])
    })

    it("each user sees only their own slots", async () => {
      const alice = await berliner()
      const bob = await berliner()
      await alice.api.post("/api/time-slots", { label: "Alice only", start_time: "06:00" })
      expect((await slotsOf(bob)).map((s) => s.label)).not.toContain("Alice only")
      expect((await slotsOf(bob)).every((s) => s.user_id === bob.id)).toBe(true)
      // The same start time is free for another user.
      expect((await bob.api.post("/api/time-slots", { label: "Bob too", start_time: "06:00" })).status).toBe(201)
    })
  })

  describe("PATCH /api/time-slots/{id}: moving start_time", () => {
    it("later (09:00 to 10:00): the reminder on the old start and one now outside the slot move to 10:00; the rest stay", async () => {
      const user = await berliner()
      const morning = await slotNamed(user, "Morning")
      const ids = {
        onStart: (await reminder(user, "On the old start", thu("09:00"))).id,
        nowOutside: (await reminder(user, "Inside, before the new start", thu("09:30"))).id,
        stillInside: (await reminder(user, "Inside, after the new start", thu("10:30"))).id,
        onNewStart: (await reminder(user, "Already at the new start", thu("10:00"))).id,
        otherSlotBefore: (await reminder(user, "Early morning reminder", thu("07:30"))).id,
        otherSlotAfter: (await reminder(user, "Midday reminder", thu("12:00"))).id,
        afterDst: (await reminder(user, "After the clocks change", mon30("09:00"))).id,
        recurring: (await reminder(user, "Daily pills", cet("2026-03-11", "09:00"), { rrule: "FREQ=DAILY" })).id,
        ordinary: (await createTask(user.api, { title: "Ordinary task at 09:00", due_at: thu("09:00") })).id,
        ordinaryInside: (await createTask(user.api, { title: "Ordinary task at 09:30", due_at: thu("09:30") })).id
      }
      const entriesBefore = await undoEntries(service, user.id)

      const res = await user.api.patch(`/api/time-slots/${morning.id}`, { start_time: "10:00" })
      expect(res.status).toBe(200)
      expect(Object.keys(res.body.data).sort()).toEqual(["quotas_moved", "reminders_moved", "slot", "undo_id"])
      expect(res.body.data.slot).toEqual({ ...morning, start_time: "10:00" })
      expect(res.body.data.reminders_moved).toBe(4)
      expect(res.body.data.quotas_moved).toBe(0)

      expect(await dueOf(user, ids)).toEqual({
        onStart: thu("10:00"),
        nowOutside: thu("10:00"),
        stillInside: thu("10:30"),
        onNewStart: thu("10:00"),
        otherSlotBefore: thu("07:30"),
        otherSlotAfter: thu("12:00"),
        afterDst: mon30("10:00"), // 08:00Z: the local date and the new local time, in summer time
        recurring: cet("2026-03-11", "10:00"),
        ordinary: thu("09:00"),
        ordinaryInside: thu("09:30")
      })
      // A moved reminder's anchor follows, so a recurring one keeps the new time.
      expect(await read(user, ids.recurring)).toMatchObject({ anchor_time: "10:00", original_due_at: cet("2026-03-11", "10:00") })
      expect(await read(user, ids.onStart)).toMatchObject({ anchor_time: "10:00", original_due_at: thu("10:00") })
      expect((await read(user, ids.stillInside)).anchor_time).toBe("10:30")

      // One undo entry for the slot change and every reminder move.
      const entries = await undoEntries(service, user.id)
      expect(entries.length).toBe(entriesBefore.length + 1)
      const entry = entries[entries.length - 1]!
      expect(entry).toMatchObject({
        id: res.body.data.undo_id,
        action: "time_slot_edit",
        description: "Moved the time slot 'Morning' from 09:00 to 10:00",
        tasks_affected: 4,
        undone: false
      })
      expect(entry.changes.filter((c) => c.table === "tasks").map((c) => c.id).sort((a, b) => a - b)).toEqual(
        [ids.onStart, ids.nowOutside, ids.afterDst, ids.recurring].sort((a, b) => a - b)
      )
      expect(entry.changes.filter((c) => c.table === "time_slots")).toEqual([
        { op: "update", table: "time_slots", id: morning.id, before: { start_time: "09:00" }, after: { start_time: "10:00" } }
      ])
    })

    it("earlier (Midday 12:00 to 11:00): only Midday's reminders can move; a Morning reminder now after 11:00 stays", async () => {
      const user = await berliner()
      const midday = await slotNamed(user, "Midday")
      const ids = {
        onStart: (await reminder(user, "Lunch pills", thu("12:00"))).id,
        inside: (await reminder(user, "Call mum", thu("13:30"))).id,
        morningNowAfterNewStart: (await reminder(user, "Coffee", thu("11:30"))).id,
        morningBefore: (await reminder(user, "Stretch", thu("10:45"))).id,
        afternoon: (await reminder(user, "Walk", thu("16:00"))).id
      }
      const res = await user.api.patch(`/api/time-slots/${midday.id}`, { start_time: "11:00" })
      expect(res.status).toBe(200)
      expect(res.body.data).toMatchObject({ reminders_moved: 1, quotas_moved: 0, slot: { id: midday.id, start_time: "11:00", label: "Midday" } })
      expect(await dueOf(user, ids)).toEqual({
        onStart: thu("11:00"),
        inside: thu("13:30"),
        morningNowAfterNewStart: thu("11:30"),
        morningBefore: thu("10:45"),
        afternoon: thu("16:00")
      })
    })

    it("past another slot (Morning 09:00 to 13:00): all of Morning's reminders now fall under Midday, so all go to 13:00", async () => {
      const user = await berliner()
      const morning = await slotNamed(user, "Morning")
      const ids = {
        onStart: (await reminder(user, "A", thu("09:00"))).id,
        inside: (await reminder(user, "B", thu("11:59"))).id,
        midday: (await reminder(user, "C", thu("12:30"))).id,
        afterNewStart: (await reminder(user, "D", thu("13:30"))).id,
        early: (await reminder(user, "E", thu("07:00"))).id
      }
      const res = await user.api.patch(`/api/time-slots/${morning.id}`, { start_time: "13:00" })
      expect(res.status).toBe(200)
      expect(res.body.data.reminders_moved).toBe(2)
      expect(await dueOf(user, ids)).toEqual({
        onStart: thu("13:00"),
        inside: thu("13:00"),
        midday: thu("12:30"),
        afterNewStart: thu("13:30"),
        early: thu("07:00")
      })
      // Slots stay ordered by start_time; sort_order follows.
      expect((await slotsOf(user)).map((s) => [s.label, s.start_time, s.sort_order])).toEqual([
        ["Early morning", "07:00", 0],
        ["Midday", "12:00", 1],
        ["Morning", "13:00", 2],
        ["Afternoon", "16:00", 3],
        ["Evening", "20:30", 4]
      ])
    })

    it("the first slot: reminders before it belong to it and keep their time while it stays first", async () => {
      const user = await berliner()
      const early = await slotNamed(user, "Early morning")
      const ids = {
        beforeFirst: (await reminder(user, "Very early", thu("06:15"))).id,
        onStart: (await reminder(user, "Wake up", thu("07:00"))).id,
        inside: (await reminder(user, "Breakfast", thu("07:45"))).id,
        morning: (await reminder(user, "Bus", thu("09:00"))).id
      }
      const res = await user.api.patch(`/api/time-slots/${early.id}`, { start_time: "08:00" })
      expect(res.status).toBe(200)
      expect(res.body.data.reminders_moved).toBe(1)
      expect(await dueOf(user, ids)).toEqual({
        beforeFirst: thu("06:15"),
        onStart: thu("08:00"),
        inside: thu("07:45"),
        morning: thu("09:00")
      })
    })

    it("undo puts the slot and every moved reminder back at once; redo moves them again", async () => {
      const user = await berliner()
      const morning = await slotNamed(user, "Morning")
      const ids = {
        a: (await reminder(user, "A", thu("09:00"))).id,
        b: (await reminder(user, "B", thu("09:40"))).id,
        c: (await reminder(user, "C", thu("11:00"))).id
      }
      const res = await user.api.patch(`/api/time-slots/${morning.id}`, { start_time: "10:00", label: "Late morning" })
      expect(res.status).toBe(200)
      expect(res.body.data).toMatchObject({ reminders_moved: 2, slot: { label: "Late morning", start_time: "10:00" } })
      const moved = { a: thu("10:00"), b: thu("10:00"), c: thu("11:00") }
      expect(await dueOf(user, ids)).toEqual(moved)

      const undo = await user.api.post("/api/undo")
      expect(undo.status).toBe(200)
      expect(undo.body.data).toMatchObject({ undone_action: "time_slot_edit", tasks_affected: 2 })
      expect(await dueOf(user, ids)).toEqual({ a: thu("09:00"), b: thu("09:40"), c: thu("11:00") })
      expect(await read(user, ids.a)).toMatchObject({ anchor_time: "09:00", original_due_at: thu("09:00") })
      expect(await slotNamed(user, "Morning")).toEqual(morning)

      const redo = await user.api.post("/api/redo")
      expect(redo.status).toBe(200)
      expect(redo.body.data).toMatchObject({ redone_action: "time_slot_edit", tasks_affected: 2 })
      expect(await dueOf(user, ids)).toEqual(moved)
      expect(await slotNamed(user, "Late morning")).toEqual({ ...morning, label: "Late morning", start_time: "10:00" })
    })

    it("quotas_moved counts the quotas whose prompts start in the slot (configured there, or by default in the first slot)", async () => {
      const user = await berliner()
      const early = await slotNamed(user, "Early morning")
      const morning = await slotNamed(user, "Morning")
      const quota = (title: string, config: unknown) =>
        createTask(user.api, { title, progress_target: 3, rrule: "FREQ=DAILY", quota_prompt_config: config })
      await quota("Default slot", null)
      await quota("In Morning", { enabled: true, slot_id: morning.id })
      await quota("Also in Morning", { slot_id: morning.id })
      await quota("In Early morning", { slot_id: early.id })
      const m = await user.api.patch(`/api/time-slots/${morning.id}`, { start_time: "09:15" })
      expect(m.body.data).toMatchObject({ reminders_moved: 0, quotas_moved: 2 })
      const e = await user.api.patch(`/api/time-slots/${early.id}`, { start_time: "06:45" })
      expect(e.body.data).toMatchObject({ reminders_moved: 0, quotas_moved: 2 })
      // A slot move is recorded even when no reminder moved.
      expect(typeof m.body.data.undo_id).toBe("number")
    })
  })

  describe("PATCH /api/time-slots/{id}: rename, refusals", () => {
    it("a rename alone moves nothing, answers undo_id null and writes no undo entry", async () => {
      const user = await berliner()
      const morning = await slotNamed(user, "Morning")
      const r = await reminder(user, "On the start", thu("09:00"))
      const entriesBefore = await undoEntries(service, user.id)
      const res = await user.api.patch(`/api/time-slots/${morning.id}`, { label: "Breakfast" })
      expect(res.status).toBe(200)
      expect(res.body.data).toEqual({ slot: { ...morning, label: "Breakfast" }, reminders_moved: 0, quotas_moved: 0, undo_id: null })
      // The same start time sent along is still a rename only.
      const same = await user.api.patch(`/api/time-slots/${morning.id}`, { label: "Brunch", start_time: "09:00" })
      expect(same.body.data).toEqual({ slot: { ...morning, label: "Brunch" }, reminders_moved: 0, quotas_moved: 0, undo_id: null })
      expect((await read(user, r.id)).due_at).toBe(thu("09:00"))
      expect(await undoEntries(service, user.id)).toEqual(entriesBefore)
    })

    it("a start_time another slot has is a 400 and nothing changes", async () => {
      const user = await berliner()
      const morning = await slotNamed(user, "Morning")
      await reminder(user, "On the start", thu("09:00"))
      await reminder(user, "Inside", thu("10:00"))
      const slotsBefore = await slotsOf(user)
      const before = await snapshot(service)
      const res = await user.api.patch(`/api/time-slots/${morning.id}`, { start_time: "12:00", label: "Renamed too" })
      expectRefused(res, 400, "VALIDATION_ERROR")
      expect(Object.keys(res.body.details)).toEqual(["start_time"])
      expect(await slotsOf(user)).toEqual(slotsBefore)
      expect(await snapshot(service)).toEqual(before)
    })

    it("a malformed start_time or an empty label is a 400; an unknown or another user's slot is a 404", async () => {
      const alice = await berliner()
      const bob = await berliner()
      const morning = await slotNamed(alice, "Morning")
      for (const start_time of ["9:00", "25:00", "09:61", "nine", "09.00"]) {
        expectRefused(await alice.api.patch(`/api/time-slots/${morning.id}`, { start_time }), 400, "VALIDATION_ERROR")
      }
      expectRefused(await alice.api.patch(`/api/time-slots/${morning.id}`, { label: "" }), 400, "VALIDATION_ERROR")
      expectRefused(await alice.api.patch(`/api/time-slots/abc`, { label: "X" }), 400, "VALIDATION_ERROR")
      const r = await reminder(alice, "Alice's reminder", thu("09:00"))
      const before = await snapshot(service)
      expectRefused(await bob.api.patch(`/api/time-slots/${morning.id}`, { start_time: "10:00" }), 404, "NOT_FOUND")
      expectRefused(await bob.api.delete(`/api/time-slots/${morning.id}`), 404, "NOT_FOUND")
      expectRefused(await alice.api.patch(`/api/time-slots/999999`, { label: "X" }), 404, "NOT_FOUND")
      expectRefused(await alice.api.delete(`/api/time-slots/999999`), 404, "NOT_FOUND")
      expect(await snapshot(service)).toEqual(before)
      expect(await slotNamed(alice, "Morning")).toEqual(morning)
      expect((await read(alice, r.id)).due_at).toBe(thu("09:00"))
    })
  })

  describe("DELETE /api/time-slots/{id}", () => {
    it("moves each reminder to the nearest remaining slot (ties to the earlier), quotas follow, one time_slot_delete entry", async () => {
      const user = await berliner()
      const slots = await slotsOf(user)
      const [, morning, midday, afternoon, evening] = slots as [Slot, Slot, Slot, Slot, Slot]
      const ids = {
        onStart: (await reminder(user, "At noon", thu("12:00"))).id, // 180 min to 09:00, 240 to 16:00
        tie: (await reminder(user, "Tie", thu("12:30"))).id, // 210 both ways: the earlier slot
        nearer16: (await reminder(user, "Afternoonish", thu("13:00"))).id, // 180 to 16:00, 240 to 09:00
        summer: (await reminder(user, "After DST", mon30("15:59"))).id,
        morning: (await reminder(user, "Morning", thu("09:30"))).id,
        ordinary: (await createTask(user.api, { title: "Ordinary at noon", due_at: thu("12:00") })).id
      }
      const quota = (title: string, slotId: number) =>
        createTask(user.api, { title, progress_target: 2, rrule: "FREQ=DAILY", quota_prompt_config: { enabled: true, slot_id: slotId, numbers: {} } })
      const inMidday = await quota("Prompted at midday", midday.id)
      const inEvening = await quota("Prompted in the evening", evening.id)
      const entriesBefore = await undoEntries(service, user.id)

      const res = await user.api.delete(`/api/time-slots/${midday.id}`)
      expect(res.status).toBe(200)
      expect(res.body.data).toEqual({ slot: midday, reminders_moved: 4, quotas_moved: 1, undo_id: expect.any(Number) })
      expect(await dueOf(user, ids)).toEqual({
        onStart: thu("09:00"),
        tie: thu("09:00"),
        nearer16: thu("16:00"),
        summer: mon30("16:00"),
        morning: thu("09:30"),
        ordinary: thu("12:00")
      })
      // The quota's configured slot follows to the slot nearest the deleted one's start.
      expect((await read(user, inMidday.id)).quota_prompt_config).toEqual({ enabled: true, slot_id: morning.id, numbers: {} })
      expect((await read(user, inEvening.id)).quota_prompt_config).toEqual({ enabled: true, slot_id: evening.id, numbers: {} })
      expect((await slotsOf(user)).map((s) => [s.id, s.start_time, s.sort_order])).toEqual([
        [slots[0]!.id, "07:00", 0],
        [morning.id, "09:00", 1],
        [afternoon.id, "16:00", 2],
        [evening.id, "20:30", 3]
      ])

      const entries = await undoEntries(service, user.id)
      expect(entries.length).toBe(entriesBefore.length + 1)
      expect(entries[entries.length - 1]).toMatchObject({
        id: res.body.data.undo_id,
        action: "time_slot_delete",
        description: "Deleted the time slot 'Midday' (12:00)",
        tasks_affected: 5
      })

      // Undo brings the slot back with its id, the reminders and the quota's slot.
      const undo = await user.api.post("/api/undo")
      expect(undo.body.data).toMatchObject({ undone_action: "time_slot_delete", tasks_affected: 5 })
      expect(await slotsOf(user)).toEqual(slots)
      expect(await dueOf(user, ids)).toEqual({
        onStart: thu("12:00"),
        tie: thu("12:30"),
        nearer16: thu("13:00"),
        summer: mon30("15:59"),
        morning: thu("09:30"),
        ordinary: thu("12:00")
      })
      expect((await read(user, inMidday.id)).quota_prompt_config).toEqual({ enabled: true, slot_id: midday.id, numbers: {} })

      const redo = await user.api.post("/api/redo")
      expect(redo.body.data).toMatchObject({ redone_action: "time_slot_delete", tasks_affected: 5 })
      expect((await slotsOf(user)).map((s) => s.id)).toEqual([slots[0]!.id, morning.id, afternoon.id, evening.id])
      expect((await read(user, ids.tie)).due_at).toBe(thu("09:00"))
      expect((await read(user, inMidday.id)).quota_prompt_config).toEqual({ enabled: true, slot_id: morning.id, numbers: {} })
    })

    it("the first slot's early reminders go to the next one; the last slot cannot be deleted", async () => {
      const user = await berliner()
      const slots = await slotsOf(user)
      const r = await reminder(user, "Very early", thu("05:00"))
      const first = await user.api.delete(`/api/time-slots/${slots[0]!.id}`)
      expect(first.body.data).toMatchObject({ reminders_moved: 1, quotas_moved: 0 })
      expect((await read(user, r.id)).due_at).toBe(thu("09:00"))
      for (const slot of slots.slice(1, 4)) expect((await user.api.delete(`/api/time-slots/${slot.id}`)).status).toBe(200)
      // Only Evening is left: everything went there.
      expect((await read(user, r.id)).due_at).toBe(thu("20:30"))
      const before = await snapshot(service)
      const last = await user.api.delete(`/api/time-slots/${slots[4]!.id}`)
      expectRefused(last, 400, "VALIDATION_ERROR")
      expect(await snapshot(service)).toEqual(before)
      expect((await slotsOf(user)).map((s) => s.id)).toEqual([slots[4]!.id])
    })
  })

  describe("atomicity", () => {
    /** Makes the database refuse any due_at change on tasks titled 'Boom', inside the service's transaction. */
    const withBoomTrigger = async (body: () => Promise<void>) => {
      const exec = (statement: string) => service.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)))
      await exec(`CREATE OR REPLACE FUNCTION steady_test_boom() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF NEW.title = 'Boom' AND NEW.due_at IS DISTINCT FROM OLD.due_at THEN
            RAISE EXCEPTION 'boom';
          END IF;
          RETURN NEW;
        END $$`)
      await exec(`CREATE TRIGGER steady_test_boom BEFORE UPDATE ON tasks FOR EACH ROW EXECUTE FUNCTION steady_test_boom()`)
      try {
        await body()
      } finally {
        await exec(`DROP TRIGGER steady_test_boom ON tasks`)
        await exec(`DROP FUNCTION steady_test_boom()`)
      }
    }

    it("a failure on the second reminder update of a PATCH leaves the slot and the first reminder as they were", async () => {
      const user = await berliner()
      const morning = await slotNamed(user, "Morning")
      const first = await reminder(user, "First", thu("09:00"))
      const boom = await reminder(user, "Boom", thu("09:00"))
      const slotsBefore = await slotsOf(user)
      const before = await snapshot(service)
      await withBoomTrigger(async () => {
        const res = await user.api.patch(`/api/time-slots/${morning.id}`, { start_time: "10:00" })
        expect(res.status).toBe(500)
        expect(res.body.code).toBe("INTERNAL_ERROR")
      })
      expect(await slotsOf(user)).toEqual(slotsBefore)
      expect((await read(user, first.id)).due_at).toBe(thu("09:00"))
      expect((await read(user, boom.id)).due_at).toBe(thu("09:00"))
      expect(await snapshot(service)).toEqual(before)
      // And it works once the database lets it.
      const ok = await user.api.patch(`/api/time-slots/${morning.id}`, { start_time: "10:00" })
      expect(ok.body.data.reminders_moved).toBe(2)
    })

    it("a failure mid-delete leaves the slot, the reminders and the quotas as they were", async () => {
      const user = await berliner()
      const midday = await slotNamed(user, "Midday")
      const first = await reminder(user, "First", thu("12:00"))
      await reminder(user, "Boom", thu("12:05"))
      const q = await createTask(user.api, { title: "Quota", progress_target: 2, rrule: "FREQ=DAILY", quota_prompt_config: { slot_id: midday.id } })
      const slotsBefore = await slotsOf(user)
      const before = await snapshot(service)
      await withBoomTrigger(async () => {
        expect((await user.api.delete(`/api/time-slots/${midday.id}`)).status).toBe(500)
      })
      expect(await slotsOf(user)).toEqual(slotsBefore)
      expect((await read(user, first.id)).due_at).toBe(thu("12:00"))
      expect((await read(user, q.id)).quota_prompt_config).toEqual({ slot_id: midday.id })
      expect(await snapshot(service)).toEqual(before)
    })
  })
})
