import * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Data, Effect, Option, Schema } from "effect"
import { decodeRowColumns, RowColumn, RowObject } from "../kernel/Columns.js"
import { type Row, sameValue } from "../kernel/Json.js"
import { localDate } from "../kernel/LocalTime.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import type { Writes } from "./Rows.js"
import { decodedRow, fieldOf, kindOf, normalizeRow, normalizeValue, rowJsonSql, sqlCast, sqlParam, type TableRow, type TableSpec, updatedRow } from "./Tables.js"
import { ChangeWakeup } from "../changes/ChangeWakeup.js"
import { entriesOf } from "../changes/ChangeLog.js"
import { WebhookWakeup } from "../webhooks/WebhookWakeup.js"
import { commitWithNextStatement } from "../sql/PgGuard.js"
import { commitStatement, type Deferred } from "./CommitStatement.js"
import { Pending, PendingId, PENDING_ROW_KEY, withWire } from "./Pending.js"
import { type DayStats, type Insertion, type MutationOptions, type PendingInsert, type ReadFirstRunner, type Resolved, type Runner, type Tx, type TxChange, type TxEvent, untyped, type UpdateOptions } from "./Tx.js"
import { type KeyedAnswer, KeyRefused, isRefusal } from "./IdempotencyRecord.js"
import { pgFieldsOf } from "../sql/DatabaseFailures.js"
import { RecentRows } from "./RecentRows.js"
import { emptyText, rawText, SqlText, sqlText } from "../sql/SqlText.js"

function resolved<A>(result: A, wire: string | null): Resolved<A>
function resolved(result: unknown, wire: string | null): unknown {
  if (!(result instanceof Pending)) return result
  if (wire === null) throw new Error("A mutation answered with a pending value but deferred no write")
  return result.resolve(wire)
}

/** What the pipeline's untyped writers take of `UpdateOptions`. */
interface RowOptions {
  readonly guard?: ReadonlyArray<string>
  readonly current?: TableRow
  readonly seen?: string | undefined
  readonly stillHolds?: Fragment | undefined
  readonly keep?: { readonly extra: unknown }
  readonly alsoInsert?: Insertion
}

/**
 * `values` as statement text, each a parameter cast to its column's type: `$1::integer,
 * $2::text, …` for an INSERT's VALUES, `a = $1::integer, b = $2::text, …` for an UPDATE's SET;
 * then `extra` (SQL for columns whose value is computed). One template for the whole list, not
 * one per value: a task has some thirty columns.
 */
const typedList = (table: TableSpec<TableRow>, values: Row, form: "values" | "sets", extra: ReadonlyArray<Fragment> = []): SqlText => {
  const strings: Array<string> = []
  const params: Array<unknown> = []
  let before = ""
  for (const column of Object.keys(values)) {
    const kind = kindOf(table, column)!
    strings.push(form === "sets" ? `${before}${column} = ` : before)
    params.push(sqlParam(kind, values[column]!))
    before = `::${sqlCast[kind]}, `
  }
  for (const fragment of extra) {
    strings.push(before)
    params.push(fragment)
    before = ", "
  }
  strings.push(before.slice(0, -2))
  return new SqlText(strings, params)
}

/** A deferred INSERT's row, as the commit statement's other parts read it. */
const INSERTED_FROM_TARGET = rawText("inserted AS (SELECT id, row FROM target)")

/** SQLSTATE of `steady_row_moved()`: a `readFirst` write's row changed after it was read. */
const ROW_MOVED = "SK412"

/** A `readFirst` mutation's row changed between its read and its commit; nothing was written. */
class RowMoved extends Data.TaggedError("RowMoved") {}

const placeholders = (table: TableSpec<TableRow>, values: Row, start: number) => {
  const columns = Object.keys(values)
  const params = columns.map((c) => sqlParam(kindOf(table, c)!, values[c]!))
  const casts = columns.map((c, i) => `$${start + i}::${sqlCast[kindOf(table, c)!]}`)
  return { columns, params, casts }
}

/** The columns `values` really changes (the touch column aside): their old and new values. */
const diffRow = (table: TableSpec<TableRow>, current: TableRow, values: Row) => {
  const before: Row = {}
  const after: Row = {}
  for (const [column, value] of Object.entries(values)) {
    if (column === table.touch) continue
    const next = normalizeValue(kindOf(table, column), value)
    const was = fieldOf(current, column)
    if (!sameValue(was, next)) {
      before[column] = was
      after[column] = next
    }
  }
  return { before, after }
}

/** An update as the undo log records it; guard fields keep the values undo must find. */
const updateChange = (
  table: TableSpec<TableRow>,
  id: number,
  current: TableRow,
  before: Row,
  after: Row,
  guardFields: ReadonlyArray<string> = []
): TxChange => {
  if (guardFields.length === 0) return { op: "update", table: table.name, id, before, after }
  const guard: Row = Object.fromEntries(guardFields.map((f) => [f, fieldOf(current, f)]))
  return { op: "update", table: table.name, id, before, after, guard }
}


/**
 * What the commit statement adds to the undo entry of a row it inserts: the id and the columns
 * it computed (the Inbox's id, say), as `normalizeRow` has them (timestamps as ISO text in UTC
 * with milliseconds). The values given are in the entry already; the table's other columns take
 * their defaults, constants, which a redo's INSERT gives again. Not the whole row: rendering all
 * of it (`to_jsonb` and a `steady_iso` per timestamp) was a sixth of a create's database time.
 */
const insertedRowSql = (table: TableSpec<TableRow>, computed: ReadonlyArray<string>) =>
  `jsonb_build_object('id', ${table.name}.id${
    computed.map((c) => `, '${c}', ${kindOf(table, c) === "ts" ? `steady_iso(${table.name}.${c})` : `${table.name}.${c}`}`).join("")
  })`

/**
 * What a kept row takes from the UPDATE that wrote it: the columns `written` and those the
 * table's triggers may set (`TableSpec.triggerSet`), as a jsonb object of the new row.
 */
const changedColumnsSql = (table: TableSpec<TableRow>, written: ReadonlyArray<string>) => {
  const pairs = [...new Set([...written, ...(table.triggerSet ?? [])])].map((c) => `'${c}', ${table.name}.${c}`)
  // A function takes at most 100 arguments: 40 columns an object, joined.
  const objects: Array<string> = []
  for (let i = 0; i < pairs.length; i += 40) objects.push(`jsonb_build_object(${pairs.slice(i, i + 40).join(", ")})`)
  return objects.length === 0 ? "'{}'::jsonb" : objects.join(" || ")
}

const wireOf = (table: TableSpec<TableRow>) => {
  if (table.wire === undefined) throw new Error(`${table.name} has no wire rendering`)
  return `${table.wire}(${table.name})`
}

/** The row's stored compact wire text (`TableSpec.wireText`), as the statements return it. */
const wireTextOf = (table: TableSpec<TableRow>) => {
  if (table.wireText === undefined) throw new Error(`${table.name} has no wire rendering`)
  return `${table.name}.${table.wireText}`
}

const checkColumns = (table: TableSpec<TableRow>, values: object) => {
  for (const column of Object.keys(values)) {
    if (kindOf(table, column) === undefined) throw new Error(`Unknown column ${table.name}.${column}`)
  }
}

// The statements' rows, checked to be objects; `decodedRow` then checks their columns.
const decodeOneRow = Schema.decodeUnknown(Schema.Tuple(RowColumn))
const decodeUpdated = Schema.decodeUnknown(
  Schema.Array(Schema.Struct({ wire: Schema.optional(RowObject), inserted: Schema.optional(RowObject) }))
)

export class Mutations extends Effect.Service<Mutations>()("steady/Mutations", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const wakeup = yield* WebhookWakeup
    const changeWakeup = yield* ChangeWakeup
    const recentRows = yield* RecentRows

    /** The row as PostgreSQL gives it (`to_jsonb`), locked. */
    const lockRaw = (table: TableSpec<TableRow>, id: number) =>
      sql.unsafe(`SELECT ${rowJsonSql(table, "t")} AS row FROM ${table.name} t WHERE id = $1 FOR UPDATE`, [id]).pipe(
        Effect.flatMap(decodeRowColumns),
        Effect.map((rows) => rows[0]?.row)
      )

    const lockRow = <R extends TableRow>(table: TableSpec<R>, id: number) =>
      Effect.map(lockRaw(table, id), (raw) => raw === undefined ? undefined : decodedRow(table, raw).row)

    /**
     * Runs `body` in one transaction that also writes the undo entry, the domain events
     * (the webhook outbox) and the day's statistics. A failure anywhere rolls all back.
     */
    const execute = <A, E, R>(options: MutationOptions, body: (tx: Tx) => Effect.Effect<A, E, R>, keyed: KeyedAnswer | undefined) =>
      transactionBody(options, body, keyed).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))

    // Made once (see docs/architecture.md, "Generators on the request path").
    const transactionBody = Effect.fnUntraced(
      function*<A, E, R>(options: MutationOptions, body: (tx: Tx) => Effect.Effect<A, E, R>, keyed: KeyedAnswer | undefined) {
        const now = yield* clockNow
        /** What the undo entry records, and what the change feed reports (upkeep's rows too). */
        const changes: Array<TxChange> = []
        const fed: Array<TxChange> = []
        let upkeepOf: CurrentUserShape | undefined
        const recordChange = (change: TxChange) => {
          if (upkeepOf === undefined) changes.push(change)
          fed.push(change)
        }
        const events: Array<TxEvent> = []
        const stats = new Map<string, DayStats>()
        let deferred: Deferred | undefined
        /** The deferred update's row, to keep in `RecentRows` as the statement returns it. */
        let kept: { readonly table: TableSpec<TableRow>; readonly id: number; readonly current: TableRow; readonly extra: unknown } | undefined
        let description = ""

        const insertRow = <R extends TableRow>(table: TableSpec<R>, values: Writes<R>) =>
          Effect.gen(function*() {
            checkColumns(table, values)
            const { casts, columns, params } = placeholders(table, untyped(values), 1)
            const [inserted] = yield* sql.unsafe(
              `INSERT INTO ${table.name} (${columns.join(", ")}) VALUES (${casts.join(", ")}) RETURNING ${rowJsonSql(table, table.name)} AS row`,
              params
            ).pipe(Effect.flatMap(decodeOneRow))
            const { json, row } = decodedRow(table, inserted.row)
            recordChange({ op: "insert", table: table.name, id: row.id, after: json })
            return row
          }).pipe(Effect.orDie)

        const updateRow = (table: TableSpec<TableRow>, id: number, values: Row, updateOptions: RowOptions | undefined, wire: boolean) =>
          Effect.gen(function*() {
            checkColumns(table, values)
            const current = updateOptions?.current ?? (yield* lockRow(table, id))
            if (current === undefined) return yield* Effect.dieMessage(`${table.name} ${id} vanished`)
            const { after, before } = diffRow(table, current, values)
            const fields = Object.keys(after)
            const writes: Row = table.touch ? { ...after, [table.touch]: now.toISOString() } : after
            const update = placeholders(table, writes, 2)
            const also = updateOptions?.alsoInsert
            if (also !== undefined) checkColumns(also.table, also.values)
            // Without a change there is no UPDATE: the insert's parameters follow the id.
            const sent = fields.length === 0 ? [] : update.params
            const insert = also === undefined ? undefined : placeholders(also.table, also.values, 2 + sent.length)
            const withInsert = also === undefined || insert === undefined
              ? ""
              : `WITH inserted AS (INSERT INTO ${also.table.name} (${insert.columns.join(", ")}) VALUES (${insert.casts.join(", ")})
                 RETURNING ${rowJsonSql(also.table, also.table.name)} AS row) `
            const returning = [
              ...(wire ? [`${wireOf(table)} AS wire`] : []),
              ...(also === undefined ? [] : ["(SELECT row FROM inserted) AS inserted"])
            ]
            const text = fields.length === 0
              ? `${withInsert}SELECT ${returning.join(", ") || "1"} FROM ${table.name} WHERE id = $1`
              : `${withInsert}UPDATE ${table.name} SET ${update.columns.map((c, i) => `${c} = ${update.casts[i]}`).join(", ")}
                 WHERE id = $1${returning.length > 0 ? ` RETURNING ${returning.join(", ")}` : ""}`
            if (fields.length === 0 && returning.length === 0) return { fields, wire: {} }
            const rows = yield* sql.unsafe(text, [id, ...sent, ...(insert?.params ?? [])]).pipe(Effect.flatMap(decodeUpdated))
            if (fields.length > 0) {
              recordChange(updateChange(table, id, current, before, after, updateOptions?.guard))
            }
            if (also !== undefined) {
              const inserted = rows[0]?.inserted
              if (inserted === undefined) return yield* Effect.dieMessage(`${also.table.name}: the update's insert returned no row`)
              const { json, row } = decodedRow(also.table, inserted)
              recordChange({ op: "insert", table: also.table.name, id: row.id, after: json })
            }
            return { fields, wire: rows[0]?.wire ?? {} }
          }).pipe(Effect.orDie)

        const updateAtCommit = (table: TableSpec<TableRow>, id: number, values: Row, updateOptions: RowOptions & { readonly current: TableRow }) =>
          Effect.sync(() => {
            if (deferred !== undefined) throw new Error("updateAtCommit: one deferred write per mutation")
            checkColumns(table, values)
            const current = updateOptions.current
            const { after, before } = diffRow(table, current, values)
            const fields = Object.keys(after)
            const writes: Row = table.touch && fields.length > 0 ? { ...after, [table.touch]: now.toISOString() } : after
            // The compact text rendering: it is spliced into the frozen webhook bodies.
            const wire = rawText(wireTextOf(table))
            // A row read before the transaction is written only in the version read; otherwise
            // `target` fails the statement (`steady_row_moved`) wherever it is read first.
            const { keep, seen, stillHolds } = updateOptions
            const where = seen === undefined
              ? sqlText`id = ${id}`
              : stillHolds === undefined
              ? sqlText`(id = ${id} AND xmin = ${seen}::xid)`
              : sqlText`(id = ${id} AND xmin = ${seen}::xid AND ${stillHolds})`
            // A kept row is the row read with what the UPDATE changed: the columns written and
            // those its triggers may set, as the database has them. Not the whole row: `to_jsonb`
            // of a task was a sixth of a PATCH's database CPU (docs/performance.md, "The outbox
            // payload as text").
            const returned = keep === undefined
              ? sqlText`${wire} AS wire`
              : sqlText`${wire} AS wire, xmin::text AS version, ${rawText(changedColumnsSql(table, Object.keys(writes)))} AS row`
            const row = fields.length === 0
              ? sqlText`SELECT ${returned} FROM ${rawText(table.name)} WHERE ${where}`
              : sqlText`UPDATE ${rawText(table.name)} SET ${typedList(table, writes, "sets")} WHERE ${where} RETURNING ${returned}`
            const movedKept = keep === undefined ? emptyText : rawText(", (SELECT version FROM moved) AS version, (SELECT row FROM moved) AS row")
            const target = seen === undefined
              ? sqlText`target AS (${row})`
              : sqlText`moved AS (${row}), target AS (SELECT COALESCE((SELECT wire FROM moved), steady_row_moved()) AS wire${movedKept})`
            if (keep !== undefined) kept = { table, id, current, extra: keep.extra }
            if (fields.length > 0) {
              recordChange(updateChange(table, id, current, before, after, updateOptions.guard))
            }
            const also = updateOptions.alsoInsert
            let inserted: SqlText | undefined
            if (also !== undefined) {
              checkColumns(also.table, also.values)
              const columns = Object.keys(also.values)
              inserted = sqlText`inserted AS (INSERT INTO ${rawText(also.table.name)} (${rawText(columns.join(", "))})
                VALUES (${typedList(also.table, also.values, "values")}) RETURNING id)`
              const id = new PendingId()
              recordChange({ op: "insert", table: also.table.name, id, after: { id: id.toJSON(), ...normalizeRow(also.table, also.values) } })
            }
            deferred = { target, inserted, keeps: keep !== undefined }
            return { fields }
          })

        const insertAtCommit = (table: TableSpec<TableRow>, values: Row, computed: Readonly<Record<string, Fragment>> = {}) =>
          Effect.sync((): PendingId => {
            if (deferred !== undefined) throw new Error("insertAtCommit: one deferred write per mutation")
            checkColumns(table, values)
            for (const column of Object.keys(computed)) checkColumns(table, { [column]: null })
            const wire = wireTextOf(table)
            const columns = Object.keys(values)
            const target = sqlText`target AS (INSERT INTO ${rawText(table.name)} (${
              rawText([...columns, ...Object.keys(computed)].join(", "))
            }) VALUES (${
              typedList(table, values, "values", Object.values(computed))
            }) RETURNING id, user_id, project_id, ${rawText(wire)} AS wire,
              ${rawText(insertedRowSql(table, Object.keys(computed)))} AS row)`
            deferred = { target, inserted: INSERTED_FROM_TARGET, insertsRow: true }
            // The undo entry's row: the values given, and the id and computed columns as inserted
            // (a later duplicate key wins in jsonb), which `withPending` splices in.
            const id = new PendingId()
            const row: Row = { ...normalizeRow(table, values), id: id.toJSON() }
            recordChange({ op: "insert", table: table.name, id, after: { ...row, [PENDING_ROW_KEY]: true } })
            return id
          })

        const tx: Tx = {
          now,
          user: options.user,
          updateAtCommit: <R extends TableRow, W>(table: TableSpec<R, W>, id: number, values: Writes<R>, updateOptions: UpdateOptions<R> & { readonly current: R }) =>
            Effect.map(updateAtCommit(table, id, untyped(values), updateOptions), ({ fields }) => ({ fields, wire: new Pending<W>() })),
          insertAtCommit: <R extends TableRow, W>(table: TableSpec<R, W>, values: Writes<R>, computed?: Readonly<Record<string, Fragment>>) =>
            Effect.map(insertAtCommit(table, untyped(values), computed), (id): PendingInsert<W> => ({ id, wire: new Pending<W>() })),
          lock: (table, id) => Effect.orDie(lockRow(table, id)),
          insert: insertRow,
          update: (table, id, values, updateOptions) =>
            Effect.map(updateRow(table, id, untyped(values), updateOptions, false), (u) => u.fields),
          updateWire: <R extends TableRow, W>(table: TableSpec<R, W>, id: number, values: Writes<R>, updateOptions?: UpdateOptions<R>) =>
            Effect.map(updateRow(table, id, untyped(values), updateOptions, true), ({ fields, wire }) => ({ fields, wire: wire as W })),
          restoreRow: (table, id, row) =>
            Effect.gen(function*() {
              const values: Row = Object.fromEntries(
                Object.entries(row).filter(([column]) => kindOf(table, column) !== undefined)
              )
              const { casts, columns, params } = placeholders(table, values, 2)
              yield* sql.unsafe(
                `INSERT INTO ${table.name} (id, ${columns.join(", ")}) VALUES ($1, ${casts.join(", ")})`,
                [id, ...params]
              )
              recordChange({ op: "insert", table: table.name, id, after: row })
            }).pipe(Effect.orDie),
          remove: (table, id) =>
            Effect.gen(function*() {
              const current = yield* lockRaw(table, id)
              if (current === undefined) return
              yield* sql.unsafe(`DELETE FROM ${table.name} WHERE id = $1`, [id])
              recordChange({ op: "delete", table: table.name, id, before: normalizeRow(table, current) })
            }).pipe(Effect.orDie),
          emit: (event) => {
            events.push(event)
          },
          count: (stat, n = 1, at = now) => {
            const user = upkeepOf ?? options.user
            const date = localDate(at, user.timezone)
            const key = `${user.id} ${date}`
            const day = stats.get(key) ?? { userId: user.id, date, counts: { completions: 0, tasks_created: 0, snoozes: 0 } }
            day.counts[stat] += n
            stats.set(key, day)
          },
          upkeep: (owner, writes) =>
            Effect.suspend(() => {
              if (upkeepOf !== undefined) return writes
              upkeepOf = owner
              return Effect.ensuring(writes, Effect.sync(() => {
                upkeepOf = undefined
              }))
            }),
          describe: (text) => {
            description = text
          }
        }

        const result = yield* body(tx)
        const record = keyed === undefined ? undefined : { keyed, body: keyed.render(result), now }
        const input = { options, now, changes, events, stats, description, feed: entriesOf(fed), deferred, record }
        // Our own transaction (not a savepoint in a caller's): COMMIT rides with the commit
        // statement instead of costing a round trip of its own.
        const transaction = yield* Effect.serviceOption(SqlClient.TransactionConnection)
        if (Option.isSome(transaction) && transaction.value[1] === 0) commitWithNextStatement(transaction.value[0])
        const written = yield* commitStatement(sql, input).pipe(
          Effect.catchIf((error) => keyed !== undefined && isRefusal(error), () => Effect.fail(new KeyRefused())),
          Effect.catchIf((error) => pgFieldsOf(error)?.code === ROW_MOVED, () => {
            if (kept !== undefined) recentRows.drop(kept.table.name, kept.id)
            return Effect.fail(new RowMoved())
          })
        )
        // Rows this write changed are no longer as kept; the deferred update's row is, as returned.
        for (const change of fed) {
          if (typeof change.id === "number") recentRows.drop(change.table, change.id)
        }
        if (kept !== undefined && written.kept !== null) {
          const row = updatedRow(kept.table, kept.current, written.kept.row)
          recentRows.put(kept.table, kept.id, { row, version: written.kept.version, extra: kept.extra })
        }
        if (record !== undefined) record.keyed.recorded(written.wire === null ? record.body : withWire(record.body, written.wire))
        yield* wakeAfter(written)
        return [resolved(result, written.wire), written.undoId] as const
      }
    )

    /**
     * After commit: deliveries written by the transaction go out now, not at the next poll
     * (no delivery row, no wake-up: the dispatcher's claim query is not free); the change
     * streams of this instance read the new feed entries now (others hear NOTIFY).
     */
    const wakeAfter = (written: { readonly deliveries: number; readonly fed: boolean }) =>
      Effect.zipRight(written.deliveries > 0 ? wakeup.wake : Effect.void, written.fed ? changeWakeup.wake : Effect.void)

    /**
     * Only a keyed mutation's statement can be refused for its key, and only a `readFirst` one's
     * row found moved.
     */
    const unkeyed = <A, E, R>(options: MutationOptions, body: (tx: Tx) => Effect.Effect<A, E, R>) =>
      Effect.catchIf(
        execute(options, body, undefined),
        (error): error is KeyRefused | RowMoved => error instanceof KeyRefused || error instanceof RowMoved,
        Effect.die
      )

    /**
     * A single-row write whose row is read before its transaction (`read(false)`), so that the
     * transaction is one message: BEGIN, the commit statement, COMMIT. Between a locking read
     * and the commit the connection waited on this process's own work (the rules, the diff, the
     * statement's text); the embedded database has one connection, which every other request
     * waited for meanwhile. The UPDATE requires the version read (`UpdateOptions.seen`); when
     * another write changed the row in between, nothing is written and the write runs again as
     * before, the row locked first (`read(true)`), where it cannot move.
     */
    const readFirstWith = <X>(keyed: KeyedAnswer | undefined, refused: (error: KeyRefused) => Effect.Effect<never, X>): ReadFirstRunner<X> =>
      (options, read, body) =>
        Effect.flatMap(read(false), (row) => execute(options, (tx) => body(tx, row), keyed)).pipe(
          Effect.catchIf(
            (error): error is RowMoved => error instanceof RowMoved,
            () => execute(options, (tx) => Effect.flatMap(read(true), (row) => body(tx, row)), keyed)
          ),
          Effect.catchIf((error): error is RowMoved => error instanceof RowMoved, Effect.die),
          Effect.catchIf((error): error is KeyRefused => error instanceof KeyRefused, refused),
          Effect.map(([result]) => result)
        )

    const runWithUndoId = <A, E, R>(options: MutationOptions, body: (tx: Tx) => Effect.Effect<A, E, R>) => unkeyed(options, body)

    const run = <A, E, R>(options: MutationOptions, body: (tx: Tx) => Effect.Effect<A, E, R>) =>
      Effect.map(unkeyed(options, body), ([result]) => result)

    /**
     * `run` for a write under an Idempotency-Key (see `Idempotency.keyed`): the commit
     * statement also records `keyed`'s answer, rendered from the body's result, in a CTE of its
     * own, so the record costs no round trip. Fails with `KeyRefused`, everything rolled back,
     * when the key already has a record or another transaction holds it.
     */
    const runKeyed = <A, E, R>(options: MutationOptions, keyed: KeyedAnswer, body: (tx: Tx) => Effect.Effect<A, E, R>) =>
      Effect.map(
        Effect.catchIf(execute(options, body, keyed), (error): error is RowMoved => error instanceof RowMoved, Effect.die),
        ([result]) => result
      )

    /** `runKeyed` with `keyed` given, as a `Runner`. */
    const keyed = (answer: KeyedAnswer): Runner<KeyRefused> => (options, body) => runKeyed(options, answer, body)

    const plain: Runner<never> = run
    const readFirst: ReadFirstRunner<never> = readFirstWith(undefined, Effect.die)
    /** `readFirst` under an Idempotency-Key (`keyed`). */
    const readFirstKeyed = (answer: KeyedAnswer): ReadFirstRunner<KeyRefused> => readFirstWith(answer, Effect.fail)
    return { run: plain, runKeyed, keyed, runWithUndoId, readFirst, readFirstKeyed } as const
  })
}) {}
