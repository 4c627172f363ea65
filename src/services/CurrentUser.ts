import { Context } from "effect"
import type { UserId } from "../domain/Ids.js"

/** The authenticated caller; every request operates on this user's data. */
export interface CurrentUserShape {
  readonly id: UserId
  readonly username: string
  readonly timezone: string
}

export class CurrentUser extends Context.Tag("steady/CurrentUser")<CurrentUser, CurrentUserShape>() {}

/** The caller as read from a `users` row (id, username, timezone). */
export const userFromRow = (row: { readonly id: UserId; readonly username: string; readonly timezone: string }): CurrentUserShape => ({
  id: row.id,
  username: row.username,
  timezone: row.timezone
})
