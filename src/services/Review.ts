import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Ref } from "effect"
import { type BulkCounts, expandTargets } from "../domain/Bulk.js"
import { Conflict, NotFound, ValidationError } from "../domain/Errors.js"
import { BulkActions } from "./BulkActions.js"
import type { CurrentUserShape } from "./CurrentUser.js"
import * as Crypto from "node:crypto"
import { now as clockNow } from "./ServiceClock.js"
import { TaskQueries } from "./TaskQueries.js"
import { isNotQuota, isOpen } from "./WireSql.js"

/** Spec §8: sessions older than an hour are purged when a new one starts. */
export const REVIEW_SESSION_LIFETIME_MS = 60 * 60 * 1000
const WINDOW_MS = 24 * 60 * 60 * 1000

interface Session {
  readonly userId: number
  readonly createdAt: number
  /** seq → task id */
  readonly tasks: ReadonlyMap<number, number>
}

export interface ReviewAction {
  readonly type: "done" | "snooze" | "skip"
  readonly targets: ReadonlyArray<string>
  readonly until?: Date | undefined
}

/**
 * Review sessions live in this process's memory: they are lost on restart, and with several
 * instances a session only exists on the instance that numbered it.
 */
export class Review extends Effect.Service<Review>()("steady/Review", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const queries = yield* TaskQueries
    const bulk = yield* BulkActions
    const sessions = yield* Ref.make(new Map<string, Session>())

    const start = (user: CurrentUserShape) =>
      Effect.gen(function*() {
        const now = yield* clockNow
        const horizon = new Date(now.getTime() + WINDOW_MS).toISOString()
        const rows = yield* Effect.orDie(sql<{ id: number; title: string; due_at: string; priority: number; rrule: string | null; labels: ReadonlyArray<string>; overdue: boolean }>`
          SELECT t.id, t.title, steady_iso(t.due_at) AS due_at, t.priority, t.rrule, t.labels,
                 (${queries.overdue(user.id, now)}) AS overdue
          FROM tasks t
          WHERE t.user_id = ${user.id} AND ${isOpen(sql)} AND NOT t.is_reminder AND ${isNotQuota(sql)}
            AND t.due_at < ${horizon}::timestamptz
          ORDER BY t.due_at, t.id`)
        const overdue = rows.filter((r) => r.overdue)
        const upcoming = rows.filter((r) => !r.overdue)
        const numbered = [...overdue, ...upcoming].map((r, index) => ({ ...r, seq: index + 1 }))
        const id = Crypto.randomUUID()
        const created = now.getTime()
        yield* Ref.update(sessions, (map) => {
          const next = new Map([...map].filter(([, s]) => created - s.createdAt <= REVIEW_SESSION_LIFETIME_MS))
          next.set(id, { userId: user.id, createdAt: created, tasks: new Map(numbered.map((r) => [r.seq, r.id])) })
          return next
        })
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
    const execute = (user: CurrentUserShape, sessionId: string, actions: ReadonlyArray<ReviewAction>) =>
      Effect.gen(function*() {
        const now = (yield* clockNow).getTime()
        const session = (yield* Ref.get(sessions)).get(sessionId)
        if (session === undefined || session.userId !== user.id || now - session.createdAt > REVIEW_SESSION_LIFETIME_MS) {
          return yield* Effect.fail(new Conflict({ message: "Unknown or expired review session; start a new one" }))
        }
        const plans: Array<{ action: ReviewAction; ids: Array<number> }> = []
        for (const [index, action] of actions.entries()) {
          if (action.type === "snooze" && action.until === undefined) {
            return yield* Effect.fail(ValidationError.field(`actions.${index}.until`, "snooze needs until"))
          }
          const numbers = expandTargets(action.targets)
          if (numbers === undefined) {
            return yield* Effect.fail(ValidationError.field(`actions.${index}.targets`, "targets are numbers (\"3\") or ranges (\"2-5\")"))
          }
          const ids: Array<number> = []
          for (const n of numbers) {
            const id = session.tasks.get(n)
            if (id === undefined) return yield* Effect.fail(new NotFound({ message: `Number ${n} is not in this review` }))
            ids.push(id)
          }
          plans.push({ action, ids })
        }
        yield* Ref.update(sessions, (map) => {
          const next = new Map(map)
          next.delete(sessionId)
          return next
        })
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
