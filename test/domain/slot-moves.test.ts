import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { isValidClock, movesForDelete, movesForEdit, nearestSlot, type ReminderTime, type SlotTime, slotOf } from "../../src/slots/SlotMoves.js"

/**
 * Which reminders a time-slot edit or deletion moves (spec §3 "Time slot edits"), checked against small independent oracles written in minutes.
 */

const clock = (minutes: number) => `${String(Math.floor(minutes / 60)).padStart(2, "0")}:${String(minutes % 60).padStart(2, "0")}`
const minutesOf = (time: string) => Number(time.slice(0, 2)) * 60 + Number(time.slice(3, 5))

/** Times on a coarse grid so that reminders often sit exactly on a slot start. */
const minuteArb = fc.oneof(
  fc.integer({ min: 0, max: 47 }).map((half) => half * 30),
  fc.integer({ min: 0, max: 1439 })
)
const timeArb = minuteArb.map(clock)

/** 1 to 6 slots with distinct start times and ids that do not follow time order. */
const slotsArb: fc.Arbitrary<ReadonlyArray<SlotTime>> = fc
  .uniqueArray(minuteArb, { minLength: 1, maxLength: 6 })
  .chain((starts) =>
    fc.shuffledSubarray(
      starts.map((_, i) => i + 1),
      { minLength: starts.length, maxLength: starts.length }
    ).map((ids) => starts.map((m, i) => ({ id: ids[i]! * 10, start_time: clock(m) })))
  )

/** Reminders at arbitrary times plus some exactly on slot starts. */
const remindersArb = (slots: ReadonlyArray<SlotTime>): fc.Arbitrary<ReadonlyArray<ReminderTime>> =>
  fc.array(fc.oneof(timeArb, fc.constantFrom(...slots.map((s) => s.start_time))), { maxLength: 12 }).map((times) =>
    times.map((time, i) => ({ id: 1000 + i, time }))
  )

/** Oracle: the latest start at or before the time; before the first slot, the first slot. */
const owner = (slots: ReadonlyArray<SlotTime>, time: string): number => {
  const byTime = [...slots].sort((a, b) => minutesOf(a.start_time) - minutesOf(b.start_time))
  const at = byTime.filter((s) => minutesOf(s.start_time) <= minutesOf(time))
  return (at.length === 0 ? byTime[0]! : at[at.length - 1]!).id
}

/** Oracle: the slot with the smallest distance in minutes; ties go to the earlier start. */
const nearest = (slots: ReadonlyArray<SlotTime>, time: string): SlotTime => {
  const t = minutesOf(time)
  return [...slots].sort((a, b) =>
    Math.abs(minutesOf(a.start_time) - t) - Math.abs(minutesOf(b.start_time) - t) ||
    minutesOf(a.start_time) - minutesOf(b.start_time)
  )[0]!
}

/** A slot edit: which slot, and a new start not taken by another slot (the service refuses those). */
const editArb = slotsArb.chain((slots) =>
  fc.tuple(
    fc.constantFrom(...slots),
    timeArb.filter((t) => !slots.some((s) => s.start_time === t)),
    fc.boolean(),
    remindersArb(slots)
  ).map(([slot, fresh, keep, reminders]) => ({ slots, slot, newStart: keep ? slot.start_time : fresh, reminders }))
)

describe("slotOf", () => {
  it.prop("is the slot with the latest start at or before the time, else the first slot", [slotsArb.chain((slots) => fc.tuple(fc.constant(slots), timeArb))], ([[slots, time]]) => {
    expect(slotOf(slots, time)?.id).toBe(owner(slots, time))
  })

  it("examples with the default slots", () => {
    const slots = [
      { id: 3, start_time: "12:00" },
      { id: 1, start_time: "07:00" },
      { id: 5, start_time: "20:30" },
      { id: 2, start_time: "09:00" },
      { id: 4, start_time: "16:00" }
    ]
    expect(slotOf(slots, "06:59")?.id).toBe(1) // before the first slot
    expect(slotOf(slots, "07:00")?.id).toBe(1)
    expect(slotOf(slots, "08:59")?.id).toBe(1)
    expect(slotOf(slots, "09:00")?.id).toBe(2)
    expect(slotOf(slots, "20:29")?.id).toBe(4)
    expect(slotOf(slots, "23:59")?.id).toBe(5)
    expect(slotOf([], "10:00")).toBeUndefined()
  })
})

describe("nearestSlot", () => {
  it.prop("is the slot at the smallest distance, ties to the earlier one", [slotsArb.chain((slots) => fc.tuple(fc.constant(slots), timeArb))], ([[slots, time]]) => {
    expect(nearestSlot(slots, time)).toEqual(nearest(slots, time))
  })

  it("a tie goes to the earlier slot whatever the input order", () => {
    const slots = [{ id: 2, start_time: "12:00" }, { id: 1, start_time: "08:00" }]
    expect(nearestSlot(slots, "10:00")?.id).toBe(1)
    expect(nearestSlot([...slots].reverse(), "10:00")?.id).toBe(1)
    expect(nearestSlot(slots, "10:01")?.id).toBe(2)
    expect(nearestSlot(slots, "09:59")?.id).toBe(1)
    expect(nearestSlot([], "10:00")).toBeUndefined()
  })
})

describe("movesForEdit", () => {
  it.prop("only reminders of the edited slot move, and only to the new start", [editArb], ([e]) => {
    const moves = movesForEdit(e.slots, e.slot.id, e.newStart, e.reminders)
    for (const move of moves) {
      const reminder = e.reminders.find((r) => r.id === move.reminderId)!
      expect(owner(e.slots, reminder.time)).toBe(e.slot.id)
      expect(move.to).toBe(e.newStart)
    }
    expect(new Set(moves.map((m) => m.reminderId)).size).toBe(moves.length)
  })

  it.prop("reminders of other slots never move", [editArb], ([e]) => {
    const moved = new Set(movesForEdit(e.slots, e.slot.id, e.newStart, e.reminders).map((m) => m.reminderId))
    for (const r of e.reminders) if (owner(e.slots, r.time) !== e.slot.id) expect(moved.has(r.id)).toBe(false)
  })

  it.prop("a reminder exactly on the old start always moves to the new start", [editArb.filter((e) => e.newStart !== e.slot.start_time)], ([e]) => {
    const onStart = { id: 1, time: e.slot.start_time }
    expect(movesForEdit(e.slots, e.slot.id, e.newStart, [onStart, ...e.reminders]).find((m) => m.reminderId === 1))
      .toEqual({ reminderId: 1, to: e.newStart })
  })

  it.prop("a reminder inside the slot keeps its time unless the new boundaries put it in another slot", [editArb], ([e]) => {
    const after = e.slots.map((s) => (s.id === e.slot.id ? { ...s, start_time: e.newStart } : s))
    const moves = movesForEdit(e.slots, e.slot.id, e.newStart, e.reminders)
    for (const r of e.reminders) {
      if (owner(e.slots, r.time) !== e.slot.id || r.time === e.slot.start_time) continue
      const stays = owner(after, r.time) === e.slot.id
      expect(moves.some((m) => m.reminderId === r.id)).toBe(!stays)
    }
  })

  it.prop("afterwards every reminder of the edited slot still belongs to it", [editArb], ([e]) => {
    const after = e.slots.map((s) => (s.id === e.slot.id ? { ...s, start_time: e.newStart } : s))
    const moves = movesForEdit(e.slots, e.slot.id, e.newStart, e.reminders)
    for (const r of e.reminders) {
      if (owner(e.slots, r.time) !== e.slot.id) continue
      const time = moves.find((m) => m.reminderId === r.id)?.to ?? r.time
      expect(owner(after, time)).toBe(e.slot.id)
    }
  })

  it.prop("an unchanged start time or an unknown slot moves nothing", [editArb], ([e]) => {
    expect(movesForEdit(e.slots, e.slot.id, e.slot.start_time, e.reminders)).toEqual([])
    expect(movesForEdit(e.slots, -1, e.newStart, e.reminders)).toEqual([])
  })

  it("examples: Morning 09:00 (until Midday 12:00) moves to 10:00, then to 08:00", () => {
    const slots = [{ id: 1, start_time: "07:00" }, { id: 2, start_time: "09:00" }, { id: 3, start_time: "12:00" }]
    const reminders = [
      { id: 1, time: "09:00" }, // on the old start
      { id: 2, time: "09:30" }, // now before the new start: falls to 07:00's slot, so it moves
      { id: 3, time: "10:30" }, // still inside: keeps its time
      { id: 4, time: "07:30" }, // another slot
      { id: 5, time: "12:00" }, // another slot
      { id: 6, time: "10:00" } // inside, exactly on the new start: already there
    ]
    expect(movesForEdit(slots, 2, "10:00", reminders)).toEqual([{ reminderId: 1, to: "10:00" }, { reminderId: 2, to: "10:00" }])
    // Moving earlier keeps every inside reminder inside; 07:30 belongs to 07:00's slot and stays put.
    expect(movesForEdit(slots, 2, "08:00", reminders)).toEqual([{ reminderId: 1, to: "08:00" }])
    // Moving past Midday: everything of the slot ends up under 12:00's slot, so all of it moves.
    expect(movesForEdit(slots, 2, "13:00", reminders)).toEqual([
      { reminderId: 1, to: "13:00" },
      { reminderId: 2, to: "13:00" },
      { reminderId: 3, to: "13:00" },
      { reminderId: 6, to: "13:00" }
    ])
  })
})

describe("movesForDelete", () => {
  const deleteArb = slotsArb.filter((slots) => slots.length >= 2).chain((slots) =>
    fc.tuple(fc.constant(slots), fc.constantFrom(...slots), remindersArb(slots))
  )

  it.prop("each reminder of the deleted slot goes to the start of the nearest remaining slot; no other reminder moves", [deleteArb], ([[slots, slot, reminders]]) => {
    const remaining = slots.filter((s) => s.id !== slot.id)
    const moves = movesForDelete(slots, slot.id, reminders)
    for (const r of reminders) {
      const move = moves.find((m) => m.reminderId === r.id)
      if (owner(slots, r.time) !== slot.id) {
        expect(move).toBeUndefined()
        continue
      }
      const target = nearest(remaining, r.time)
      // A reminder of the deleted slot never sits on another slot's start, so it always moves.
      expect(move).toEqual({ reminderId: r.id, to: target.start_time, slotId: target.id })
    }
  })

  it("examples: ties go to the earlier slot", () => {
    const slots = [{ id: 1, start_time: "08:00" }, { id: 2, start_time: "10:00" }, { id: 3, start_time: "12:00" }]
    const reminders = [{ id: 1, time: "10:00" }, { id: 2, time: "11:00" }, { id: 3, time: "11:01" }, { id: 4, time: "08:30" }]
    expect(movesForDelete(slots, 2, reminders)).toEqual([
      { reminderId: 1, to: "08:00", slotId: 1 },
      { reminderId: 2, to: "12:00", slotId: 3 },
      { reminderId: 3, to: "12:00", slotId: 3 }
    ])
    // The first slot goes: its early reminders go to the next one.
    expect(movesForDelete(slots, 1, [{ id: 9, time: "06:00" }, { id: 4, time: "08:30" }])).toEqual([
      { reminderId: 9, to: "10:00", slotId: 2 },
      { reminderId: 4, to: "10:00", slotId: 2 }
    ])
    // Distances are plain minutes within the day: 23:50 is far from 00:10.
    const night = [{ id: 1, start_time: "00:10" }, { id: 2, start_time: "20:00" }, { id: 3, start_time: "23:50" }]
    expect(movesForDelete(night, 3, [{ id: 5, time: "23:55" }])).toEqual([{ reminderId: 5, to: "20:00", slotId: 2 }])
  })
})

describe("isValidClock", () => {
  it.prop("accepts every HH:MM of the day", [fc.integer({ min: 0, max: 1439 })], ([m]) => {
    expect(isValidClock(clock(m))).toBe(true)
  })

  it("refuses anything else", () => {
    for (const bad of ["24:00", "7:00", "07:60", "07:00:00", "0700", "", "ab:cd", " 07:00"]) expect(isValidClock(bad)).toBe(false)
  })
})
