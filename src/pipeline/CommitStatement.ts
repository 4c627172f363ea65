import type * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Schema } from "effect"
import { RowObject } from "../kernel/Columns.js"
import type { DayStats, MutationOptions, TxChange, TxEvent } from "./Tx.js"
import { changesInsert, type entriesOf } from "../changes/ChangeLog.js"
import { holdsPending, membersSql, PENDING_ID_JSON, PENDING_ROW_MEMBER, PendingId, withWireSql } from "./Pending.js"
import { KEYED_CONTENT_TYPE, type KeyedAnswer, recordSql } from "./IdempotencyRecord.js"
import { addToDays } from "./DailyStatsTable.js"
import { entryWrites } from "../undo/UndoLog.js"
import { deliveryWrites, outboxWrites } from "../webhooks/WebhookDeliveries.js"
import { emptyText, joinText, rawText, type SqlText, sqlText, statementOf } from "../sql/SqlText.js"

/** The deferred write of `updateAtCommit`, as the commit statement's first CTEs. */
export interface Deferred {
  readonly target: SqlText
  readonly inserted: SqlText | undefined
  /** A deferred INSERT's `inserted` also renders the row: the undo entry's pending row gets it. */
  readonly insertsRow?: boolean
  /** A deferred UPDATE's `target` also returns its row and version (`UpdateOptions.keep`). */
  readonly keeps?: boolean
}

/** The deferred write's wire text, as the commit statement's other parts read it. */
const TARGET_WIRE = rawText("(SELECT wire FROM target)")
/** The members of the row a deferred INSERT rendered (`insertedRowSql`), for the undo entry's pending row. */
const INSERTED_ROW_MEMBERS = membersSql(rawText("(SELECT row::text FROM inserted)"))

/**
 * The commit statement's one row: the undo entry's `integer` id, the deliveries
 * `steady_deliver` wrote (an `integer`), the deferred write's wire JSON text (handed on as is).
 */
const decodeWritten = Schema.decodeUnknown(Schema.Tuple(Schema.Struct({
  undo_id: Schema.NullOr(Schema.Int),
  deliveries: Schema.Int,
  wire: Schema.NullOr(Schema.String),
  version: Schema.optional(Schema.NullOr(Schema.String)),
  row: Schema.optional(Schema.NullOr(RowObject))
})))

/** What a mutation's body left for the commit statement to write. */
export interface CommitInput {
  readonly options: MutationOptions
  readonly now: Date
  readonly changes: ReadonlyArray<TxChange>
  readonly events: ReadonlyArray<TxEvent>
  readonly stats: ReadonlyMap<string, DayStats>
  readonly description: string
  readonly feed: ReturnType<typeof entriesOf>
  readonly deferred: Deferred | undefined
  /** A keyed write's record: its answer's text, rendered from the body's result (`Pending` markers in it). */
  readonly record: { readonly keyed: KeyedAnswer; readonly body: string; readonly now: Date } | undefined
}

/**
 * Everything the pipeline writes besides the body's rows, as ONE statement just before
 * COMMIT: redo purge and undo entry, outbox events, a delivery per matching active
 * webhook with its body frozen now (CONTRACT §9), the overflow drop, the day's
 * statistics, and the change-feed rows (their wake-up, NOTIFY included, follows the commit).
 * A keyed write's record goes in it too. Parts with nothing to write are left out of the
 * text. Returns the undo entry's id, how many delivery rows were written, and the wire JSON
 * text of the deferred write.
 */
export const commitStatement = (sql: SqlClient.SqlClient, input: CommitInput) => {
  const { changes, events, feed, options } = input
  const userId = options.user.id
  const at = input.now.toISOString()
  const ctes: Array<SqlText> = []
  const { deferred } = input
  if (deferred !== undefined) {
    ctes.push(deferred.target)
    if (deferred.inserted !== undefined) ctes.push(deferred.inserted)
  }
  // What the body left pending, replaced by what the deferred write returns.
  const withPending = (json: string) => {
    let out = sqlText`${json}::text`
    if (deferred !== undefined && holdsPending(json)) out = withWireSql(out, TARGET_WIRE)
    if (deferred?.inserted !== undefined && json.includes(PENDING_ID_JSON)) {
      out = sqlText`replace(${out}, ${PENDING_ID_JSON}, (SELECT id FROM inserted)::text)`
    }
    if (deferred?.insertsRow === true && json.includes(PENDING_ROW_MEMBER)) {
      out = sqlText`replace(${out}, ${PENDING_ROW_MEMBER}, ${INSERTED_ROW_MEMBERS})`
    }
    return out
  }
  const undoable = changes.length > 0 && options.undoable !== false
  if (undoable) {
    const tasksAffected = new Set(changes.filter((c) => c.table === "tasks").map((c) => c.id)).size
    ctes.push(...entryWrites({
      userId,
      action: options.action,
      description: input.description || options.action,
      changes: withPending(JSON.stringify(changes)),
      tasksAffected,
      at
    }))
  }
  if (events.length > 0) {
    const rows = events.map((e, n) => ({
      n,
      event: e.event,
      task_id: e.taskId,
      payload: JSON.stringify(e.data),
      body: JSON.stringify({ event: e.event, timestamp: at, data: e.data })
    }))
    // A deferred row's wire JSON goes into the payloads here, and into the frozen bodies where
    // `delivered` renders them (only for a user with an active webhook). Both stay text: the
    // outbox keeps the payload as it is (migration 0038).
    const pending = deferred !== undefined && rows.some((r) => holdsPending(r.body))
    ctes.push(
      pending
        ? sqlText`events AS (
          SELECT e.n, e.event, e.task_id, ${withWireSql(rawText("e.payload"), rawText("w.wire"))} AS payload, e.body
          FROM jsonb_to_recordset((${withPending(JSON.stringify(rows))})::jsonb)
            AS e(n integer, event text, task_id integer, payload text, body text)
          CROSS JOIN (SELECT wire FROM target) w)`
        : sqlText`events AS (
          SELECT e.n, e.event, e.task_id, e.payload, e.body
          FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
            AS e(n integer, event text, task_id integer, payload text, body text))`
    )
    const body = pending ? withWireSql(rawText("e.body"), TARGET_WIRE) : rawText("e.body")
    ctes.push(outboxWrites(userId, at), deliveryWrites(sql, userId, at, body))
  }
  const days = [...input.stats.values()].filter(({ counts: s }) => s.completions !== 0 || s.tasks_created !== 0 || s.snoozes !== 0)
  if (days.length > 0) {
    ctes.push(sqlText`stats AS (${addToDays(days.map((d) => ({ user_id: d.userId, date: d.date, ...d.counts })))})`)
  }
  if (feed.length > 0) {
    ctes.push(sqlText`feed AS (${
      changesInsert(sql, input.now, feed, deferred?.insertsRow === true ? { json: withPending, tasks: rawText("target"), stands: (id) => id instanceof PendingId } : undefined)
    })`)
  }
  // A data-modifying CTE runs whether or not anything reads it.
  const { record } = input
  if (record !== undefined) {
    const body = deferred !== undefined && holdsPending(record.body)
      ? withWireSql(sqlText`${record.body}::text`, TARGET_WIRE)
      : sqlText`${record.body}::text`
    const answer = { status: record.keyed.status, contentType: KEYED_CONTENT_TYPE, body }
    ctes.push(sqlText`recorded AS (${recordSql(record.keyed.request, answer, record.now)})`)
  }
  const fed = feed.length > 0
  if (ctes.length === 0) return Effect.succeed({ undoId: null, deliveries: 0, wire: null, kept: null, fed })
  return statementOf(
    sql,
    sqlText`
    WITH ${joinText(", ", ctes)}
    SELECT ${undoable ? rawText("(SELECT id FROM undo)") : rawText("NULL::integer")} AS undo_id,
      ${events.length > 0 ? rawText("COALESCE((SELECT n FROM delivered), 0)") : rawText("0")} AS deliveries,
      ${deferred !== undefined ? TARGET_WIRE : rawText("NULL::text")} AS wire
      ${deferred?.keeps === true ? rawText(", (SELECT version FROM target) AS version, (SELECT row FROM target) AS row") : emptyText}`
  ).pipe(
    // A row that does not fit is a defect; the SqlError stays the caller's (a keyed write's refusal).
    Effect.flatMap((rows) => Effect.catchTag(decodeWritten(rows), "ParseError", Effect.die)),
    Effect.map(([row]) => ({
      undoId: row.undo_id,
      deliveries: row.deliveries,
      wire: row.wire,
      // The deferred update's row and version, when it keeps them.
      kept: row.version == null || row.row == null ? null : { version: row.version, row: row.row },
      fed
    }))
  )
}
