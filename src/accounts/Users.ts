import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { DEFAULT_PREFERENCES } from "./Preferences.js"
import { DEFAULT_TIME_SLOTS, INBOX_NAME } from "../slots/Slots.js"
import { userFromRow } from "../kernel/CurrentUser.js"
import { now } from "../kernel/ServiceClock.js"
import { insertSlot } from "../slots/TimeSlotsTable.js"
import { insertInbox } from "../projects/ProjectsTable.js"
import { allUsers, insertUser, userById, userByName } from "./UsersTable.js"

const toUser = userFromRow

export class Users extends Effect.Service<Users>()("steady/Users", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findByUsername = (username: string) =>
      Effect.map(userByName(sql, username), (row) => Option.map(Option.fromNullable(row), toUser))

    const findById = (id: number) =>
      Effect.map(userById(sql, id), (row) => Option.map(Option.fromNullable(row), toUser))

    /** A new user with an Inbox and the five default time slots, all or nothing. */
    const create = (username: string, timezone: string) =>
      Effect.gen(function*() {
        const at = (yield* now).toISOString()
        const user = yield* insertUser(sql, { username, timezone, preferences: DEFAULT_PREFERENCES, at })
        yield* insertInbox(sql, user.id, INBOX_NAME, at)
        for (const [index, slot] of DEFAULT_TIME_SLOTS.entries()) {
          yield* insertSlot(sql, { user_id: user.id, label: slot.label, start_time: slot.start_time, sort_order: index, created_at: at })
        }
        return toUser(user)
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

    const list = allUsers(sql)

    return { findByUsername, findById, create, findOrCreate, list } as const
  })
}) {}
