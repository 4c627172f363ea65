import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { growthItem, staleTargetAge } from "./Triage.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { TaskQueries } from "../tasks/TaskQueries.js"
import { tasksWireJson, triageCandidates, triageInboxJson } from "../tasks/TaskListSql.js"

/** GET /api/process: read-only, rule-based, only the caller's own open tasks, never reminders or quotas. */
export class Triage extends Effect.Service<Triage>()("steady/Triage", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const queries = yield* TaskQueries

    /** Wire JSON texts by id (`tasksWireJson`). */
    const wireMany = (ids: ReadonlyArray<number>) =>
      ids.length === 0 ? Effect.succeed(new Map<number, string>()) : tasksWireJson(sql, ids)

    /**
     * The whole answer as JSON text: the tasks are rendered by the database as text and spliced
     * in, not parsed into objects and written out again (the Inbox list alone is every task
     * still in the Inbox).
     */
    const process = Effect.fnUntraced(function*(user: CurrentUserShape) {
      const now = yield* clockNow
      const inboxId = yield* queries.inboxOf(user.id)
      const inbox = yield* triageInboxJson(sql, user.id, inboxId)
      // Read in due order (see `triageCandidates`); both lists are sorted below, ties by id.
      const candidates = yield* triageCandidates(sql, user.id)
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
      return `{"data":{"inbox_project_id":${inboxId},"inbox":${inbox ?? "[]"},"growth":${growthList},` +
        `"stale_targets":${staleList(false)},"stale_targets_with_deadline":${staleList(true)}}}`
    })

    return { process } as const
  })
}) {}
