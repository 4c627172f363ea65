import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import * as Crypto from "node:crypto"
import { NotFound } from "../domain/Errors.js"
import { userFromRow } from "./CurrentUser.js"
import { now } from "./ServiceClock.js"

/** 32 random bytes as 64 hex characters (CONTRACT §4). */
export const generateSecret = () => Crypto.randomBytes(32).toString("hex")
export const sha256 = (text: string) => Crypto.createHash("sha256").update(text, "utf8").digest("hex")

const SHA256_HEX = /^[0-9a-f]{64}$/

/** Compares two SHA-256 hex digests without leaking where they differ. */
const sameDigest = (a: string, b: string) =>
  SHA256_HEX.test(a) && SHA256_HEX.test(b) && Crypto.timingSafeEqual(Buffer.from(a, "hex"), Buffer.from(b, "hex"))

export const SESSION_COOKIE = "steady_session"
export const SESSION_LIFETIME_DAYS = 30

export interface TokenListItem {
  readonly id: number
  readonly name: string
  readonly token_preview: string
  readonly created_at: string
}

interface CredentialRow {
  readonly credential_id: number
  readonly digest: string
  readonly id: number
  readonly username: string
  readonly timezone: string
}

const toUser = userFromRow

/** API tokens and the browser sessions minted from them; only digests are stored. */
export class Credentials extends Effect.Service<Credentials>()("steady/Credentials", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const createToken = (userId: number, name: string) =>
      Effect.gen(function*() {
        const token = generateSecret()
        const at = (yield* now).toISOString()
        const [row] = yield* sql<TokenListItem>`
          INSERT INTO api_tokens (user_id, name, token_hash, token_preview, created_at)
          VALUES (${userId}, ${name}, ${sha256(token)}, ${token.slice(-8)}, ${at}::timestamptz)
          RETURNING id, name, token_preview, steady_iso(created_at) AS created_at`
        return { ...row!, token }
      }).pipe(Effect.orDie)

    const listTokens = (userId: number) =>
      sql<TokenListItem>`
        SELECT id, name, token_preview, steady_iso(created_at) AS created_at FROM api_tokens
        WHERE user_id = ${userId} ORDER BY created_at DESC, id DESC`.pipe(Effect.orDie)

    const deleteToken = (userId: number, id: number) =>
      sql<{ id: number }>`DELETE FROM api_tokens WHERE id = ${id} AND user_id = ${userId} RETURNING id`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => rows.length === 0 ? Effect.fail(NotFound.of("Token")) : Effect.void)
      )

    const verifyToken = (token: string) => {
      const digest = sha256(token)
      return sql<CredentialRow>`
        SELECT t.id AS credential_id, t.token_hash AS digest, u.id, u.username, u.timezone
        FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = ${digest}`.pipe(
        Effect.orDie,
        Effect.map((rows) =>
          Option.fromNullable(rows[0]).pipe(
            Option.filter((row) => sameDigest(row.digest, digest)),
            Option.map((row) => ({ user: toUser(row), tokenId: row.credential_id }))
          )
        )
      )
    }

    const createSession = (userId: number, tokenId: number) =>
      Effect.gen(function*() {
        const secret = generateSecret()
        const at = yield* now
        const expires = new Date(at.getTime() + SESSION_LIFETIME_DAYS * 86_400_000)
        yield* sql`INSERT INTO auth_sessions (user_id, token_id, secret_hash, created_at, expires_at)
          VALUES (${userId}, ${tokenId}, ${sha256(secret)}, ${at.toISOString()}::timestamptz, ${expires.toISOString()}::timestamptz)`
        return { secret, expires }
      }).pipe(Effect.orDie)

    const verifySession = (secret: string) =>
      Effect.gen(function*() {
        const digest = sha256(secret)
        const at = (yield* now).toISOString()
        const rows = yield* sql<CredentialRow>`
          SELECT s.id AS credential_id, s.secret_hash AS digest, u.id, u.username, u.timezone
          FROM auth_sessions s JOIN users u ON u.id = s.user_id
          WHERE s.secret_hash = ${digest} AND s.expires_at > ${at}::timestamptz`
        return Option.fromNullable(rows[0]).pipe(
          Option.filter((row) => sameDigest(row.digest, digest)),
          Option.map(toUser)
        )
      }).pipe(Effect.orDie)

    const deleteSession = (secret: string) =>
      sql`DELETE FROM auth_sessions WHERE secret_hash = ${sha256(secret)}`.pipe(Effect.orDie, Effect.asVoid)

    return { createToken, listTokens, deleteToken, verifyToken, createSession, verifySession, deleteSession } as const
  })
}) {}
