import * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Effect } from "effect"
import { DEFAULT_PREFERENCES } from "../domain/Preferences.js"
import type { PeriodSettings, WeekStartDay } from "../domain/QuotaPeriods.js"
import type { UserId } from "../domain/Ids.js"

/** The columns a statement reads for a user's calendar (`calendarColumns`). */
export interface CalendarColumns {
  readonly timezone: string
  /** As stored in the preferences: null until the user sets it. */
  readonly week_start: WeekStartDay | null
}

/**
 * The user's calendar from a row of `users` under `alias`, for a statement that reads it with
 * something else (a locked task, a batch of quotas) instead of a round trip of its own.
 */
export const calendarColumns = (sql: SqlClient.SqlClient, alias: string): Fragment =>
  sql`${sql.literal(alias)}.timezone, ${sql.literal(alias)}.preferences->>'week_start' AS week_start`

export const calendarFrom = (row: CalendarColumns): PeriodSettings => ({
  zone: row.timezone,
  weekStart: row.week_start ?? DEFAULT_PREFERENCES.week_start
})

/**
 * A user's calendar: the time zone and week start that quota periods, occurrences and local
 * days are reckoned on. Quotas, the lifecycle, task writes and bulk actions read it here, so
 * none of them reaches into the preferences' storage. A task's calendar is its owner's,
 * whoever acts on it.
 */
export class UserCalendar extends Effect.Service<UserCalendar>()("steady/UserCalendar", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const of = (userId: UserId) =>
      sql<CalendarColumns>`SELECT ${calendarColumns(sql, "u")} FROM users u WHERE u.id = ${userId}`.pipe(
        Effect.map((rows) => calendarFrom(rows[0]!)),
        Effect.orDie
      )

    /** Periods, occurrences and prompt days of a task in a shared project never follow the actor. */
    const ofTask = (task: { readonly user_id: UserId }) => of(task.user_id)

    return { of, ofTask } as const
  })
}) {}
