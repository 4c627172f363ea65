import type * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Option, Schema } from "effect"
import { IsoText } from "../kernel/Columns.js"
import { UserId } from "../kernel/Ids.js"
import { Preferences, type StoredPreferences, WeekStart } from "./Preferences.js"

/**
 * Every statement on `users`: finding and creating users, the lock that
 * caps what a user may create, the preferences, the AI context, and the calendar columns
 * other statements read with their own rows. Statements that read tasks with their owner's
 * calendar join `users` in the tasks' statements (`calendarColumns`); credentials that name
 * a user are looked up in `CredentialsTable`.
 */

/** A user as a request acts for them (`userFromRow`). */
export const UserRow = Schema.Struct({ id: UserId, username: Schema.String, timezone: Schema.String })
export type UserRow = typeof UserRow.Type

export const userByName = (sql: SqlClient.SqlClient, username: string) =>
  SqlSchema.findOne({
    Request: Schema.String,
    Result: UserRow,
    execute: (username) => sql`SELECT id, username, timezone FROM users WHERE lower(username) = lower(${username})`
  })(username).pipe(Effect.map(Option.getOrUndefined), Effect.orDie)

export const userById = (sql: SqlClient.SqlClient, id: number) =>
  SqlSchema.findOne({
    Request: Schema.Int,
    Result: UserRow,
    execute: (id) => sql`SELECT id, username, timezone FROM users WHERE id = ${id}`
  })(id).pipe(Effect.map(Option.getOrUndefined), Effect.orDie)

/** A new user row; a clash on the username is the caller's to handle (the `SqlError` is kept). */
export const insertUser = (
  sql: SqlClient.SqlClient,
  user: { readonly username: string; readonly timezone: string; readonly preferences: StoredPreferences; readonly at: string }
) =>
  SqlSchema.single({
    Request: Schema.Struct({ username: Schema.String, timezone: Schema.String, preferences: Schema.String, at: IsoText }),
    Result: UserRow,
    execute: (user) =>
      sql`INSERT INTO users (username, timezone, preferences, created_at)
          VALUES (${user.username}, ${user.timezone}, ${user.preferences}::jsonb, ${user.at}::timestamptz)
          RETURNING id, username, timezone`
  })({ ...user, preferences: JSON.stringify(user.preferences) }).pipe(
    Effect.catchTags({ ParseError: Effect.die, NoSuchElementException: Effect.die })
  )

/** Every user, oldest first. */
export const allUsers = (sql: SqlClient.SqlClient) =>
  SqlSchema.findAll({
    Request: Schema.Void,
    Result: Schema.Struct({ ...UserRow.fields, created_at: IsoText }),
    execute: () => sql`SELECT id, username, timezone, steady_iso(created_at) AS created_at FROM users ORDER BY id`
  })(undefined).pipe(Effect.orDie)

/**
 * Locks the user's row for the rest of the transaction: a capped creation (tokens, webhooks)
 * counts under it, so concurrent requests cannot both take the last place.
 */
export const lockUser = (sql: SqlClient.SqlClient, userId: UserId) =>
  sql`SELECT id FROM users WHERE id = ${userId} FOR UPDATE`.pipe(Effect.asVoid)

/**
 * The preferences as stored: any of them (a key stored before it existed is filled in by
 * `withDefaults`), each as `Preferences` has it, since only validated patches write them.
 */
const StoredPreferencesRow = Schema.Struct({
  preferences: Schema.partialWith(Preferences.pipe(Schema.omit("timezone")), { exact: true }),
  timezone: Schema.String
})

/** The stored preferences and the zone, locked when the caller is about to write them. */
export const preferencesOf = (sql: SqlClient.SqlClient, userId: UserId, lock = false) =>
  SqlSchema.findOne({
    Request: UserId,
    Result: StoredPreferencesRow,
    execute: (userId) =>
      lock
        ? sql`SELECT preferences, timezone FROM users WHERE id = ${userId} FOR UPDATE`
        : sql`SELECT preferences, timezone FROM users WHERE id = ${userId}`
  })(userId).pipe(Effect.map(Option.getOrUndefined), Effect.orDie)

export const setPreferences = (sql: SqlClient.SqlClient, userId: UserId, stored: StoredPreferences, zone: string) =>
  sql`UPDATE users SET preferences = ${JSON.stringify(stored)}::jsonb, timezone = ${zone}
            WHERE id = ${userId}`.pipe(Effect.asVoid, Effect.orDie)

/** The `ai_context` preference as text, null when the user never set it. */
const AiContext = Schema.NullOr(Schema.String)

/** What the user told the AI about themselves (a preference), null when nothing. */
export const aiContextOf = (sql: SqlClient.SqlClient, userId: UserId) =>
  SqlSchema.findOne({
    Request: UserId,
    Result: Schema.Struct({ context: AiContext }),
    execute: (userId) => sql`SELECT preferences->>'ai_context' AS context FROM users WHERE id = ${userId}`
  })(userId).pipe(Effect.map(Option.match({ onNone: () => null, onSome: (row) => row.context })), Effect.orDie)

/** The user with their AI context, in one read; undefined when the user is gone. */
export const userWithAiContext = (sql: SqlClient.SqlClient, userId: UserId) =>
  SqlSchema.findOne({
    Request: UserId,
    Result: Schema.Struct({ ...UserRow.fields, context: AiContext }),
    execute: (userId) =>
      sql`SELECT id, username, timezone, preferences->>'ai_context' AS context FROM users WHERE id = ${userId}`
  })(userId).pipe(Effect.map(Option.getOrUndefined), Effect.orDie)

/** The columns a statement reads for a user's calendar (`calendarColumns`). */
export const CalendarColumns = Schema.Struct({
  timezone: Schema.String,
  /** As stored in the preferences: null until the user sets it. */
  week_start: Schema.NullOr(WeekStart)
})
export type CalendarColumns = typeof CalendarColumns.Type

/**
 * The user's calendar from a row of `users` under `alias`, for a statement that reads it with
 * something else (a locked task, a batch of quotas) instead of a round trip of its own.
 */
export const calendarColumns = (sql: SqlClient.SqlClient, alias: string): Fragment =>
  sql`${sql.literal(alias)}.timezone, ${sql.literal(alias)}.preferences->>'week_start' AS week_start`

/** A user's calendar columns on their own. */
export const calendarOf = (sql: SqlClient.SqlClient, userId: UserId) =>
  SqlSchema.single({
    Request: UserId,
    Result: CalendarColumns,
    execute: (userId) => sql`SELECT ${calendarColumns(sql, "u")} FROM users u WHERE u.id = ${userId}`
  })(userId).pipe(Effect.orDie)
