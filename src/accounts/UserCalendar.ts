import * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Effect } from "effect"
import { DEFAULT_PREFERENCES } from "./Preferences.js"
import type { PeriodSettings } from "../quotas/QuotaPeriods.js"
import type { UserId } from "../kernel/Ids.js"
import { type CalendarColumns, calendarOf } from "./UsersTable.js"

export const calendarFrom = (row: CalendarColumns): PeriodSettings => ({
  zone: row.timezone,
  weekStart: row.week_start ?? DEFAULT_PREFERENCES.week_start
})

/**
 * Whether the user in `userColumn` (SQL) still has `calendar`, as a condition in SQL: a write
 * that starts from a kept row (`RecentRows`) requires it, as it requires the row's version.
 */
export const calendarStill = (sql: SqlClient.SqlClient, userColumn: string, calendar: PeriodSettings): Fragment =>
  sql`EXISTS (SELECT 1 FROM users u WHERE u.id = ${sql.literal(userColumn)} AND u.timezone = ${calendar.zone}
    AND COALESCE(u.preferences->>'week_start', ${DEFAULT_PREFERENCES.week_start}) = ${calendar.weekStart})`

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
      Effect.map(calendarOf(sql, userId), calendarFrom)

    /** Periods, occurrences and prompt days of a task in a shared project never follow the actor. */
    const ofTask = (task: { readonly user_id: UserId }) => of(task.user_id)

    return { of, ofTask } as const
  })
}) {}
