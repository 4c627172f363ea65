import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Effect, Option, Schema } from "effect"
import { BREATHE, feedParts, type FeedTask, MAX_FEED_ITEMS, type RuleCache } from "./CalendarFeed.js"
import { NotFound, Unauthorized } from "../kernel/Errors.js"
import { generateSecret, sha256 } from "../accounts/Credentials.js"
import { inSlices } from "../kernel/LoopTurns.js"
import { now } from "../kernel/ServiceClock.js"
import { calendarKeyOwner, deleteCalendarKey, putCalendarKey } from "../accounts/CredentialsTable.js"
import { feedJson } from "../tasks/TaskListSql.js"
import type { UserId } from "../kernel/Ids.js"

/** One task as the database sends it: a JSON array in `FeedTask` field order. */
const FeedTuple = Schema.Tuple(
  Schema.Int,
  Schema.String,
  Schema.String,
  Schema.Int,
  Schema.String,
  Schema.NullOr(Schema.String),
  Schema.String,
  Schema.String,
  Schema.NullOr(Schema.String),
  Schema.NullOr(Schema.String),
  Schema.Array(Schema.String)
)
type FeedTuple = typeof FeedTuple.Type

const fromTuple = (t: FeedTuple): FeedTask => ({
  id: t[0],
  title: t[1],
  notes: t[2],
  priority: t[3],
  due_at: t[4],
  series_start_at: t[5],
  created_at: t[6],
  updated_at: t[7],
  rrule: t[8],
  anchor_time: t[9],
  labels: t[10]
})

/** Rendered rules kept, least recently used dropped first: a few hundred bytes each. */
const RULE_CACHE_SIZE = 20_000

const ruleCache = (): RuleCache => {
  const rules = new Map<string, string>()
  return {
    get: (key) => {
      const rule = rules.get(key)
      if (rule !== undefined) {
        rules.delete(key)
        rules.set(key, rule)
      }
      return rule
    },
    set: (key, rule) => {
      rules.set(key, rule)
      if (rules.size > RULE_CACHE_SIZE) rules.delete(rules.keys().next().value!)
    }
  }
}

/**
 * The calendar feed: a per-user secret key, stored as its SHA-256 like API
 * tokens, and the `text/calendar` rendering of the key owner's open dated tasks.
 */
export class CalendarFeeds extends Effect.Service<CalendarFeeds>()("steady/CalendarFeeds", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rules = ruleCache()

    /** A new key; it replaces the user's previous one, which stops working at once. */
    const createKey = (userId: UserId) =>
      Effect.gen(function*() {
        const key = generateSecret()
        const at = (yield* now).toISOString()
        return { key, created_at: yield* putCalendarKey(sql, userId, sha256(key), at) }
      }).pipe(Effect.orDie, Effect.withSpan("CalendarFeeds.createKey"))

    const revokeKey = (userId: UserId) =>
      deleteCalendarKey(sql, userId).pipe(
        Effect.flatMap((deleted) => (deleted ? Effect.void : Effect.fail(NotFound.of("Calendar key")))),
        Effect.withSpan("CalendarFeeds.revokeKey")
      )

    const ownerOf = (key: string) =>
      Effect.flatMap(calendarKeyOwner(sql, sha256(key)), (owner) =>
        owner === undefined
          ? Effect.fail(new Unauthorized({ message: "Unknown or revoked calendar key" }))
          : Effect.succeed(owner))

    // Written by migration 0012; read once per process.
    const instanceId = yield* Effect.cached(
      SqlSchema.findOne({
        Request: Schema.Void,
        Result: Schema.Struct({ id: Schema.String }),
        execute: () => sql`SELECT value #>> '{}' AS id FROM app_settings WHERE key = 'instance_id'`
      })(undefined).pipe(
        Effect.map(Option.match({ onNone: () => "local", onSome: (row) => row.id })),
        Effect.orDie
      )
    )

    /**
     * Open tasks with a due date that the user can see (their own and those in shared
     * projects, as the task list), quotas left out, soonest due first, at most
     * MAX_FEED_ITEMS. Two index-ordered branches, each limited, as the task list does. The
     * rows come back as one JSON text of arrays: parsing that once is about twice as fast as
     * the drivers' row-by-row decoding at this size.
     */
    const tasksOf = (userId: UserId) =>
      // Parsed, not Schema-decoded: decoding up to MAX_FEED_ITEMS tuples in one go holds the
      // event loop past the feed's 50 ms bound; the text is our own SQL's (`feedJson`).
      Effect.map(feedJson(sql, userId, MAX_FEED_ITEMS), (body) => (JSON.parse(body) as ReadonlyArray<FeedTuple>).map(fromTuple))

    /** The feed behind a key as `text/calendar` text; 401 for an unknown or revoked key. */
    const feed = (key: string, origin: string) =>
      Effect.gen(function*() {
        const owner = yield* ownerOf(key)
        const tasks = yield* tasksOf(owner.id)
        const input = {
          zone: owner.timezone,
          now: yield* now,
          calendarName: `Steady: ${owner.username}`,
          instanceId: yield* instanceId,
          origin,
          tasks
        }
        // Rendered in slices of a few milliseconds, one slice per turn of the event loop for
        // all feeds together (LoopTurns), so feeds with costly rules or a cold time zone never
        // hold the loop for the other requests, however many are fetched at once.
        const parts = yield* inSlices(feedParts(input, rules), BREATHE)
        return parts.join("")
      }).pipe(Effect.withSpan("CalendarFeeds.feed"))

    return { createKey, revokeKey, feed } as const
  })
}) {}
