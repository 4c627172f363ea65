import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { growthItem, staleTargetAge, type TriageTask } from "../domain/Triage.js"
import type { CurrentUserShape } from "./CurrentUser.js"
import { now as clockNow } from "./ServiceClock.js"
import { TaskQueries } from "./TaskQueries.js"
import { isNotQuota, isOpen, wireArray } from "./WireSql.js"
import type { UserId } from "../domain/Ids.js"

/** GET /api/process: read-only, rule-based, only the caller's own open tasks, never reminders or quotas. */
export class Triage extends Effect.Service<Triage>()("steady/Triage", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const queries = yield* TaskQueries

    const own = (userId: UserId) =>
      sql`t.user_id = ${userId} AND ${isOpen(sql)} AND NOT t.is_reminder AND ${isNotQuota(sql)}`

    /**
     * Wire JSON texts by id. One array parameter, however many ids: growth can hold most of a
     * large list's tasks, past the 65,535 parameters a statement may have.
     */
    const wireMany = (ids: ReadonlyArray<number>) =>
      ids.length === 0
        ? Effect.succeed(new Map<number, string>())
        : sql<{ id: number; task: string }>`
            SELECT t.id, steady_task_wire_text(t) AS task FROM tasks t WHERE t.id = ANY(${`{${ids.join(",")}}`}::int[])`.pipe(
          Effect.map((rows) => new Map(rows.map((r) => [r.id, r.task]))),
          Effect.orDie
        )

    /**
     * The whole answer as JSON text: the tasks are rendered by the database as text and spliced
     * in, not parsed into objects and written out again (the Inbox list alone is every task
     * still in the Inbox).
     */
    const process = (user: CurrentUserShape) =>
      Effect.gen(function*() {
        const now = yield* clockNow
        const inboxId = yield* queries.inboxOf(user.id)
        const [inbox] = yield* Effect.orDie(sql<{ tasks: string }>`
          SELECT ${wireArray(sql, "t.wire_text", "t.created_at, t.id")} AS tasks FROM tasks t
          WHERE ${own(user.id)} AND t.project_id = ${inboxId}`)
        // In due order only so that the one plan without a sort is the user's range of
        // tasks_open_by_due: a never-analyzed database may otherwise walk every user's open
        // tasks through tasks_open_by_project. Both lists are sorted below, ties by id.
        const candidates = yield* Effect.orDie(sql<TriageTask>`
          SELECT t.id, t.horizon, steady_iso(t.horizon_set_at) AS horizon_set_at, steady_iso(t.created_at) AS created_at,
                 steady_iso(t.target_at) AS target_at, t.target_auto, steady_iso(t.segment_targeted_at) AS segment_targeted_at,
                 steady_iso(t.deadline_at) AS deadline_at, t.priority
          FROM tasks t WHERE ${own(user.id)} AND t.rrule IS NULL ORDER BY t.due_at, t.id`)
        const growth = candidates.flatMap((t) => {
          const item = growthItem(t, now)
          return item === undefined ? [] : [item]
        }).sort((a, b) => b.days_on_horizon - a.days_on_horizon || a.id - b.id)
        const stale = candidates.flatMap((t) => {
          const age = staleTargetAge(t, now)
          return age === undefined ? [] : [{ id: t.id, age_days: age, deadline: t.deadline_at !== null }]
        }).sort((a, b) => b.age_days - a.age_days || a.id - b.id)
        const tasks = yield* wireMany([...growth.map((g) => g.id), ...stale.map((s) => s.id)])
        const task = (id: number) => tasks.get(id)!
        const staleList = (withDeadline: boolean) =>
          `[${stale.filter((s) => s.deadline === withDeadline).map((s) => `{"task":${task(s.id)},"age_days":${s.age_days}}`).join(",")}]`
        const growthList = `[${
          growth.map(({ id, ...rest }) => `{"task":${task(id)},${JSON.stringify(rest).slice(1)}`).join(",")
        }]`
        return `{"data":{"inbox_project_id":${inboxId},"inbox":${inbox?.tasks ?? "[]"},"growth":${growthList},` +
          `"stale_targets":${staleList(false)},"stale_targets_with_deadline":${staleList(true)}}}`
      })

    return { process } as const
  })
}) {}
