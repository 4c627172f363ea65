import { Effect, Layer, Schedule } from "effect"
import { logFailure } from "../sql/DatabaseFailures.js"
import { forkWatched } from "../system/Liveness.js"
import { MissedReminders } from "./MissedReminders.js"

/** Missed reminders are checked every minute, so a reminder is never a minute stale. */
export const reminderSweepSchedule = Schedule.spaced("1 minute")

/** One sweep of missed recurring reminders (`MissedReminders.rollForward`); returns how many moved. */
export const rollForwardMissedReminders = Effect.flatMap(MissedReminders, (reminders) => reminders.rollForward)

export const ReminderRollForwardLive = Layer.scopedDiscard(
  forkWatched("reminder_roll_forward")(
    rollForwardMissedReminders.pipe(
      Effect.catchAllCause((cause) => logFailure("Reminder roll-forward failed", cause)),
      Effect.repeat(reminderSweepSchedule)
    )
  )
)
