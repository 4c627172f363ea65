import type * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import type { UserId } from "../kernel/Ids.js"
import type { UserRow } from "./UsersTable.js"

/**
 * Every statement on the credentials: `api_tokens`, the browser sessions
 * minted from them (`auth_sessions`) and the calendar feed keys (`calendar_keys`). Only
 * digests are stored; a credential is looked up by its digest together with the user it
 * stands for, in one statement (the join lives here, with the credential it starts from).
 */

export interface TokenListItem {
  readonly id: number
  readonly name: string
  readonly token_preview: string
  readonly created_at: string
}

/** A credential found by its digest, with its user. */
export interface CredentialRow extends UserRow {
  readonly credential_id: number
  readonly digest: string
}

export const insertToken = (
  sql: SqlClient.SqlClient,
  token: { readonly userId: UserId; readonly name: string; readonly digest: string; readonly preview: string; readonly at: string }
) =>
  sql<TokenListItem>`
          INSERT INTO api_tokens (user_id, name, token_hash, token_preview, created_at)
          VALUES (${token.userId}, ${token.name}, ${token.digest}, ${token.preview}, ${token.at}::timestamptz)
          RETURNING id, name, token_preview, steady_iso(created_at) AS created_at`.pipe(Effect.map((rows) => rows[0]!))

export const tokenCount = (sql: SqlClient.SqlClient, userId: UserId) =>
  sql<{ n: number }>`SELECT count(*)::int AS n FROM api_tokens WHERE user_id = ${userId}`.pipe(Effect.map((rows) => rows[0]!.n))

/** The user's tokens, newest first. */
export const tokensOf = (sql: SqlClient.SqlClient, userId: UserId) =>
  sql<TokenListItem>`
        SELECT id, name, token_preview, steady_iso(created_at) AS created_at FROM api_tokens
        WHERE user_id = ${userId} ORDER BY created_at DESC, id DESC`.pipe(Effect.orDie)

/** Deletes one of the user's tokens; whether there was one. */
export const deleteToken = (sql: SqlClient.SqlClient, userId: UserId, id: number) =>
  sql<{ id: number }>`DELETE FROM api_tokens WHERE id = ${id} AND user_id = ${userId} RETURNING id`.pipe(
    Effect.map((rows) => rows.length > 0),
    Effect.orDie
  )

export const tokenByDigest = (sql: SqlClient.SqlClient, digest: string) =>
  sql<CredentialRow>`
        SELECT t.id AS credential_id, t.token_hash AS digest, u.id, u.username, u.timezone
        FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = ${digest}`.pipe(
    Effect.map((rows) => rows[0]),
    Effect.orDie
  )

export const insertSession = (
  sql: SqlClient.SqlClient,
  session: { readonly userId: UserId; readonly tokenId: number; readonly digest: string; readonly at: string; readonly expires: string }
) =>
  sql`INSERT INTO auth_sessions (user_id, token_id, secret_hash, created_at, expires_at)
          VALUES (${session.userId}, ${session.tokenId}, ${session.digest}, ${session.at}::timestamptz, ${session.expires}::timestamptz)`

/** Drops the user's sessions expired at `at` and all but the newest `keep`. */
export const dropStaleSessions = (sql: SqlClient.SqlClient, userId: UserId, at: string, keep: number) =>
  sql`DELETE FROM auth_sessions WHERE user_id = ${userId} AND (
            expires_at <= ${at}::timestamptz
            OR id IN (SELECT id FROM auth_sessions WHERE user_id = ${userId} ORDER BY id DESC OFFSET ${keep}))`

/** A session live at `at`, by its digest. */
export const sessionByDigest = (sql: SqlClient.SqlClient, digest: string, at: string) =>
  sql<CredentialRow>`
          SELECT s.id AS credential_id, s.secret_hash AS digest, u.id, u.username, u.timezone
          FROM auth_sessions s JOIN users u ON u.id = s.user_id
          WHERE s.secret_hash = ${digest} AND s.expires_at > ${at}::timestamptz`.pipe(Effect.map((rows) => rows[0]))

/** Of these tokens, the ones that still exist. */
export const existingTokenIds = (sql: SqlClient.SqlClient, ids: ReadonlyArray<number>) =>
  sql<{ id: number }>`SELECT id FROM api_tokens WHERE id = ANY(${`{${ids.join(",")}}`}::int[])`.pipe(
    Effect.map((rows) => new Set(rows.map((row) => row.id)))
  )

/** Of these sessions, the ones still live at `at` (not signed out, not expired). */
export const liveSessionIds = (sql: SqlClient.SqlClient, ids: ReadonlyArray<number>, at: string) =>
  sql<{ id: number }>`
          SELECT id FROM auth_sessions WHERE id = ANY(${`{${ids.join(",")}}`}::int[]) AND expires_at > ${at}::timestamptz`.pipe(
    Effect.map((rows) => new Set(rows.map((row) => row.id)))
  )

export const deleteSession = (sql: SqlClient.SqlClient, digest: string) =>
  sql`DELETE FROM auth_sessions WHERE secret_hash = ${digest}`.pipe(Effect.orDie, Effect.asVoid)

/** Sets the user's calendar key (one per user: a new one replaces the old); returns when it was made. */
export const putCalendarKey = (sql: SqlClient.SqlClient, userId: UserId, digest: string, at: string) =>
  sql<{ created_at: string }>`
          INSERT INTO calendar_keys (user_id, key_hash, created_at) VALUES (${userId}, ${digest}, ${at}::timestamptz)
          ON CONFLICT (user_id) DO UPDATE SET key_hash = EXCLUDED.key_hash, created_at = EXCLUDED.created_at
          RETURNING steady_iso(created_at) AS created_at`.pipe(Effect.map((rows) => rows[0]!.created_at))

/** Deletes the user's calendar key; whether there was one. */
export const deleteCalendarKey = (sql: SqlClient.SqlClient, userId: UserId) =>
  sql<{ user_id: number }>`DELETE FROM calendar_keys WHERE user_id = ${userId} RETURNING user_id`.pipe(
    Effect.map((rows) => rows.length > 0),
    Effect.orDie
  )

/** The user a calendar key stands for, by the key's digest. */
export const calendarKeyOwner = (sql: SqlClient.SqlClient, digest: string) =>
  sql<UserRow>`
        SELECT u.id, u.username, u.timezone FROM calendar_keys k JOIN users u ON u.id = k.user_id
        WHERE k.key_hash = ${digest}`.pipe(Effect.map((rows) => rows[0]), Effect.orDie)
