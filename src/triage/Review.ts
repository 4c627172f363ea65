import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { type BulkCounts, expandTargets } from "./Bulk.js"
import { Conflict, NotFound, ValidationError } from "../kernel/Errors.js"
import { AppConfig } from "../kernel/AppConfig.js"
import { BulkActions } from "./BulkActions.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import * as Crypto from "node:crypto"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { reviewRows } from "../tasks/TaskListSql.js"
import type { UserId } from "../kernel/Ids.js"
import { keepSession, storedSession, takeSession } from "./ReviewSessionsTable.js"

/** Spec §8: sessions older than an hour are purged when a new one starts. */
export const REVIEW_SESSION_LIFETIME_MS = 60 * 60 * 1000
const WINDOW_MS = 24 * 60 * 60 * 1000

const unknownSession = () => new Conflict({ message: "Unknown or expired review session; start a new one" })

export interface ReviewAction {
  readonly type: "done" | "snooze" | "skip"
  readonly targets: ReadonlyArray<string>
  readonly until?: Date | undefined
}

/**
 * Review sessions live in the database (table review_sessions), so any instance can execute
 * a session another one numbered and a restart loses none. Each user has at most one (a new
 * review replaces the last); starting one purges those past their hour, and the table holds
 * at most `config.reviewSessionLimit` over all users and instances, the oldest dropped first.
 */
export class Review extends Effect.Service<Review>()("steady/Review", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const bulk = yield* BulkActions
    const { reviewSessionLimit } = yield* AppConfig

    /** One row per user (the upsert replaces the last session), then the purge and the cap. */
    const keep = (id: string, userId: UserId, createdAt: Date, tasks: ReadonlyArray<number>) =>
      keepSession(
        sql,
        { id, userId, at: createdAt.toISOString(), tasks },
        new Date(createdAt.getTime() - REVIEW_SESSION_LIFETIME_MS).toISOString(),
        reviewSessionLimit
      )

    const stored = (sessionId: string) => storedSession(sql, sessionId)

    /** Taken once: of two executes racing on any instances, one gets the session. */
    const take = (sessionId: string) => takeSession(sql, sessionId)

    const start = Effect.fnUntraced(function*(user: CurrentUserShape) {
      const now = yield* clockNow
      const horizon = new Date(now.getTime() + WINDOW_MS).toISOString()
      const rows = yield* reviewRows(sql, user.id, now, horizon)
      const overdue = rows.filter((r) => r.overdue)
      const upcoming = rows.filter((r) => !r.overdue)
      const numbered = [...overdue, ...upcoming].map((r, index) => ({ ...r, seq: index + 1 }))
      const id = Crypto.randomUUID()
      yield* keep(id, user.id, now, numbered.map((r) => r.id))
      const item = (r: (typeof numbered)[number]) => ({
        seq: r.seq,
        id: r.id,
        title: r.title,
        due_at: r.due_at,
        priority: r.priority,
        rrule: r.rrule,
        labels: r.labels
      })
      return {
        session_id: id,
        groups: [
          { label: "Overdue", tasks: numbered.filter((r) => r.overdue).map(item) },
          { label: "Due in the next 24 hours", tasks: numbered.filter((r) => !r.overdue).map(item) }
        ],
        total_tasks: numbered.length
      }
    })

    /**
     * Everything is checked before anything runs; a refused execute keeps the session. Each
     * action runs through the bulk actions, so it is one undo step like them.
     */
    const execute = Effect.fnUntraced(function*(user: CurrentUserShape, sessionId: string, actions: ReadonlyArray<ReviewAction>) {
      const now = (yield* clockNow).getTime()
      const session = yield* stored(sessionId)
      if (session === undefined || session.user_id !== user.id || now - Date.parse(session.created_at) > REVIEW_SESSION_LIFETIME_MS) {
        return yield* Effect.fail(unknownSession())
      }
      const plans: Array<{ action: ReviewAction; ids: Array<number> }> = []
      for (const [index, action] of actions.entries()) {
        if (action.type === "snooze" && action.until === undefined) {
          return yield* Effect.fail(ValidationError.field(`actions.${index}.until`, "snooze needs until"))
        }
        const expanded = expandTargets(action.targets, session.tasks.length)
        if (expanded._tag === "Invalid") {
          return yield* Effect.fail(ValidationError.field(`actions.${index}.targets`, "targets are numbers (\"3\") or ranges (\"2-5\")"))
        }
        if (expanded._tag === "Beyond") {
          return yield* Effect.fail(new NotFound({ message: `Number ${expanded.number} is not in this review` }))
        }
        plans.push({ action, ids: expanded.numbers.map((n) => session.tasks[n - 1]!) })
      }
      if (!(yield* take(sessionId))) return yield* Effect.fail(unknownSession())
      const results = []
      let total = 0
      for (const { action, ids } of plans) {
        const counts: BulkCounts = ids.length === 0
          ? { tasks_affected: 0 } as BulkCounts
          : action.type === "done"
          ? yield* bulk.done(user, ids, false).pipe(Effect.catchTag("ValidationError", () => Effect.succeed({ tasks_affected: 0 } as BulkCounts)))
          : action.type === "snooze"
          ? yield* bulk.snooze(user, ids, action.until!)
          : yield* bulk.skip(user, ids)
        results.push({ type: action.type, task_ids: ids, count: counts.tasks_affected })
        total += counts.tasks_affected
      }
      return { executed: true as const, results, total_affected: total }
    })

    return { start, execute } as const
  })
}) {}
