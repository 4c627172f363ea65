import { Context } from "effect"
import type { UserId } from "./Ids.js"

/**
 * The API token or browser session a request was authenticated with, so an answer that
 * outlives the request (the event stream) can tell when it is revoked. A caller named by the
 * trusted proxy has none: nothing here revokes the proxy's word.
 */
export interface CredentialRef {
  readonly kind: "token" | "session"
  readonly id: number
  /**
   * `CredentialCache.revocationMark` taken before the credential was verified: while the mark
   * stays the same, no revocation has been heard since, so the credential still stands.
   */
  readonly mark: number | undefined
}

/** The authenticated caller; every request operates on this user's data. */
export interface CurrentUserShape {
  readonly id: UserId
  readonly username: string
  readonly timezone: string
  readonly credential?: CredentialRef
}

export class CurrentUser extends Context.Tag("steady/CurrentUser")<CurrentUser, CurrentUserShape>() {}

/** The caller as read from a `users` row (id, username, timezone). */
export const userFromRow = (row: { readonly id: UserId; readonly username: string; readonly timezone: string }): CurrentUserShape => ({
  id: row.id,
  username: row.username,
  timezone: row.timezone
})
