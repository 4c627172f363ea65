import { Effect, Option } from "effect"
import { Unauthorized } from "../kernel/Errors.js"
import { Task } from "../tasks/Task.js"
import { Credentials } from "../accounts/Credentials.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { TaskLifecycle } from "../lifecycle/TaskLifecycle.js"
import { Tasks } from "../tasks/Tasks.js"
import type { TaskId } from "../kernel/Ids.js"

export type NotificationAction = "done" | "snooze" | "snooze30" | "snooze2h" | "delete"

const HOUR = 3_600_000

const TASK_KEYS = Object.keys(Task.fields) as ReadonlyArray<keyof Task>

/**
 * CONTRACT §8: `task` is a Task. The lifecycle answers add their own fields (was_recurring,
 * previous_due_at, description, message), which belong to the single-task endpoints only.
 */
const asTask = (result: Task): Task => Object.fromEntries(TASK_KEYS.map((key) => [key, result[key]])) as Task

/**
 * CONTRACT §8: snooze30 is now + 30 minutes exactly; snooze and snooze2h are now + 1 and
 * + 2 hours, each rounded to the nearest whole hour.
 */
export const snoozeUntil = (action: "snooze" | "snooze30" | "snooze2h", now: Date): Date => {
  if (action === "snooze30") return new Date(now.getTime() + 30 * 60_000)
  const target = now.getTime() + (action === "snooze" ? 1 : 2) * HOUR
  return new Date(Math.round(target / HOUR) * HOUR)
}

/** Actions from a push notification, authenticated by the API token in the body. */
export class Notifications extends Effect.Service<Notifications>()("steady/Notifications", {
  effect: Effect.gen(function*() {
    const credentials = yield* Credentials
    const lifecycle = yield* TaskLifecycle
    const tasks = yield* Tasks

    const act = Effect.fnUntraced(function*(token: string, action: NotificationAction, taskId: TaskId) {
      const found = yield* credentials.verifyToken(token)
      if (Option.isNone(found)) return yield* Effect.fail(new Unauthorized({ message: "Invalid API token" }))
      const user = found.value.user
      switch (action) {
        case "done":
          return { action, task_id: taskId, task: asTask((yield* lifecycle.done(user, taskId)).value) }
        case "delete":
          return { action, task_id: taskId, task: asTask(yield* tasks.trash(user, taskId)) }
        default: {
          const until = snoozeUntil(action, yield* clockNow)
          const task = yield* lifecycle.snooze(user, taskId, until, { allowPastDeadline: true, capAtDeadline: false })
          return { action, task_id: taskId, until: until.toISOString(), task: asTask(task) }
        }
      }
    })

    return { act } as const
  })
}) {}
