import type * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Schema } from "effect"
import { IdRow } from "../kernel/Columns.js"
import { UserId } from "../kernel/Ids.js"
import { TimeSlotRow } from "../pipeline/Rows.js"

/**
 * Every statement on `time_slots` outside the mutation pipeline's own writes:
 * a user's slots, one slot, a new user's defaults, and the probes the change feed
 * makes. The pipeline inserts, updates and removes slots through `TimeSlotsTable`
 * (`Tables.ts`), the table's spec.
 */

/** A user's slots in time order. */
export const slotsOf = (sql: SqlClient.SqlClient, userId: UserId) =>
  SqlSchema.findAll({
    Request: UserId,
    Result: TimeSlotRow,
    execute: (userId) =>
      sql`SELECT id, user_id, label, start_time, sort_order, steady_iso(created_at) AS created_at
        FROM time_slots WHERE user_id = ${userId} ORDER BY start_time, id`
  })(userId).pipe(Effect.orDie)

/** The first key of the slot-set locks (`pg_advisory_xact_lock(int4, int4)`; the second is the user's id). */
const SLOT_SET_LOCK = 0x5107

/**
 * Takes the lock on a user's set of slots, held to the end of the transaction. Every write of
 * a user's slots takes it before it reads them (an add, move or delete, and an undo or redo
 * of one), so such writes of one user queue on one lock instead of both passing the checks.
 * One lock on the set, not the slots' rows: a locking read of the rows misses a slot another
 * add inserted while it waited, and locks the rest in an order an undo (which writes them
 * change by change) does not follow; in a storm of adds and undos the two orders deadlocked
 * over and over, each deadlock found only after PostgreSQL's one-second deadlock timeout.
 */
export const lockSlotSet = (sql: SqlClient.SqlClient, userId: UserId) =>
  sql`SELECT pg_advisory_xact_lock(${SLOT_SET_LOCK}::int, ${userId}::int)`.pipe(Effect.asVoid, Effect.orDie)

/** `lockSlotSet` without waiting: whether the lock was free (and is now held). */
export const tryLockSlotSet = (sql: SqlClient.SqlClient, userId: UserId) =>
  sql`SELECT pg_try_advisory_xact_lock(${SLOT_SET_LOCK}::int, ${userId}::int) AS taken`.pipe(
    Effect.flatMap(decodeTaken),
    Effect.map(([row]) => row.taken),
    Effect.orDie
  )

const decodeTaken = Schema.decodeUnknown(Schema.Tuple(Schema.Struct({ taken: Schema.Boolean })))

/** A user's slots, read once the lock on their set is held (`lockSlotSet`). */
export const lockedSlotsOf = (sql: SqlClient.SqlClient, userId: UserId) => Effect.zipRight(lockSlotSet(sql, userId), slotsOf(sql, userId))

/** A slot the caller knows exists. */
export const slotById = (sql: SqlClient.SqlClient, id: number) =>
  SqlSchema.single({
    Request: Schema.Int,
    Result: TimeSlotRow,
    execute: (id) =>
      sql`SELECT id, user_id, label, start_time, sort_order, steady_iso(created_at) AS created_at
    FROM time_slots WHERE id = ${id}`
  })(id).pipe(Effect.orDie)

/** Whether `slotId` is one of the user's slots. */
export const ownsSlot = (sql: SqlClient.SqlClient, userId: UserId, slotId: number) =>
  SqlSchema.findAll({
    Request: Schema.Struct({ userId: UserId, slotId: Schema.Int }),
    Result: IdRow,
    execute: ({ slotId, userId }) => sql`SELECT id FROM time_slots WHERE id = ${slotId} AND user_id = ${userId}`
  })({ userId, slotId }).pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

/** One of a new user's default slots (written outside the pipeline: a new user has nothing to undo). */
export const insertSlot = (
  sql: SqlClient.SqlClient,
  slot: { readonly user_id: UserId; readonly label: string; readonly start_time: string; readonly sort_order: number; readonly created_at: string }
) =>
  sql`INSERT INTO time_slots (user_id, label, start_time, sort_order, created_at)
            VALUES (${slot.user_id}, ${slot.label}, ${slot.start_time}, ${slot.sort_order}, ${slot.created_at}::timestamptz)`

/**
 * The slot a change names, for a LATERAL join: `kind` and `id` are the change's columns,
 * `columns` what the caller reads of the slot `x`. OFFSET 0 keeps it one index probe per
 * change; a plain join let a generic plan made on a small database hash-join a scan of the
 * table on each read.
 */
export const slotNamedBy = (sql: SqlClient.SqlClient, columns: "x.*" | "x.user_id", kind: string, id: string): Fragment =>
  sql`(SELECT ${sql.literal(columns)} FROM time_slots x WHERE ${sql.literal(kind)} = 'time_slot' AND x.id = ${
    sql.literal(id)
  } OFFSET 0)`

/** A slot as the wire shows it (as `slotsOf` reads it), for a slot aliased `s`. */
export const slotJson = (sql: SqlClient.SqlClient): Fragment =>
  sql`json_build_object('id', s.id, 'user_id', s.user_id, 'label', s.label,
              'start_time', s.start_time, 'sort_order', s.sort_order, 'created_at', steady_iso(s.created_at))`
