import type { Fragment } from "@effect/sql/Statement"
import type { Effect } from "effect"
import type { ActionName, EventName, RowChange, StatName } from "../changes/Changes.js"
import type { JsonValue, Row } from "../kernel/Json.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import type { Writes } from "./Rows.js"
import type { TableRow, TableSpec } from "./Tables.js"
import type { Pending, PendingId, Rendered } from "./Pending.js"

/*
 * What a write's body sees of the mutation pipeline: the `Tx` it writes through, and the
 * options and values it passes. `Mutations.ts` runs a body in its transaction.
 */

/**
 * What a mutation body writes through. Every row write goes through `insert`, `update`
 * or `remove`, so the undo entry is built from what really changed, never by hand.
 */
export interface Tx {
  readonly now: Date
  readonly user: CurrentUserShape
  readonly insert: <R extends TableRow>(table: TableSpec<R>, values: Writes<R>) => Effect.Effect<R>
  /** Writes only the fields whose value differs; returns the changed field names. */
  readonly update: <R extends TableRow>(
    table: TableSpec<R>,
    id: R["id"],
    values: Writes<R>,
    options?: UpdateOptions<R>
  ) => Effect.Effect<ReadonlyArray<string>>
  /** `update`, with the row as it leaves the statement rendered as wire JSON (the table's `wire`). */
  readonly updateWire: <R extends TableRow, W>(
    table: TableSpec<R, W>,
    id: R["id"],
    values: Writes<R>,
    options?: UpdateOptions<R>
  ) => Effect.Effect<{ readonly fields: ReadonlyArray<string>; readonly wire: W }>
  /**
   * `updateWire` for the LAST write of a single-row mutation: the UPDATE (and `alsoInsert`)
   * go out as the first CTEs of the commit statement, saving a round trip. The wire JSON is
   * rendered by that statement: `wire` is `Pending` until then. Put it in events' data, and
   * return it (or `wire.with({ more })`) as the body's result: the mutation answers with the
   * rendered value. Read no row after this call. Once per mutation.
   */
  readonly updateAtCommit: <R extends TableRow, W>(
    table: TableSpec<R, W>,
    id: R["id"],
    values: Writes<R>,
    options: UpdateOptions<R> & { readonly current: R }
  ) => Effect.Effect<{ readonly fields: ReadonlyArray<string>; readonly wire: Pending<W> }>
  /**
   * An insert for the LAST write of a single-row create: the INSERT goes out as the first
   * CTE of the commit statement, so a create is one round trip. `wire` as for
   * `updateAtCommit`; `id` is pending too (an event's `taskId`). Once per mutation, and no
   * other deferred write.
   */
  readonly insertAtCommit: <R extends TableRow, W>(
    table: TableSpec<R, W>,
    values: Writes<R>,
    /** Columns whose value is SQL (e.g. a subquery), checked as the values are. */
    computed?: Readonly<Record<string, Fragment>>
  ) => Effect.Effect<PendingInsert<W>>
  /** Re-creates a row with its old id (undo of a delete, redo of an insert). */
  readonly restoreRow: (table: TableSpec<TableRow>, id: number, row: Row) => Effect.Effect<void>
  readonly remove: (table: TableSpec<TableRow>, id: number) => Effect.Effect<void>
  /** Reads a row and locks it for the rest of the transaction. */
  readonly lock: <R extends TableRow>(table: TableSpec<R>, id: R["id"]) => Effect.Effect<R | undefined>
  readonly emit: (event: TxEvent) => void
  /** Adds to the user's daily statistics, on the local date of `at` (default: now). */
  readonly count: (stat: StatName, n?: number, at?: Date) => void
  /**
   * Runs `writes` as upkeep the service owes before the user's write (closing a quota's ended
   * periods): in this transaction, but as a pass of its own would record them: their rows
   * reach the change feed, not this mutation's undo entry, and what they `count` goes to
   * `owner`'s statistics on `owner`'s calendar.
   */
  readonly upkeep: <A, E, R>(owner: CurrentUserShape, writes: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly describe: (description: string) => void
}

/** A row's wire JSON as the database renders it (e.g. `steady_task_json`). */
export type Wire = Record<string, unknown>

export interface PendingInsert<W> {
  readonly id: PendingId
  readonly wire: Pending<W>
}

/** A domain event as a body emits it: its task and data may be pending (the commit statement renders them). */
export interface TxEvent {
  readonly event: EventName
  readonly taskId: number | PendingId | null
  readonly data: { readonly [k: string]: JsonValue | Pending<unknown> }
}

/** A user's counts on one local date. */
export interface DayStats {
  readonly userId: number
  readonly date: string
  readonly counts: Record<StatName, number>
}

/** A row change as the pipeline records it: an inserted row's id may be pending. */
export type TxChange = RowChange<number | PendingId>

/**
 * How a service runs a mutation: `Mutations.run`, or `Mutations.keyed(answer)` for a write
 * under an Idempotency-Key (which may fail with `X` = `KeyRefused`).
 */
export type Runner<X> = <A, E, R>(
  options: MutationOptions,
  body: (tx: Tx) => Effect.Effect<A, E, R>
) => Effect.Effect<Resolved<A>, E | X, R>

/**
 * A mutation of one row that reads the row before its transaction (`read(false)`, with its
 * version) and, when another write changes it before the commit, runs again with the row
 * read locked inside the transaction (`read(true)`). `body` passes the version it was given
 * to `updateAtCommit` as `seen`.
 */
export type ReadFirstRunner<X> = <P, A, E1, E2, R1, R2>(
  options: MutationOptions,
  read: (lock: boolean) => Effect.Effect<P, E1, R1>,
  body: (tx: Tx, row: P) => Effect.Effect<A, E2, R2>
) => Effect.Effect<Resolved<A>, E1 | E2 | X, R1 | R2>

/** A body's result as the mutation answers it: a `Pending` becomes the value the commit statement rendered. */
export type Resolved<A> = A extends Pending<infer W> ? Rendered<W> : A

/** The untyped form of a row's writes, for the pipeline's own bookkeeping (its keys are checked columns). */
export const untyped = <R extends TableRow>(values: Writes<R>): Row => values as Row

/** A row to insert along with an update (`UpdateOptions.alsoInsert`), checked against its table. */
export interface Insertion {
  readonly table: TableSpec<TableRow>
  readonly values: Row
}

export const insertion = <R extends TableRow>(table: TableSpec<R>, values: Writes<R>): Insertion => ({
  table,
  values: untyped(values)
})

export interface UpdateOptions<R extends TableRow> {
  /** Fields whose current value the undo entry keeps as a guard (see undo). */
  readonly guard?: ReadonlyArray<keyof Writes<R> & string>
  /**
   * The row as the caller locked it earlier in this transaction (`FOR UPDATE`), so the
   * diff needs no second read.
   */
  readonly current?: R
  /**
   * For `updateAtCommit` in a `readFirst` mutation: the version of `current` as read before
   * the transaction. The UPDATE requires it, and the mutation is run again with the row locked
   * when another write changed the row in between.
   */
  readonly seen?: string | undefined
  /**
   * With `seen`: what else the read before the transaction had that the write depends on
   * (a task's calendar), as a condition in SQL on the row (named as its table). The UPDATE
   * requires it too, like the version. Needed when the read is a kept row (`RecentRows`),
   * whose other inputs may have changed since it was kept.
   */
  readonly stillHolds?: Fragment | undefined
  /**
   * With `updateAtCommit`: keep the row as written, its version and `extra` (what the read had
   * besides the row) in `RecentRows`, so that the row's next `readFirst` write in this process
   * can start from it instead of reading it. The row kept is `current` with the columns the
   * UPDATE changed over it (`Tables.updatedRow`), so `current` must be the version the UPDATE
   * applies to: locked in this transaction, or required by `seen`.
   */
  readonly keep?: { readonly extra: unknown }
  /**
   * A row to insert in the same statement (a CTE), e.g. the completion record of a done:
   * recorded after the update, as if inserted by `insert` right after it.
   */
  readonly alsoInsert?: Insertion
}

export interface MutationOptions {
  readonly user: CurrentUserShape
  readonly action: ActionName
  /** Actions that cannot be taken back (settings, credentials) skip the undo log. */
  readonly undoable?: boolean
}

