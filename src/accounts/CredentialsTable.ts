import type * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Effect, Option, Schema } from "effect"
import { CountRow, IdRow, IsoText } from "../kernel/Columns.js"
import { UserId } from "../kernel/Ids.js"
import { UserRow } from "./UsersTable.js"

/**
 * Every statement on the credentials: `api_tokens`, the browser sessions
 * minted from them (`auth_sessions`) and the calendar feed keys (`calendar_keys`). Only
 * digests are stored; a credential is looked up by its digest together with the user it
 * stands for, in one statement (the join lives here, with the credential it starts from).
 */

/** A token as its owner's list shows it (never the secret, only its last characters). */
export const TokenRow = Schema.Struct({ id: Schema.Int, name: Schema.String, token_preview: Schema.String, created_at: IsoText })

/** A credential found by its digest, with its user. */
export const CredentialRow = Schema.Struct({ ...UserRow.fields, credential_id: Schema.Int, digest: Schema.String })
export type CredentialRow = typeof CredentialRow.Type

/** A list of ids as one `int[]` parameter (the same statement text whatever the count). */
const idArray = (ids: ReadonlyArray<number>) => `{${ids.join(",")}}`

export const insertToken = (
  sql: SqlClient.SqlClient,
  token: { readonly userId: UserId; readonly name: string; readonly digest: string; readonly preview: string; readonly at: string }
) =>
  SqlSchema.single({
    Request: Schema.Struct({ userId: UserId, name: Schema.String, digest: Schema.String, preview: Schema.String, at: IsoText }),
    Result: TokenRow,
    execute: (token) =>
      sql`INSERT INTO api_tokens (user_id, name, token_hash, token_preview, created_at)
          VALUES (${token.userId}, ${token.name}, ${token.digest}, ${token.preview}, ${token.at}::timestamptz)
          RETURNING id, name, token_preview, steady_iso(created_at) AS created_at`
  })(token).pipe(Effect.catchTags({ ParseError: Effect.die, NoSuchElementException: Effect.die }))

export const tokenCount = (sql: SqlClient.SqlClient, userId: UserId) =>
  SqlSchema.single({
    Request: UserId,
    Result: CountRow,
    execute: (userId) => sql`SELECT count(*)::int AS n FROM api_tokens WHERE user_id = ${userId}`
  })(userId).pipe(Effect.map((row) => row.n), Effect.catchTags({ ParseError: Effect.die, NoSuchElementException: Effect.die }))

/** The user's tokens, newest first. */
export const tokensOf = (sql: SqlClient.SqlClient, userId: UserId) =>
  SqlSchema.findAll({
    Request: UserId,
    Result: TokenRow,
    execute: (userId) =>
      sql`SELECT id, name, token_preview, steady_iso(created_at) AS created_at FROM api_tokens
        WHERE user_id = ${userId} ORDER BY created_at DESC, id DESC`
  })(userId).pipe(Effect.orDie)

/** Deletes one of the user's tokens; whether there was one. */
export const deleteToken = (sql: SqlClient.SqlClient, userId: UserId, id: number) =>
  SqlSchema.findAll({
    Request: Schema.Struct({ userId: UserId, id: Schema.Int }),
    Result: IdRow,
    execute: ({ id, userId }) => sql`DELETE FROM api_tokens WHERE id = ${id} AND user_id = ${userId} RETURNING id`
  })({ userId, id }).pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

export const tokenByDigest = (sql: SqlClient.SqlClient, digest: string) =>
  SqlSchema.findOne({
    Request: Schema.String,
    Result: CredentialRow,
    execute: (digest) =>
      sql`SELECT t.id AS credential_id, t.token_hash AS digest, u.id, u.username, u.timezone
        FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = ${digest}`
  })(digest).pipe(Effect.map(Option.getOrUndefined), Effect.orDie)

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
  SqlSchema.findOne({
    Request: Schema.Struct({ digest: Schema.String, at: IsoText }),
    Result: CredentialRow,
    execute: ({ at, digest }) =>
      sql`SELECT s.id AS credential_id, s.secret_hash AS digest, u.id, u.username, u.timezone
          FROM auth_sessions s JOIN users u ON u.id = s.user_id
          WHERE s.secret_hash = ${digest} AND s.expires_at > ${at}::timestamptz`
  })({ digest, at }).pipe(Effect.map(Option.getOrUndefined), Effect.catchTag("ParseError", Effect.die))

/** Of these tokens, the ones that still exist. */
export const existingTokenIds = (sql: SqlClient.SqlClient, ids: ReadonlyArray<number>) =>
  SqlSchema.findAll({
    Request: Schema.String,
    Result: IdRow,
    execute: (ids) => sql`SELECT id FROM api_tokens WHERE id = ANY(${ids}::int[])`
  })(idArray(ids)).pipe(
    Effect.map((rows) => new Set(rows.map((row) => row.id))),
    Effect.catchTag("ParseError", Effect.die)
  )

/** Of these sessions, the ones still live at `at` (not signed out, not expired). */
export const liveSessionIds = (sql: SqlClient.SqlClient, ids: ReadonlyArray<number>, at: string) =>
  SqlSchema.findAll({
    Request: Schema.Struct({ ids: Schema.String, at: IsoText }),
    Result: IdRow,
    execute: ({ at, ids }) =>
      sql`SELECT id FROM auth_sessions WHERE id = ANY(${ids}::int[]) AND expires_at > ${at}::timestamptz`
  })({ ids: idArray(ids), at }).pipe(
    Effect.map((rows) => new Set(rows.map((row) => row.id))),
    Effect.catchTag("ParseError", Effect.die)
  )

export const deleteSession = (sql: SqlClient.SqlClient, digest: string) =>
  sql`DELETE FROM auth_sessions WHERE secret_hash = ${digest}`.pipe(Effect.orDie, Effect.asVoid)

/** Sets the user's calendar key (one per user: a new one replaces the old); returns when it was made. */
export const putCalendarKey = (sql: SqlClient.SqlClient, userId: UserId, digest: string, at: string) =>
  SqlSchema.single({
    Request: Schema.Struct({ userId: UserId, digest: Schema.String, at: IsoText }),
    Result: Schema.Struct({ created_at: IsoText }),
    execute: ({ at, digest, userId }) =>
      sql`INSERT INTO calendar_keys (user_id, key_hash, created_at) VALUES (${userId}, ${digest}, ${at}::timestamptz)
          ON CONFLICT (user_id) DO UPDATE SET key_hash = EXCLUDED.key_hash, created_at = EXCLUDED.created_at
          RETURNING steady_iso(created_at) AS created_at`
  })({ userId, digest, at }).pipe(
    Effect.map((row) => row.created_at),
    Effect.catchTags({ ParseError: Effect.die, NoSuchElementException: Effect.die })
  )

/** Deletes the user's calendar key; whether there was one. */
export const deleteCalendarKey = (sql: SqlClient.SqlClient, userId: UserId) =>
  SqlSchema.findAll({
    Request: UserId,
    Result: Schema.Struct({ user_id: UserId }),
    execute: (userId) => sql`DELETE FROM calendar_keys WHERE user_id = ${userId} RETURNING user_id`
  })(userId).pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

/** The user a calendar key stands for, by the key's digest. */
export const calendarKeyOwner = (sql: SqlClient.SqlClient, digest: string) =>
  SqlSchema.findOne({
    Request: Schema.String,
    Result: UserRow,
    execute: (digest) =>
      sql`SELECT u.id, u.username, u.timezone FROM calendar_keys k JOIN users u ON u.id = k.user_id
        WHERE k.key_hash = ${digest}`
  })(digest).pipe(Effect.map(Option.getOrUndefined), Effect.orDie)
