import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Either } from "effect"
import type { UserId } from "../kernel/Ids.js"
import { nextOccurrence } from "../recurrence/Occurrences.js"
import { Mutations } from "../pipeline/Mutations.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { TasksTable } from "../pipeline/Tables.js"
import { type MissedReminder, missedReminders, MISSED_REMINDERS_PAGE, stopRolling } from "./TaskRolloverSql.js"

/**
 * Reminders one user may have rolled in one sweep (a transaction each); the rest wait for the
 * next sweep, a minute later. More than anyone keeps, so after an outage a user's reminders
 * all roll at once; a user with thousands cannot keep everyone else's waiting behind theirs.
 */
export const ROLLS_PER_USER_PER_SWEEP = 100

/**
 * A recurring reminder whose time has passed rolls forward to its next occurrence after
 * now on its own: no completion is recorded and nothing is undoable (spec §3, reminders 6).
 *
 * One sweep pages through every missed reminder with an id cursor. A reminder with nothing to
 * roll to — its series has ended (COUNT spent, UNTIL passed) or its stored rule is refused —
 * is stopped (`roll_stopped_at`, migration 0031): it stays as the user sees it, its last
 * occurrence still its due date, waiting like a missed one-off reminder until completed, and
 * no sweep reads it again until its schedule changes.
 */
export class MissedReminders extends Effect.Service<MissedReminders>()("steady/MissedReminders", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const mutations = yield* Mutations

    /** Moves one reminder to `next`; false when the user acted on it since the scan. */
    const roll = (reminder: MissedReminder, next: Date) => {
      const user = { id: reminder.user_id, username: reminder.username, timezone: reminder.timezone }
      return mutations.run({ user, action: "reminder_roll", undoable: false }, (tx) =>
        Effect.gen(function*() {
          // Re-read under the lock: the user may have acted on it since the scan.
          const current = yield* tx.lock(TasksTable, reminder.id)
          if (current === undefined || current.due_at !== reminder.due_at || current.done) return false
          yield* tx.update(TasksTable, reminder.id, {
            due_at: next.toISOString(),
            original_due_at: next.toISOString(),
            previous_due_at: reminder.due_at
          })
          return true
        }))
    }

    /** One sweep; returns how many reminders moved. */
    const rollForward = Effect.gen(function*() {
      const now = yield* clockNow
      const rolls = new Map<UserId, number>()
      /** Users who had their share of this sweep: later pages leave their reminders out. */
      const served: Array<UserId> = []
      let after = 0
      let moved = 0
      let stopped = 0
      while (true) {
        const page = yield* missedReminders(sql, now, after, MISSED_REMINDERS_PAGE, served)
        const stops: Array<MissedReminder> = []
        const due: Array<readonly [MissedReminder, Date]> = []
        for (const reminder of page) {
          const count = rolls.get(reminder.user_id) ?? 0
          if (count >= ROLLS_PER_USER_PER_SWEEP) continue
          const found = nextOccurrence(
            { rule: reminder.rrule, zone: reminder.timezone, anchorTime: reminder.anchor_time },
            new Date(reminder.series_start_at ?? reminder.due_at),
            now
          )
          if (Either.isLeft(found)) {
            // A rule stored before today's validation: stop it, keep rolling the others.
            yield* Effect.logWarning(`Reminder ${reminder.id} stops rolling forward: rrule ${found.left}`)
            stops.push(reminder)
          } else if (found.right === undefined) {
            stops.push(reminder)
          } else {
            due.push([reminder, found.right])
            rolls.set(reminder.user_id, count + 1)
            if (count + 1 === ROLLS_PER_USER_PER_SWEEP) served.push(reminder.user_id)
          }
        }
        if (stops.length > 0) {
          yield* stopRolling(sql, now, stops)
          stopped += stops.length
        }
        for (const [reminder, next] of due) {
          if (yield* roll(reminder, next)) moved++
        }
        const last = page.at(-1)
        if (last === undefined || page.length < MISSED_REMINDERS_PAGE) break
        after = last.id
      }
      if (moved > 0) yield* Effect.logInfo(`Rolled ${moved} missed reminder(s) forward`)
      if (stopped > 0) yield* Effect.logInfo(`Stopped ${stopped} reminder(s) with no occurrence to roll forward to`)
      return moved
    }).pipe(Effect.orDie, Effect.withSpan("Scheduler.rollForwardMissedReminders"))

    return { rollForward } as const
  })
}) {}
