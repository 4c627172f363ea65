import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { DEFAULT_PREFERENCES } from "../domain/Preferences.js"
import { DEFAULT_TIME_SLOTS, INBOX_NAME } from "../domain/Slots.js"
import { userFromRow } from "./CurrentUser.js"
import { now } from "./ServiceClock.js"
import { insertSlot } from "./TimeSlotsTable.js"
import type { UserId } from "../domain/Ids.js"

interface UserRow {
  readonly id: UserId
  readonly username: string
  readonly timezone: string
}

const toUser = userFromRow

export class Users extends Effect.Service<Users>()("steady/Users", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findByUsername = (username: string) =>
      sql<UserRow>`SELECT id, username, timezone FROM users WHERE lower(username) = lower(${username})`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toUser)),
        Effect.orDie
      )

    const findById = (id: number) =>
      sql<UserRow>`SELECT id, username, timezone FROM users WHERE id = ${id}`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toUser)),
        Effect.orDie
      )

    /** A new user with an Inbox and the five default time slots, all or nothing. */
    const create = (username: string, timezone: string) =>
      Effect.gen(function*() {
        const at = (yield* now).toISOString()
        const [user] = yield* sql<UserRow>`
          INSERT INTO users (username, timezone, preferences, created_at)
          VALUES (${username}, ${timezone}, ${JSON.stringify(DEFAULT_PREFERENCES)}::jsonb, ${at}::timestamptz)
          RETURNING id, username, timezone`
        yield* sql`INSERT INTO projects (owner_id, name, is_inbox, sort_order, created_at, updated_at)
          VALUES (${user!.id}, ${INBOX_NAME}, true, 0, ${at}::timestamptz, ${at}::timestamptz)`
        for (const [index, slot] of DEFAULT_TIME_SLOTS.entries()) {
          yield* insertSlot(sql, { user_id: user!.id, label: slot.label, start_time: slot.start_time, sort_order: index, created_at: at })
        }
        return toUser(user!)
      }).pipe(sql.withTransaction, Effect.orDie)

    /** Proxy auth and the CLI create users on first sight; a racing twin is read back. */
    const findOrCreate = (username: string, timezone: string) =>
      Effect.flatMap(findByUsername(username), (found) =>
        Option.match(found, {
          onSome: Effect.succeed,
          onNone: () =>
            create(username, timezone).pipe(
              Effect.catchAllDefect((defect) =>
                Effect.flatMap(findByUsername(username), (again) =>
                  Option.match(again, { onSome: Effect.succeed, onNone: () => Effect.die(defect) })
                )
              )
            )
        })
      )

    const list = sql<UserRow & { created_at: string }>`
      SELECT id, username, timezone, steady_iso(created_at) AS created_at FROM users ORDER BY id`.pipe(Effect.orDie)

    return { findByUsername, findById, create, findOrCreate, list } as const
  })
}) {}
