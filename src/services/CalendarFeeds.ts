import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { type FeedTask, MAX_FEED_ITEMS, renderFeed } from "../domain/CalendarFeed.js"
import { NotFound, Unauthorized } from "../domain/Errors.js"
import { generateSecret, sha256 } from "./Credentials.js"
import { now } from "./ServiceClock.js"
import { calendarKeyOwner, deleteCalendarKey, putCalendarKey } from "./CredentialsTable.js"
import { feedBody } from "./TaskListSql.js"
import type { UserId } from "../domain/Ids.js"

/** One task as the database sends it: a JSON array in `FeedTask` field order. */
type FeedTuple = [
  number, string, string, number, string, string | null, string, string, string | null, string | null, Array<string>
]

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

/**
 * The calendar feed (issue 14): a per-user secret key, stored as its SHA-256 like API
 * tokens, and the `text/calendar` rendering of the key owner's open dated tasks.
 */
export class CalendarFeeds extends Effect.Service<CalendarFeeds>()("steady/CalendarFeeds", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

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
      sql<{ id: string }>`SELECT value #>> '{}' AS id FROM app_settings WHERE key = 'instance_id'`.pipe(
        Effect.map((rows) => rows[0]?.id ?? "local"),
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
      Effect.map(feedBody(sql, userId, MAX_FEED_ITEMS), (body) => (JSON.parse(body) as Array<FeedTuple>).map(fromTuple))

    /** The feed behind a key as `text/calendar` text; 401 for an unknown or revoked key. */
    const feed = (key: string, origin: string) =>
      Effect.gen(function*() {
        const owner = yield* ownerOf(key)
        const tasks = yield* tasksOf(owner.id)
        return renderFeed({
          zone: owner.timezone,
          now: yield* now,
          calendarName: `Steady: ${owner.username}`,
          instanceId: yield* instanceId,
          origin,
          tasks
        })
      }).pipe(Effect.withSpan("CalendarFeeds.feed"))

    return { createKey, revokeKey, feed } as const
  })
}) {}
