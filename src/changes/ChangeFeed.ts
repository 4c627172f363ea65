import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { Fragment } from "@effect/sql/Statement"
import { Duration, Effect, Schema } from "effect"
import { IsoText } from "../kernel/Columns.js"
import { compare, encodeCursor, max, type Position, positionOf } from "./ChangeCursor.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { projectJson } from "../pipeline/WireSql.js"
import { slotJson, slotNamedBy } from "../slots/TimeSlotsTable.js"
import { projectNamedBy, projectSharedBy } from "../projects/ProjectsTable.js"
import { taskNamedBy } from "../tasks/TasksTable.js"
import type { UserId } from "../kernel/Ids.js"

/** Feed rows older than this are purged (and a cursor before them answers 410). */
export const CHANGE_RETENTION_DAYS = 30
/** ...and never more than about this many rows are kept, whatever their age. */
export const CHANGE_RETENTION_ROWS = 1_000_000
/**
 * Rows one purge statement deletes at most. The embedded database has one connection: every
 * request waits while a statement holds it, so a month's rows go in many short statements.
 */
export const PURGE_BATCH = 5_000

/** How long a read waits for writes in flight to end: 25 × 10 ms. */
const SETTLE_TRIES = 25
const SETTLE_SPACING = Duration.millis(10)

/**
 * One feed row with the object as it is now, and who can see the object now. The position
 * (`xid8`, `bigint`) is read as text: `positionOf` makes bigints of it.
 */
export const FeedRow = Schema.Struct({
  xid: Schema.String,
  id: Schema.String,
  at: IsoText,
  kind: Schema.String,
  object_id: Schema.Int,
  op: Schema.String,
  user_id: Schema.Int,
  shared: Schema.Boolean,
  /** The object's wire JSON text, null when it no longer exists; passed on as it is. */
  data: Schema.NullOr(Schema.String),
  obj_owner: Schema.NullOr(Schema.Int),
  obj_shared: Schema.Boolean
})
export type FeedRow = typeof FeedRow.Type

/** A feed position as read: `xid8` and `bigint` as text. */
const EdgeRow = Schema.Struct({ xid: Schema.String, id: Schema.String })

/** The feed's bound as read: `xid8` and `bigint` values as text. */
const BoundRow = Schema.Struct({ xmin: Schema.String, xid: Schema.String, id: Schema.String, held_back: Schema.Boolean })

/** Where reading may stop, read before the rows (see migrations/functions/steady_feed_final_below.sql). */
export interface Bound {
  /** Every transaction of this database below this id has ended: rows below it are final. */
  readonly xmin: bigint
  /** The oldest position still answered; a cursor before it missed purged rows. */
  readonly horizon: Position
  /** Rows already committed above `xmin`, held back by an older transaction still running. */
  readonly heldBack: boolean
}

export interface FeedPage {
  readonly rows: ReadonlyArray<FeedRow>
  readonly next: Position
  readonly hasMore: boolean
}

/** Whether `userId` may learn of this change at all. */
export const concerns = (row: FeedRow, userId: UserId) => row.user_id === userId || row.shared

/**
 * The change as `userId` receives it, as JSON text (the object's JSON is already text).
 * An object that is gone, or that the user can no longer see, is reported as deleted.
 */
export const changeJson = (row: FeedRow, userId: UserId): string => {
  const visible = row.op !== "delete" && row.data !== null && (row.obj_owner === userId || row.obj_shared)
  const cursor = encodeCursor(positionOf(row.xid, row.id))
  return `{"cursor":"${cursor}","at":"${row.at}","kind":"${row.kind}","id":${row.object_id},"op":"${
    visible ? "upsert" : "delete"
  }","data":${visible ? row.data : "null"}}`
}

export const positionOfRow = (row: FeedRow): Position => positionOf(row.xid, row.id)

export class ChangeFeed extends Effect.Service<ChangeFeed>()("steady/ChangeFeed", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const bound = SqlSchema.single({
      Request: Schema.Void,
      Result: BoundRow,
      execute: () =>
        sql`SELECT x.xmin::text, h.xid::text, h.id::text,
        EXISTS (SELECT 1 FROM changes c WHERE c.xid >= x.xmin) AS held_back
      FROM (SELECT steady_feed_final_below() AS xmin) x, change_feed_horizon h`
    })(undefined).pipe(
      Effect.map((row): Bound => ({
        xmin: BigInt(row.xmin),
        horizon: positionOf(row.xid, row.id),
        heldBack: row.held_back
      })),
      Effect.orDie,
      Effect.withSpan("ChangeFeed.bound")
    )

    /**
     * The bound once rows already committed are no longer held back by a write still
     * running, for a little while at most: a client that reads the feed right after its own
     * write was acknowledged expects to see it, even while another request is mid-write.
     */
    const settledBound = Effect.gen(function*() {
      for (let tries = 1;; tries++) {
        const b = yield* bound
        if (!b.heldBack || tries >= SETTLE_TRIES) return b
        yield* Effect.sleep(SETTLE_SPACING)
      }
    })

    /**
     * The rows of `page` (a CTE of `changes` rows) with the object each names, as the
     * object's own GET renders it: tasks by `steady_task_wire`, projects by the project
     * wire shape, time slots as listed. Objects are looked up by key, one probe per row
     * (LATERAL … OFFSET 0): a plain join let a generic plan made on a small database
     * hash-join a scan of every task on each read.
     */
    const render = (page: Fragment, now: Date) =>
      SqlSchema.findAll({
        Request: Schema.Void,
        Result: FeedRow,
        execute: () =>
          sql`
        WITH page AS (${page})
        SELECT c.xid::text, c.id::text, steady_iso(c.at) AS at, c.kind, c.object_id, c.op, c.user_id, c.shared,
          CASE
            WHEN t.id IS NOT NULL THEN steady_task_wire(t.task)::text
            WHEN p.id IS NOT NULL THEN ${projectJson(sql, now)}::text
            WHEN s.id IS NOT NULL THEN ${slotJson(sql)}::text
          END AS data,
          COALESCE(t.user_id, p.owner_id, s.user_id) AS obj_owner,
          COALESCE(tp.shared, p.shared, false) AS obj_shared
        FROM page c
        LEFT JOIN LATERAL ${taskNamedBy(sql, "c.kind", "c.object_id")} t ON true
        LEFT JOIN LATERAL ${projectSharedBy(sql, "t.project_id")} tp ON true
        LEFT JOIN LATERAL ${projectNamedBy(sql, "x.*", "c.kind", "c.object_id")} p ON true
        LEFT JOIN LATERAL ${slotNamedBy(sql, "x.*", "c.kind", "c.object_id")} s ON true
        ORDER BY c.xid, c.id`
      })(undefined).pipe(Effect.orDie)

    const after = (from: Position, xmin: bigint) =>
      sql`(c.xid, c.id) > (${from.xid.toString()}::xid8, ${from.id.toString()}::bigint) AND c.xid < ${xmin.toString()}::xid8`

    /**
     * One page of what `userId` may learn of after `from`, up to `bound`. Own rows and
     * shared ones are read by two index-ordered branches, then merged.
     */
    const page = (userId: UserId, from: Position, limit: number, b: Bound) =>
      Effect.gen(function*() {
        const now = yield* clockNow
        const where = after(from, b.xmin)
        const rows = yield* render(
          sql`SELECT * FROM (
              (SELECT c.* FROM changes c WHERE c.user_id = ${userId} AND ${where} ORDER BY c.xid, c.id LIMIT ${limit + 1})
              UNION ALL
              (SELECT c.* FROM changes c WHERE c.shared AND c.user_id <> ${userId} AND ${where}
               ORDER BY c.xid, c.id LIMIT ${limit + 1})
            ) m ORDER BY xid, id LIMIT ${limit + 1}`,
          now
        )
        return pageOf(rows, limit, from, b)
      }).pipe(Effect.withSpan("ChangeFeed.page"))

    /** Everyone's rows after `from`, for the instance's hub to fan out to its streams. */
    const all = (from: Position, limit: number, b: Bound) =>
      Effect.gen(function*() {
        const now = yield* clockNow
        const rows = yield* render(
          sql`SELECT c.* FROM changes c WHERE ${after(from, b.xmin)} ORDER BY c.xid, c.id LIMIT ${limit + 1}`,
          now
        )
        return pageOf(rows, limit, from, b)
      }).pipe(Effect.withSpan("ChangeFeed.all"))

    /**
     * The newest final row past the retention (age or count), if any: everything at or
     * before it in feed order goes. Both branches are index lookups: ordering the final rows
     * by position to find the edge sorts the whole table, to disk (~220 ms at 280,000 rows,
     * ~300 ms embedded, where every request waits on the one connection meanwhile):
     * - age: the newest row by `at` older than the cutoff (`changes_at`, backwards). A row of
     *   a concurrent transaction a few milliseconds either side of the cutoff may go with it
     *   or wait for the next pass;
     * - count: the newest row at least `CHANGE_RETENTION_ROWS` ids behind the newest id
     *   (`changes_pkey`, backwards). Ids count inserts, so about that many rows stay (fewer
     *   where rolled-back inserts left gaps).
     * Only final rows (below xmin) are taken, so the horizon never passes a row that could
     * still appear.
     */
    const retentionEdge = SqlSchema.findOne({
      Request: Schema.String,
      Result: EdgeRow,
      execute: (cutoff) =>
        sql`WITH final AS (SELECT steady_feed_final_below() AS xmin)
        SELECT xid::text, id::text FROM (
          (SELECT c.xid, c.id FROM changes c
           WHERE c.at < ${cutoff}::timestamptz AND c.xid < (SELECT xmin FROM final)
           ORDER BY c.at DESC LIMIT 1)
          UNION ALL
          (SELECT c.xid, c.id FROM changes c
           WHERE c.id <= (SELECT max(id) FROM changes) - ${CHANGE_RETENTION_ROWS} AND c.xid < (SELECT xmin FROM final)
           ORDER BY c.id DESC LIMIT 1)
        ) e ORDER BY e.xid DESC, e.id DESC LIMIT 1`
    })

    /**
     * Deletes the oldest `PURGE_BATCH` rows up to `edge` and moves the horizon to the last
     * one, in one statement: the horizon always names the newest row gone. The ids go in as
     * an array so the delete walks `changes_pkey`; `IN (subquery)` hashed the whole table.
     */
    const purgeBatch = SqlSchema.single({
      Request: EdgeRow,
      Result: Schema.Struct({ purged: Schema.Int }),
      execute: (edge) =>
        sql`WITH gone AS (
          DELETE FROM changes c WHERE c.id = ANY (ARRAY(
            SELECT o.id FROM changes o WHERE (o.xid, o.id) <= (${edge.xid}::xid8, ${edge.id}::bigint)
            ORDER BY o.xid, o.id LIMIT ${PURGE_BATCH}))
          RETURNING c.xid, c.id
        ),
        last AS (SELECT xid, id FROM gone ORDER BY xid DESC, id DESC LIMIT 1),
        moved AS (
          UPDATE change_feed_horizon h SET xid = last.xid, id = last.id FROM last
          WHERE (last.xid, last.id) > (h.xid, h.id) RETURNING 1
        )
        SELECT (SELECT count(*) FROM gone)::int AS purged`
    })

    /**
     * Drops the rows past the retention in batches of `PURGE_BATCH`, each its own statement, so
     * requests run between them; the number of rows up to the edge bounds the passes.
     */
    const purge = Effect.gen(function*() {
      const now = yield* clockNow
      const cutoff = new Date(now.getTime() - CHANGE_RETENTION_DAYS * 86_400_000).toISOString()
      const edge = yield* retentionEdge(cutoff)
      if (edge._tag === "None") return 0
      let purged = 0
      for (;;) {
        const batch = yield* purgeBatch(edge.value)
        purged += batch.purged
        if (batch.purged < PURGE_BATCH) return purged
      }
    }).pipe(Effect.orDie, Effect.withSpan("ChangeFeed.purge"))

    return { bound, settledBound, page, all, purge } as const
  })
}) {}

/**
 * `limit + 1` rows were asked for: one more than the page says there is more. Without
 * more, the page ends at the bound, so a quiet client's cursor still moves forward.
 */
const pageOf = (rows: ReadonlyArray<FeedRow>, limit: number, from: Position, b: Bound): FeedPage => {
  const hasMore = rows.length > limit
  const kept = hasMore ? rows.slice(0, limit) : rows
  const end = hasMore ? positionOfRow(kept[kept.length - 1]!) : max(from, { xid: b.xmin, id: 0n })
  return { rows: kept, next: end, hasMore }
}

/** A cursor the feed can answer from: not before the horizon, not beyond any bound yet issued. */
export const checkCursor = (from: Position, b: Bound): "ok" | "expired" | "unknown" =>
  compare(from, b.horizon) < 0 ? "expired" : from.xid > b.xmin ? "unknown" : "ok"
