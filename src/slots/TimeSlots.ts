import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { NotFound, ValidationError } from "../kernel/Errors.js"
import type { TaskRow, TimeSlotRow, Writes } from "../pipeline/Rows.js"
import { instantOf, localParts, localTimeOfDay } from "../kernel/LocalTime.js"
import { isValidClock, type Move, movesForDelete, movesForEdit, nearestSlot, type ReminderTime } from "./SlotMoves.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { Mutations } from "../pipeline/Mutations.js"
import { type Tx } from "../pipeline/Tx.js"
import { PreferencesService } from "../accounts/PreferencesService.js"
import { TasksTable, TimeSlotsTable } from "../pipeline/Tables.js"
import { lockOpenReminders, lockQuotasPromptingIn } from "../tasks/TasksTable.js"
import { lockedSlotsOf, slotById, slotsOf } from "./TimeSlotsTable.js"
import type { TaskId, TimeSlotId, UserId } from "../kernel/Ids.js"

const Label = (label: string) => label.trim()

/** Reminder time slots (spec §2.4, §4.4; CONTRACT §8). */
export class TimeSlots extends Effect.Service<TimeSlots>()("steady/TimeSlots", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const mutations = yield* Mutations
    const preferences = yield* PreferencesService

    /** sort_order follows start_time: slots are always in time order, never reordered by hand. */
    const renumber = Effect.fnUntraced(function*(tx: Tx, userId: UserId) {
      const slots = yield* slotsOf(sql, userId)
      for (const [index, slot] of slots.entries()) {
        if (slot.sort_order !== index) yield* tx.update(TimeSlotsTable, slot.id, { sort_order: index })
      }
    })

    const list = (user: CurrentUserShape) =>
      Effect.map(slotsOf(sql, user.id), (time_slots) => ({ time_slots, count: time_slots.length }))

    const checkFree = (slots: ReadonlyArray<TimeSlotRow>, startTime: string, except?: number) =>
      slots.some((s) => s.start_time === startTime && s.id !== except)
        ? Effect.fail(ValidationError.field("start_time", `Another slot already starts at ${startTime}`))
        : Effect.void

    const create = (user: CurrentUserShape, label: string, startTime: string) =>
      mutations.run({ user, action: "time_slot_create" }, (tx) => createBody(tx, user, label, startTime))
    const createBody = Effect.fnUntraced(function*(tx: Tx, user: CurrentUserShape, label: string, startTime: string) {
      const slots = yield* lockedSlotsOf(sql, user.id)
      yield* checkFree(slots, startTime)
      const row = yield* tx.insert(TimeSlotsTable, {
        user_id: user.id,
        label: Label(label),
        start_time: startTime,
        sort_order: slots.length,
        created_at: tx.now.toISOString()
      })
      yield* renumber(tx, user.id)
      tx.describe(`Added the time slot '${Label(label)}' at ${startTime}`)
      return yield* slotById(sql, row.id)
    })

    /** The user's open reminders with their local time of day. */
    const remindersOf = (userId: UserId, zone: string) =>
      Effect.map(
        lockOpenReminders(sql, userId),
        (rows) =>
          rows.flatMap((r): Array<ReminderTime<TaskId> & { due_at: string | null }> => {
            const time = r.due_at !== null ? localTimeOfDay(new Date(r.due_at), zone) : r.anchor_time
            return time === null ? [] : [{ id: r.id, time, due_at: r.due_at }]
          })
      )

    /** A reminder moved to a new time of day keeps its local date; its anchor follows. */
    const moveReminders = (
      tx: Tx,
      zone: string,
      reminders: ReadonlyArray<{ id: TaskId; due_at: string | null }>,
      moves: ReadonlyArray<Move<TaskId>>
    ) =>
      Effect.gen(function*() {
        for (const move of moves) {
          const reminder = reminders.find((r) => r.id === move.reminderId)!
          const writes: Writes<TaskRow> = { anchor_time: move.to }
          if (reminder.due_at !== null) {
            const p = localParts(new Date(reminder.due_at), zone)
            const due = instantOf(zone, p.year, p.month, p.day, Number(move.to.slice(0, 2)), Number(move.to.slice(3, 5)))
            writes.due_at = due.toISOString()
            writes.original_due_at = due.toISOString()
          }
          yield* tx.update(TasksTable, move.reminderId, writes)
        }
        return moves.length
      })

    /** Quotas whose prompts start in this slot (configured, or by the user's default). */
    const quotasPromptingIn = (userId: UserId, slotId: number, isDefault: boolean) =>
      lockQuotasPromptingIn(sql, userId, slotId, isDefault)

    const lockSlot = (user: CurrentUserShape, id: TimeSlotId) =>
      Effect.flatMap(lockedSlotsOf(sql, user.id), (slots) => {
        const slot = slots.find((s) => s.id === id)
        return slot === undefined ? Effect.fail(NotFound.of("Time slot")) : Effect.succeed({ slot, slots })
      })

    /**
     * PATCH: a rename alone moves nothing and is not an undo step; a new start time moves
     * reminders (spec "Time slot edits") as one atomic undo entry `time_slot_edit`.
     */
    const update = Effect.fnUntraced(function*(user: CurrentUserShape, id: TimeSlotId, patch: { readonly label?: string | undefined; readonly start_time?: string | undefined }) {
      const prefs = yield* preferences.get(user)
      const known = (yield* slotsOf(sql, user.id)).find((s) => s.id === id)
      if (known === undefined) return yield* Effect.fail(NotFound.of("Time slot"))
      const moving = patch.start_time !== undefined && patch.start_time !== known.start_time
      const [result, undoId] = yield* mutations.runWithUndoId(
        { user, action: "time_slot_edit", undoable: moving },
        (tx) =>
          Effect.gen(function*() {
            const { slot, slots } = yield* lockSlot(user, id)
            const newStart = patch.start_time ?? slot.start_time
            yield* checkFree(slots, newStart, id)
            const reminders = yield* remindersOf(user.id, prefs.timezone)
            const moves = movesForEdit(slots, id, newStart, reminders)
            const writes: Writes<TimeSlotRow> = {}
            if (patch.label !== undefined) writes.label = Label(patch.label)
            if (newStart !== slot.start_time) writes.start_time = newStart
            yield* tx.update(TimeSlotsTable, id, writes)
            const remindersMoved = yield* moveReminders(tx, prefs.timezone, reminders, moves)
            yield* renumber(tx, user.id)
            const isDefault = (prefs.quota_prompt_slot_id ?? prefs.default_reminder_slot_id ?? slots[0]?.id) === id
            const quotasMoved = newStart !== slot.start_time ? (yield* quotasPromptingIn(user.id, id, isDefault)).length : 0
            tx.describe(
              newStart !== slot.start_time
                ? `Moved the time slot '${slot.label}' from ${slot.start_time} to ${newStart}`
                : `Renamed the time slot '${slot.label}' to '${writes.label ?? slot.label}'`
            )
            return { slot: yield* slotById(sql, id), reminders_moved: remindersMoved, quotas_moved: quotasMoved }
          })
      )
      return { ...result, undo_id: undoId }
    })

    /** DELETE: reminders go to the nearest remaining slot; stored prompt slot ids follow. */
    const remove = Effect.fnUntraced(function*(user: CurrentUserShape, id: TimeSlotId) {
      const prefs = yield* preferences.get(user)
      const [result, undoId] = yield* mutations.runWithUndoId({ user, action: "time_slot_delete" }, (tx) =>
        Effect.gen(function*() {
          const { slot, slots } = yield* lockSlot(user, id)
          if (slots.length <= 1) return yield* Effect.fail(ValidationError.field("id", "The last time slot cannot be deleted"))
          const reminders = yield* remindersOf(user.id, prefs.timezone)
          const moves = movesForDelete(slots, id, reminders)
          const remindersMoved = yield* moveReminders(tx, prefs.timezone, reminders, moves)
          const heir = nearestSlot(slots.filter((s) => s.id !== id), slot.start_time)!
          const configured = yield* quotasPromptingIn(user.id, id, false)
          for (const quota of configured) {
            yield* tx.update(TasksTable, quota.id, { quota_prompt_config: { ...quota.quota_prompt_config, slot_id: heir.id } })
          }
          const before = yield* slotById(sql, id)
          yield* tx.remove(TimeSlotsTable, id)
          yield* renumber(tx, user.id)
          tx.describe(`Deleted the time slot '${slot.label}' (${slot.start_time})`)
          return { slot: before, reminders_moved: remindersMoved, quotas_moved: configured.length, heir: heir.id }
        }))
      // The user's own prompt/reminder slot settings follow too (preferences are not undo steps).
      const patch: { quota_prompt_slot_id?: number; default_reminder_slot_id?: number } = {}
      if (prefs.quota_prompt_slot_id === id) patch.quota_prompt_slot_id = result.heir
      if (prefs.default_reminder_slot_id === id) patch.default_reminder_slot_id = result.heir
      if (Object.keys(patch).length > 0) yield* preferences.update(user, patch)
      return {
        slot: result.slot,
        reminders_moved: result.reminders_moved,
        quotas_moved: result.quotas_moved,
        undo_id: undoId
      }
    })

    return { list, create, update, remove, isValidClock } as const
  })
}) {}
