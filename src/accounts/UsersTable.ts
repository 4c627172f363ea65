import type * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Effect } from "effect"
import type { UserId } from "../kernel/Ids.js"
import type { StoredPreferences } from "./Preferences.js"
import type { WeekStartDay } from "../quotas/QuotaPeriods.js"

/**
 * Every statement on `users`: finding and creating users, the lock that
 * caps what a user may create, the preferences, the AI context, and the calendar columns
 * other statements read with their own rows. Statements that read tasks with their owner's
 * calendar join `users` in the tasks' statements (`calendarColumns`); credentials that name
 * a user are looked up in `CredentialsTable`.
 */

export interface UserRow {
  readonly id: UserId
  readonly username: string
  readonly timezone: string
}

export const userByName = (sql: SqlClient.SqlClient, username: string) =>
  sql<UserRow>`SELECT id, username, timezone FROM users WHERE lower(username) = lower(${username})`.pipe(
    Effect.map((rows) => rows[0]),
    Effect.orDie
  )

export const userById = (sql: SqlClient.SqlClient, id: number) =>
  sql<UserRow>`SELECT id, username, timezone FROM users WHERE id = ${id}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie)

/** A new user row; a clash on the username is the caller's to handle. */
export const insertUser = (
  sql: SqlClient.SqlClient,
  user: { readonly username: string; readonly timezone: string; readonly preferences: StoredPreferences; readonly at: string }
) =>
  sql<UserRow>`
          INSERT INTO users (username, timezone, preferences, created_at)
          VALUES (${user.username}, ${user.timezone}, ${JSON.stringify(user.preferences)}::jsonb, ${user.at}::timestamptz)
          RETURNING id, username, timezone`.pipe(Effect.map((rows) => rows[0]!))

/** Every user, oldest first. */
export const allUsers = (sql: SqlClient.SqlClient) =>
  sql<UserRow & { created_at: string }>`
      SELECT id, username, timezone, steady_iso(created_at) AS created_at FROM users ORDER BY id`.pipe(Effect.orDie)

/**
 * Locks the user's row for the rest of the transaction: a capped creation (tokens, webhooks)
 * counts under it, so concurrent requests cannot both take the last place.
 */
export const lockUser = (sql: SqlClient.SqlClient, userId: UserId) =>
  sql`SELECT id FROM users WHERE id = ${userId} FOR UPDATE`.pipe(Effect.asVoid)

/** The stored preferences and the zone, locked when the caller is about to write them. */
export const preferencesOf = (sql: SqlClient.SqlClient, userId: UserId, lock = false) =>
  (lock
    ? sql<{ preferences: Partial<StoredPreferences>; timezone: string }>`
                SELECT preferences, timezone FROM users WHERE id = ${userId} FOR UPDATE`
    : sql<{ preferences: Partial<StoredPreferences>; timezone: string }>`
                SELECT preferences, timezone FROM users WHERE id = ${userId}`).pipe(Effect.map((rows) => rows[0]), Effect.orDie)

export const setPreferences = (sql: SqlClient.SqlClient, userId: UserId, stored: StoredPreferences, zone: string) =>
  sql`UPDATE users SET preferences = ${JSON.stringify(stored)}::jsonb, timezone = ${zone}
            WHERE id = ${userId}`.pipe(Effect.asVoid, Effect.orDie)

/** What the user told the AI about themselves (a preference), null when nothing. */
export const aiContextOf = (sql: SqlClient.SqlClient, userId: UserId) =>
  sql<{ context: string | null }>`SELECT preferences->>'ai_context' AS context FROM users WHERE id = ${userId}`.pipe(
    Effect.map((rows) => rows[0]?.context ?? null),
    Effect.orDie
  )

/** The user with their AI context, in one read; undefined when the user is gone. */
export const userWithAiContext = (sql: SqlClient.SqlClient, userId: UserId) =>
  sql<UserRow & { context: string | null }>`
          SELECT id, username, timezone, preferences->>'ai_context' AS context FROM users WHERE id = ${userId}`.pipe(
    Effect.map((rows) => rows[0]),
    Effect.orDie
  )

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

/** A user's calendar columns on their own. */
export const calendarOf = (sql: SqlClient.SqlClient, userId: UserId) =>
  sql<CalendarColumns>`SELECT ${calendarColumns(sql, "u")} FROM users u WHERE u.id = ${userId}`.pipe(
    Effect.map((rows) => rows[0]!),
    Effect.orDie
  )
