import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Either } from "effect"
import { nextOccurrence } from "../domain/Occurrences.js"
import { Mutations } from "./Mutations.js"
import { now as clockNow } from "./ServiceClock.js"
import { TasksTable } from "./Tables.js"
import { missedReminders } from "./TaskRolloverSql.js"

/**
 * A recurring reminder whose time has passed rolls forward to its next occurrence after
 * now on its own: no completion is recorded and nothing is undoable (spec §3, reminders 6).
 */
export class MissedReminders extends Effect.Service<MissedReminders>()("steady/MissedReminders", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const mutations = yield* Mutations

    /** One sweep; returns how many reminders moved. */
    const rollForward = Effect.gen(function*() {
      const now = yield* clockNow
      const missed = yield* missedReminders(sql, now)
      let moved = 0
      for (const reminder of missed) {
        const found = nextOccurrence(
          { rule: reminder.rrule, zone: reminder.timezone, anchorTime: reminder.anchor_time },
          new Date(reminder.series_start_at ?? reminder.due_at),
          now
        )
        if (Either.isLeft(found)) {
          // A rule stored before today's validation: skip this row, keep rolling the others.
          yield* Effect.logWarning(`Reminder ${reminder.id} not rolled forward: rrule ${found.left}`)
          continue
        }
        const next = found.right
        if (next === undefined) continue
        const user = { id: reminder.user_id, username: reminder.username, timezone: reminder.timezone }
        yield* mutations.run({ user, action: "reminder_roll", undoable: false }, (tx) =>
          Effect.gen(function*() {
            // Re-read under the lock: the user may have acted on it since the scan.
            const current = yield* tx.lock(TasksTable, reminder.id)
            if (current === undefined || current.due_at !== reminder.due_at || current.done) return
            yield* tx.update(TasksTable, reminder.id, {
              due_at: next.toISOString(),
              original_due_at: next.toISOString(),
              previous_due_at: reminder.due_at
            })
            moved++
          }))
      }
      if (moved > 0) yield* Effect.logInfo(`Rolled ${moved} missed reminder(s) forward`)
      return moved
    }).pipe(Effect.orDie, Effect.withSpan("Scheduler.rollForwardMissedReminders"))

    return { rollForward } as const
  })
}) {}
