import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import * as Crypto from "node:crypto"
import { Conflict, NotFound } from "../domain/Errors.js"
import { CredentialCache } from "./CredentialCache.js"
import { userFromRow } from "./CurrentUser.js"
import { now } from "./ServiceClock.js"
import type { UserId } from "../domain/Ids.js"

/** 32 random bytes as 64 hex characters (CONTRACT §4). */
export const generateSecret = () => Crypto.randomBytes(32).toString("hex")
export const sha256 = (text: string) => Crypto.createHash("sha256").update(text, "utf8").digest("hex")

const SHA256_HEX = /^[0-9a-f]{64}$/

/** Compares two SHA-256 hex digests without leaking where they differ. */
const sameDigest = (a: string, b: string) =>
  SHA256_HEX.test(a) && SHA256_HEX.test(b) && Crypto.timingSafeEqual(Buffer.from(a, "hex"), Buffer.from(b, "hex"))

export const SESSION_COOKIE = "steady_session"
export const SESSION_LIFETIME_DAYS = 30
/** Tokens a user may create through the API; the CLI, an administrator's tool, is not capped. */
export const MAX_TOKENS_PER_USER = 100
/**
 * Live browser sessions per user. Minting one more signs out the oldest rather than
 * refusing, so a user who lost their cookies is never locked out.
 */
export const MAX_SESSIONS_PER_USER = 100

export interface TokenListItem {
  readonly id: number
  readonly name: string
  readonly token_preview: string
  readonly created_at: string
}

interface CredentialRow {
  readonly credential_id: number
  readonly digest: string
  readonly id: UserId
  readonly username: string
  readonly timezone: string
}

const toUser = userFromRow

/** API tokens and the browser sessions minted from them; only digests are stored. */
export class Credentials extends Effect.Service<Credentials>()("steady/Credentials", {
  dependencies: [CredentialCache.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cache = yield* CredentialCache

    const insertToken = (userId: UserId, name: string) =>
      Effect.gen(function*() {
        const token = generateSecret()
        const at = (yield* now).toISOString()
        const [row] = yield* sql<TokenListItem>`
          INSERT INTO api_tokens (user_id, name, token_hash, token_preview, created_at)
          VALUES (${userId}, ${name}, ${sha256(token)}, ${token.slice(-8)}, ${at}::timestamptz)
          RETURNING id, name, token_preview, steady_iso(created_at) AS created_at`
        return { ...row!, token }
      })

    const createToken = (userId: UserId, name: string) => Effect.orDie(insertToken(userId, name))

    /**
     * The user row is locked while counting, so concurrent requests cannot both take the
     * last place.
     */
    const createCappedToken = (userId: UserId, name: string) =>
      Effect.gen(function*() {
        yield* sql`SELECT id FROM users WHERE id = ${userId} FOR UPDATE`
        const [row] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM api_tokens WHERE user_id = ${userId}`
        if (row!.n >= MAX_TOKENS_PER_USER) {
          return yield* Effect.fail(
            new Conflict({ message: `At most ${MAX_TOKENS_PER_USER} tokens per user; delete one first` })
          )
        }
        return yield* insertToken(userId, name)
      }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))

    const listTokens = (userId: UserId) =>
      sql<TokenListItem>`
        SELECT id, name, token_preview, steady_iso(created_at) AS created_at FROM api_tokens
        WHERE user_id = ${userId} ORDER BY created_at DESC, id DESC`.pipe(Effect.orDie)

    const deleteToken = (userId: UserId, id: number) =>
      sql<{ id: number }>`DELETE FROM api_tokens WHERE id = ${id} AND user_id = ${userId} RETURNING id`.pipe(
        Effect.orDie,
        Effect.flatMap((rows) => rows.length === 0 ? Effect.fail(NotFound.of("Token")) : Effect.void),
        cache.revoking
      )

    const verifyToken = (token: string) => {
      const digest = sha256(token)
      return cache.lookup(digest, sql<CredentialRow>`
        SELECT t.id AS credential_id, t.token_hash AS digest, u.id, u.username, u.timezone
        FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = ${digest}`.pipe(
        Effect.orDie,
        Effect.map((rows) =>
          Option.fromNullable(rows[0]).pipe(
            Option.filter((row) => sameDigest(row.digest, digest)),
            Option.map((row) => ({ user: toUser(row), tokenId: row.credential_id }))
          )
        )
      ))
    }

    const createSession = (userId: UserId, tokenId: number) =>
      Effect.gen(function*() {
        const secret = generateSecret()
        const at = yield* now
        const expires = new Date(at.getTime() + SESSION_LIFETIME_DAYS * 86_400_000)
        yield* sql`INSERT INTO auth_sessions (user_id, token_id, secret_hash, created_at, expires_at)
          VALUES (${userId}, ${tokenId}, ${sha256(secret)}, ${at.toISOString()}::timestamptz, ${expires.toISOString()}::timestamptz)`
        // Expired sessions of this user go too: nothing else removes them.
        yield* sql`DELETE FROM auth_sessions WHERE user_id = ${userId} AND (
            expires_at <= ${at.toISOString()}::timestamptz
            OR id IN (SELECT id FROM auth_sessions WHERE user_id = ${userId} ORDER BY id DESC OFFSET ${MAX_SESSIONS_PER_USER}))`
        return { secret, expires }
      }).pipe(sql.withTransaction, Effect.orDie)

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

    return {
      createToken,
      createCappedToken,
      listTokens,
      deleteToken,
      verifyToken,
      createSession,
      verifySession,
      deleteSession,
      /** Runs a write that changes what tokens stand for (a user's name or zone); see CredentialCache. */
      revoking: cache.revoking
    } as const
  })
}) {}
