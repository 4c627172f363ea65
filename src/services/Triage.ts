import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { JsonValue } from "../domain/Json.js"
import { growthItem, staleTargetAge, type TriageTask } from "../domain/Triage.js"
import type { CurrentUserShape } from "./CurrentUser.js"
import { now as clockNow } from "./ServiceClock.js"
import { TaskQueries } from "./TaskQueries.js"
import { isNotQuota, isOpen } from "./WireSql.js"

/** GET /api/process: read-only, rule-based, only the caller's own open tasks, never reminders or quotas. */
export class Triage extends Effect.Service<Triage>()("steady/Triage", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const queries = yield* TaskQueries

    const own = (userId: number) =>
      sql`t.user_id = ${userId} AND ${isOpen(sql)} AND NOT t.is_reminder AND ${isNotQuota(sql)}`

    const wireMany = (ids: ReadonlyArray<number>) =>
      ids.length === 0
        ? Effect.succeed(new Map<number, JsonValue>())
        : sql<{ id: number; task: JsonValue }>`SELECT t.id, steady_task_json(t) AS task FROM tasks t WHERE t.id IN ${sql.in([...ids])}`.pipe(
          Effect.map((rows) => new Map(rows.map((r) => [r.id, r.task]))),
          Effect.orDie
        )

    const process = (user: CurrentUserShape) =>
      Effect.gen(function*() {
        const now = yield* clockNow
        const inboxId = yield* queries.inboxOf(user.id)
        const inbox = yield* Effect.orDie(sql<{ task: JsonValue }>`
          SELECT steady_task_json(t) AS task FROM tasks t
          WHERE ${own(user.id)} AND t.project_id = ${inboxId} ORDER BY t.created_at, t.id`)
        const candidates = yield* Effect.orDie(sql<TriageTask>`
          SELECT t.id, t.horizon, steady_iso(t.horizon_set_at) AS horizon_set_at, steady_iso(t.created_at) AS created_at,
                 steady_iso(t.target_at) AS target_at, t.target_auto, steady_iso(t.segment_targeted_at) AS segment_targeted_at,
                 steady_iso(t.deadline_at) AS deadline_at, t.priority
          FROM tasks t WHERE ${own(user.id)} AND t.rrule IS NULL ORDER BY t.id`)
        const growth = candidates.flatMap((t) => {
          const item = growthItem(t, now)
          return item === undefined ? [] : [item]
        }).sort((a, b) => b.days_on_horizon - a.days_on_horizon || a.id - b.id)
        const stale = candidates.flatMap((t) => {
          const age = staleTargetAge(t, now)
          return age === undefined ? [] : [{ id: t.id, age_days: age, deadline: t.deadline_at !== null }]
        }).sort((a, b) => b.age_days - a.age_days || a.id - b.id)
        const tasks = yield* wireMany([...growth.map((g) => g.id), ...stale.map((s) => s.id)])
        return {
          inbox_project_id: inboxId,
          inbox: inbox.map((r) => r.task),
          growth: growth.map(({ id, ...rest }) => ({ task: tasks.get(id)!, ...rest })),
          stale_targets: stale.filter((s) => !s.deadline).map((s) => ({ task: tasks.get(s.id)!, age_days: s.age_days })),
          stale_targets_with_deadline: stale.filter((s) => s.deadline).map((s) => ({ task: tasks.get(s.id)!, age_days: s.age_days }))
        }
      })

    return { process } as const
  })
}) {}
