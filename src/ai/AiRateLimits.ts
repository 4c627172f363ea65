import * as SqlClient from "@effect/sql/SqlClient"
import { Duration, Effect } from "effect"
import { TooManyRequests } from "../kernel/Errors.js"
import type { UserId } from "../kernel/Ids.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { takeToken, tokensLeft } from "./AiTables.js"

/**
 * The per-user limits on AI work a user can start at will: each reprocess queues a model
 * call, each quick take makes one while the request waits. A token bucket per user and
 * limit: `capacity` requests at once, refilled continuously at `capacity` per `window`
 * (10 a minute: one more every 6 s, the whole bucket again after a minute).
 */
export const AI_RATE_LIMITS = {
  reprocess: { capacity: 10, window: Duration.minutes(1), per: "a minute", label: "reprocess requests" },
  quick_take: { capacity: 10, window: Duration.minutes(1), per: "a minute", label: "quick takes" }
} as const
export type AiRateLimit = keyof typeof AI_RATE_LIMITS

/**
 * The buckets live in `ai_rate_limits` (migration 0030), so every instance on one database
 * counts against the same limit. Time is the service clock's (`SERVICE_NOW`, tests' clocks),
 * passed in; a clock that steps back refills nothing rather than going negative.
 */
export class AiRateLimits extends Effect.Service<AiRateLimits>()("steady/AiRateLimits", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * Takes one token from the user's `limit` bucket, or fails with a 429 saying how long
     * until the next one.
     */
    const take = (limit: AiRateLimit, userId: UserId) =>
      Effect.gen(function*() {
        const { capacity, label, per, window } = AI_RATE_LIMITS[limit]
        const windowMs = Duration.toMillis(window)
        const bucket = { userId, bucket: limit, capacity, windowMs, at: (yield* clockNow).toISOString() }
        if (yield* takeToken(sql, bucket)) return
        const tokens = yield* tokensLeft(sql, bucket)
        const retryAfterSeconds = Math.max(1, Math.ceil(((1 - tokens) * windowMs) / capacity / 1000))
        return yield* new TooManyRequests({
          message: `Too many ${label}: at most ${capacity} ${per}; try again in ${retryAfterSeconds} s`,
          retryAfterSeconds
        })
      }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("AiRateLimits.take", { attributes: { limit } }))

    return { take } as const
  })
}) {}
