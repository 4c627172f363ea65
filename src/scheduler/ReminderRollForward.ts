import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Either, Layer, Schedule } from "effect"
import type { UserId } from "../domain/Ids.js"
import { nextOccurrence } from "../domain/Occurrences.js"
import { forkWatched } from "../services/Liveness.js"
import { Mutations } from "../services/Mutations.js"
import { now as clockNow } from "../services/ServiceClock.js"
import { TasksTable } from "../services/Tables.js"
import { isNotQuota, isOpen } from "../services/WireSql.js"
import { logFailure } from "../services/DatabaseFailures.js"

/** Missed reminders are checked every minute, so a reminder is never a minute stale. */
export const reminderSweepSchedule = Schedule.spaced("1 minute")

interface MissedReminder {
  readonly id: number
  readonly user_id: number
  readonly username: string
  readonly timezone: string
  readonly rrule: string
  readonly anchor_time: string | null
  readonly due_at: string
  readonly series_start_at: string | null
}

/**
 * A recurring reminder whose time has passed rolls forward to its next occurrence after
 * now on its own: no completion is recorded and nothing is undoable (spec §3, reminders 6).
 */
/**
 * Up to 1,000 open recurring reminders whose time has passed, of every user: read from the
 * partial index of open recurring reminders (migration 0019), so the minutely sweep reads
 * those few rows, not every task (it was a scan of the whole table, ~2 s at a million tasks).
 */
export const missedReminders = (sql: SqlClient.SqlClient, now: Date) =>
  sql<MissedReminder>`
    SELECT t.id, t.user_id, u.username, u.timezone, t.rrule, t.anchor_time, steady_iso(t.due_at) AS due_at,
           steady_iso(t.series_start_at) AS series_start_at
    FROM tasks t JOIN users u ON u.id = t.user_id
    WHERE t.is_reminder AND t.rrule IS NOT NULL AND ${isNotQuota(sql)} AND ${isOpen(sql)}
      AND t.due_at < ${now.toISOString()}::timestamptz
    ORDER BY t.id LIMIT 1000`

export const rollForwardMissedReminders = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const mutations = yield* Mutations
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
    const user = { id: reminder.user_id as UserId, username: reminder.username, timezone: reminder.timezone }
    yield* mutations.run({ user, action: "reminder_roll", undoable: false }, (tx) =>
      Effect.gen(function*() {
        // Re-read under the lock: the user may have acted on it since the scan.
        const current = yield* tx.lock(TasksTable, reminder.id)
        if (current === undefined || current.due_at !== reminder.due_at || current.done === true) return
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

export const ReminderRollForwardLive = Layer.scopedDiscard(
  forkWatched("reminder_roll_forward")(
    rollForwardMissedReminders.pipe(
      Effect.catchAllCause((cause) => logFailure("Reminder roll-forward failed", cause)),
      Effect.repeat(reminderSweepSchedule)
    )
  )
)
