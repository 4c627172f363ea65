import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import * as Crypto from "node:crypto"
import { Conflict, NotFound } from "../kernel/Errors.js"
import { CredentialCache, type VerifiedToken } from "./CredentialCache.js"
import { type CredentialRef, type CurrentUserShape, userFromRow } from "../kernel/CurrentUser.js"
import { now } from "../kernel/ServiceClock.js"
import {
  deleteSession as deleteSessionRow,
  deleteToken as deleteTokenRow,
  dropStaleSessions,
  existingTokenIds,
  insertSession,
  insertToken as insertTokenRow,
  liveSessionIds,
  sessionByDigest,
  tokenByDigest,
  tokenCount,
  tokensOf
} from "./CredentialsTable.js"
import { lockUser } from "./UsersTable.js"
import type { UserId } from "../kernel/Ids.js"

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

const toUser = userFromRow

/** API tokens and the browser sessions minted from them; only digests are stored. */
export class Credentials extends Effect.Service<Credentials>()("steady/Credentials", {
  dependencies: [CredentialCache.Default],
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cache = yield* CredentialCache

    const insertToken = Effect.fnUntraced(function*(userId: UserId, name: string) {
      const token = generateSecret()
      const at = (yield* now).toISOString()
      const row = yield* insertTokenRow(sql, { userId, name, digest: sha256(token), preview: token.slice(-8), at })
      return { ...row, token }
    })

    const createToken = (userId: UserId, name: string) => Effect.orDie(insertToken(userId, name))

    /**
     * The user row is locked while counting, so concurrent requests cannot both take the
     * last place.
     */
    const createCappedToken = (userId: UserId, name: string) =>
      Effect.gen(function*() {
        yield* lockUser(sql, userId)
        if ((yield* tokenCount(sql, userId)) >= MAX_TOKENS_PER_USER) {
          return yield* Effect.fail(
            new Conflict({ message: `At most ${MAX_TOKENS_PER_USER} tokens per user; delete one first` })
          )
        }
        return yield* insertToken(userId, name)
      }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))

    const listTokens = (userId: UserId) => tokensOf(sql, userId)

    const deleteToken = (userId: UserId, id: number) =>
      deleteTokenRow(sql, userId, id).pipe(
        Effect.flatMap((deleted) => deleted ? Effect.void : Effect.fail(NotFound.of("Token"))),
        cache.revoking
      )

    const verifyToken = (token: string) =>
      Effect.suspend(() => {
        const digest = sha256(token)
        // Taken before the lookup, so a revocation the lookup might have missed changes it.
        const mark = cache.revocationMark()
        // Suspended: the query is built only when the cache misses, not on every request.
        const found = cache.lookup(digest, Effect.suspend(() =>
          tokenByDigest(sql, digest).pipe(
            Effect.map((row) =>
              Option.fromNullable(row).pipe(
                Option.filter((row) => sameDigest(row.digest, digest)),
                Option.map((row): VerifiedToken => ({ user: toUser(row), tokenId: row.credential_id }))
              )
            )
          )))
        // The cache keeps the user without it: a mark is only good for the request it was taken for.
        return Effect.map(found, Option.map(({ tokenId, user }): VerifiedToken => ({
          tokenId,
          user: { ...user, credential: { kind: "token", id: tokenId, mark } }
        })))
      })

    const createSession = (userId: UserId, tokenId: number) =>
      Effect.gen(function*() {
        const secret = generateSecret()
        const at = yield* now
        const expires = new Date(at.getTime() + SESSION_LIFETIME_DAYS * 86_400_000)
        yield* insertSession(sql, { userId, tokenId, digest: sha256(secret), at: at.toISOString(), expires: expires.toISOString() })
        // Expired sessions of this user go too: nothing else removes them.
        yield* dropStaleSessions(sql, userId, at.toISOString(), MAX_SESSIONS_PER_USER)
        return { secret, expires }
      }).pipe(sql.withTransaction, Effect.orDie)

    const verifySession = (secret: string) =>
      Effect.gen(function*() {
        const digest = sha256(secret)
        const mark = cache.revocationMark()
        const at = (yield* now).toISOString()
        const row = yield* sessionByDigest(sql, digest, at)
        return Option.fromNullable(row).pipe(
          Option.filter((row) => sameDigest(row.digest, digest)),
          Option.map((row): CurrentUserShape => ({ ...toUser(row), credential: { kind: "session", id: row.credential_id, mark } }))
        )
      }).pipe(Effect.orDie)

    /** Signing out revokes like deleting a token does, so open event streams of the session hear of it. */
    const deleteSession = (secret: string) => cache.revoking(deleteSessionRow(sql, sha256(secret)))

    /**
     * Which of `refs` still stand (tokens not deleted, sessions neither signed out nor
     * expired): at most one statement per kind, however many streams hold them.
     */
    const standing = (refs: Iterable<CredentialRef>) =>
      Effect.gen(function*() {
        const tokens = new Set<number>()
        const sessions = new Set<number>()
        for (const ref of refs) (ref.kind === "token" ? tokens : sessions).add(ref.id)
        const at = (yield* now).toISOString()
        const liveTokens = tokens.size === 0 ? tokens : yield* existingTokenIds(sql, [...tokens])
        const liveSessions = sessions.size === 0 ? sessions : yield* liveSessionIds(sql, [...sessions], at)
        return (ref: CredentialRef) => (ref.kind === "token" ? liveTokens : liveSessions).has(ref.id)
      }).pipe(Effect.withSpan("Credentials.standing"))

    return {
      createToken,
      createCappedToken,
      listTokens,
      deleteToken,
      verifyToken,
      createSession,
      verifySession,
      deleteSession,
      standing,
      revocationMark: cache.revocationMark,
      /** Runs a write that changes what tokens stand for (a user's name or zone); see CredentialCache. */
      revoking: cache.revoking
    } as const
  })
}) {}
