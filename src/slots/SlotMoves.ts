/**
 * Which reminders a time-slot edit or deletion moves, and where (spec "Time slot edits",
 * CONTRACT §8). Pure: times are local `HH:MM` strings, which compare correctly as text.
 */

export interface SlotTime {
  readonly id: number
  readonly start_time: string
}

/** A reminder task: `Id` is its id's type (a branded `TaskId` in the service). */
export interface ReminderTime<Id extends number = number> {
  readonly id: Id
  /** The reminder's local time of day. */
  readonly time: string
}

export interface Move<Id extends number = number> {
  readonly reminderId: Id
  readonly to: string
}

const sorted = (slots: ReadonlyArray<SlotTime>) => [...slots].sort((a, b) => (a.start_time < b.start_time ? -1 : a.start_time > b.start_time ? 1 : a.id - b.id))

/** The slot a time belongs to: the latest start at or before it; before the first slot, the first. */
export const slotOf = (slots: ReadonlyArray<SlotTime>, time: string): SlotTime | undefined => {
  const ordered = sorted(slots)
  let found = ordered[0]
  for (const slot of ordered) if (slot.start_time <= time) found = slot
  return found
}

export const isValidClock = (time: string) => /^([01]\d|2[0-3]):[0-5]\d$/.test(time)

/**
 * Moving slot `slotId` to `newStart`: reminders that sat on its old start go to the new
 * start; reminders inside the slot keep their time unless the new boundaries put them in
 * another slot, then they go to the new start; nothing else moves.
 */
export const movesForEdit = <Id extends number>(
  slots: ReadonlyArray<SlotTime>,
  slotId: number,
  newStart: string,
  reminders: ReadonlyArray<ReminderTime<Id>>
): ReadonlyArray<Move<Id>> => {
  const slot = slots.find((s) => s.id === slotId)
  if (slot === undefined || slot.start_time === newStart) return []
  const after = slots.map((s) => (s.id === slotId ? { ...s, start_time: newStart } : s))
  const moves: Array<Move<Id>> = []
  for (const reminder of reminders) {
    if (slotOf(slots, reminder.time)?.id !== slotId) continue
    if (reminder.time === slot.start_time || slotOf(after, reminder.time)?.id !== slotId) {
      if (reminder.time !== newStart) moves.push({ reminderId: reminder.id, to: newStart })
    }
  }
  return moves
}

const minutes = (time: string) => Number(time.slice(0, 2)) * 60 + Number(time.slice(3, 5))

/** The remaining slot nearest a time; a tie goes to the earlier slot. */
export const nearestSlot = (remaining: ReadonlyArray<SlotTime>, time: string): SlotTime | undefined => {
  let best: SlotTime | undefined
  let bestDistance = Infinity
  for (const slot of sorted(remaining)) {
    const distance = Math.abs(minutes(slot.start_time) - minutes(time))
    if (distance < bestDistance) {
      best = slot
      bestDistance = distance
    }
  }
  return best
}

/** Deleting slot `slotId`: each of its reminders goes to the start of the remaining slot nearest its time. */
export const movesForDelete = <Id extends number>(
  slots: ReadonlyArray<SlotTime>,
  slotId: number,
  reminders: ReadonlyArray<ReminderTime<Id>>
): ReadonlyArray<Move<Id> & { readonly slotId: number }> => {
  const remaining = slots.filter((s) => s.id !== slotId)
  const moves: Array<Move<Id> & { slotId: number }> = []
  for (const reminder of reminders) {
    if (slotOf(slots, reminder.time)?.id !== slotId) continue
    const target = nearestSlot(remaining, reminder.time)
    if (target !== undefined && target.start_time !== reminder.time) {
      moves.push({ reminderId: reminder.id, to: target.start_time, slotId: target.id })
    }
  }
  return moves
}
