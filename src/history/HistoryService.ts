import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { CompletionsQuery, StatsQuery } from "./History.js"
import { addDays, localParts, parseCalendarDate } from "../kernel/LocalTime.js"
import { pageOf } from "../kernel/QueryParams.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { PreferencesService } from "../accounts/PreferencesService.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { daysBetween, oneDay, sumOfDays } from "../pipeline/DailyStatsTable.js"
import type { UserId } from "../kernel/Ids.js"
import { completionsPageJson } from "../lifecycle/CompletionsTable.js"

const pad = (n: number, w = 2) => String(n).padStart(w, "0")
const dateText = (d: { year: number; month: number; day: number }) => `${pad(d.year, 4)}-${pad(d.month)}-${pad(d.day)}`

/** Completion history and daily statistics, read-only. */
export class History extends Effect.Service<History>()("steady/History", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const preferences = yield* PreferencesService

    /** `{data: {completions, count}}`, newest first, as JSON text from the database. */
    const completionsJson = (user: CurrentUserShape, query: CompletionsQuery) => {
      const page = pageOf(query)
      const ranges: Array<readonly [string, string]> = []
      if (query.date !== undefined) {
        const d = parseCalendarDate(query.date)!
        const next = addDays(d.year, d.month, d.day, 1)
        ranges.push([`${query.date}T00:00:00Z`, `${dateText(next)}T00:00:00Z`])
      }
      if (query.since !== undefined && query.until !== undefined) {
        ranges.push([query.since.toISOString(), query.until.toISOString()])
      }
      return completionsPageJson(sql, { userId: user.id, taskId: query.task_id, ranges }, page)
    }

    const totals = (userId: UserId, from: string | undefined, to: string | undefined) => sumOfDays(sql, userId, from, to)

    /**
     * Without a range: today, this week (the user's calendar week by week_start), this
     * calendar month and all time, all on the user's local calendar.
     */
    const summary = Effect.fnUntraced(function*(user: CurrentUserShape) {
      const prefs = yield* preferences.get(user)
      const now = yield* clockNow
      const p = localParts(now, prefs.timezone)
      const today = dateText(p)
      const weekStartDay = prefs.week_start === "monday" ? 1 : 0
      const back = (p.weekday - weekStartDay + 7) % 7
      const weekStart = dateText(addDays(p.year, p.month, p.day, -back))
      const monthStart = `${pad(p.year, 4)}-${pad(p.month)}-01`
      const row = yield* oneDay(sql, user.id, today)
      return {
        today: {
          id: row.id,
          user_id: user.id,
          date: today,
          completions: row.completions ?? 0,
          tasks_created: row.tasks_created ?? 0,
          snoozes: row.snoozes ?? 0
        },
        week: yield* totals(user.id, weekStart, today),
        month: yield* totals(user.id, monthStart, today),
        all_time: yield* totals(user.id, undefined, undefined)
      }
    })

    const range = (user: CurrentUserShape, start: string, end: string) =>
      Effect.map(daysBetween(sql, user.id, start, end), (stats) => ({ stats }))

    const stats = (user: CurrentUserShape, query: StatsQuery) =>
      query.start !== undefined && query.end !== undefined ? range(user, query.start, query.end) : summary(user)

    return { completionsJson, stats } as const
  })
}) {}
