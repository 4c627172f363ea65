import * as SqlClient from "@effect/sql/SqlClient"
import { Data, Effect } from "effect"
import type { RowChange } from "../changes/Changes.js"
import { Conflict, ValidationError } from "../kernel/Errors.js"
import type { JsonValue, Row } from "../kernel/Json.js"
import { projectRefusal } from "../projects/Project.js"
import { applyStep, type Direction, ordered, planStep, type Step } from "./Undo.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { Mutations } from "../pipeline/Mutations.js"
import { type Tx } from "../pipeline/Tx.js"
import { Quotas } from "../quotas/Quotas.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import {
  type AnyRow,
  CompletionsTable,
  decodeRow,
  ProjectsTable,
  QuotaPeriodsTable,
  type TableRow,
  type TableSpec,
  tablesByName,
  TasksTable,
  TimeSlotsTable
} from "../pipeline/Tables.js"
import { TaskQueries } from "../tasks/TaskQueries.js"
import { isVisibleTo, liveTasksIn, lockTasksInOrder, lockWithInbox } from "../tasks/TasksTable.js"
import { lockSlotSet, tryLockSlotSet } from "../slots/TimeSlotsTable.js"
import { RowsTaken } from "../sql/DatabaseFailures.js"
import { endedQuotasAmong } from "../quotas/TaskRolloverSql.js"
import { dropEntriesBefore, dropEntriesBeyond, entryCounts, lockNextEntry, markUndone, recentEntries, rowsOfNextEntry, tasksOfNextEntry, writersAfter } from "./UndoLog.js"
import type { UserId } from "../kernel/Ids.js"

const LOST_ACCESS = "it touches a task, project or slot you can no longer see"
const PROJECT_HIDDEN = "it would put a task in a project its owner cannot see"

/** Undo entries older than this are purged (CONTRACT §8). */
export const UNDO_RETENTION_DAYS = 30

/**
 * The most undo entries kept per user (README, Undo / redo). The spec sets no depth; without
 * one a busy user's log grew by a row per write for the whole retention window. A thousand
 * steps is far deeper than anyone walks back by hand.
 */
export const UNDO_DEPTH = 1000

/** Plans of the next entry's rows tried before its rows are locked after it (`lockNextWithItsRows`). */
const PLAN_TRIES = 5

/** The next entry touches rows its plan did not lock. */
class NextEntryMoved extends Data.TaggedError("NextEntryMoved") {}

/** Rows one trimming statement deletes at most, so it never holds the connection for long. */
const TRIM_BATCH = 1000

/**
 * Undo and redo over the log the mutation pipeline writes. Each runs as one pass through
 * the pipeline itself (one transaction, events, statistics), without writing a new entry.
 */
export class UndoService extends Effect.Service<UndoService>()("steady/UndoService", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const mutations = yield* Mutations
    const queries = yield* TaskQueries
    const quotas = yield* Quotas

    const counts = (userId: UserId, sessionStartId: number | undefined) => entryCounts(sql, userId, sessionStartId)

    /** Whether the task is visible to the user now, by the task reads' definition; undefined when it is gone. */
    const taskVisible = (userId: UserId, taskId: number) => isVisibleTo(sql, userId, taskId)

    /**
     * Why the user may no longer have this step carried out, or undefined. Access is judged
     * now, not when the action was recorded: rows as they are and as the step would leave
     * them must both be the user's to write (README, Undo / redo: access is judged at undo/redo time).
     */
    const accessRefusal = Effect.fnUntraced(function*(user: CurrentUserShape, table: TableSpec, current: AnyRow | undefined, step: Step) {
      const after = applyStep(current, step)
      const rows = [current, after].filter((r): r is Row => r !== undefined)
      // Rows of the undo log hold whole rows of the table named (see `applyStep`).
      const as = <R extends TableRow>(spec: TableSpec<R>) => rows.map((r) => decodeRow(spec, r))
      switch (table.name) {
        case "tasks": {
          const [was, will] = [current, after].map((r) => r === undefined ? undefined : decodeRow(TasksTable, r))
          if (was !== undefined && (yield* taskVisible(user.id, step.id)) !== true) return LOST_ACCESS
          if (will !== undefined && (was === undefined || will.project_id !== was.project_id)) {
            const target = yield* queries.projectAccess(will.project_id)
            if (projectRefusal(target, user.id, will.user_id) !== undefined) return PROJECT_HIDDEN
          }
          return undefined
        }
        case "completions":
        case "quota_periods": {
          const records: ReadonlyArray<{ readonly task_id: number; readonly user_id: number }> =
            table.name === "completions" ? as(CompletionsTable) : as(QuotaPeriodsTable)
          for (const row of records) {
            const visible = yield* taskVisible(user.id, row.task_id)
            if (visible === false || (visible === undefined && row.user_id !== user.id)) return LOST_ACCESS
          }
          return undefined
        }
        case "projects":
          return as(ProjectsTable).every((r) => r.owner_id === user.id) ? undefined : LOST_ACCESS
        case "time_slots":
          return as(TimeSlotsTable).every((r) => r.user_id === user.id) ? undefined : LOST_ACCESS
        default:
          return LOST_ACCESS
      }
    })

    /** Carries out one change in one direction, keeping statistics in step. */
    const applyChange = Effect.fnUntraced(function*(tx: Tx, change: RowChange, direction: Direction, touched: Map<number, Set<string>>) {
      const table = tablesByName[change.table]
      if (table === undefined) return
      const current = yield* tx.lock(table, change.id)
      const step = planStep(change, direction, current, tx.now.toISOString())
      const refusal = yield* accessRefusal(tx.user, table, current, step)
      if (refusal !== undefined) {
        return yield* Effect.fail(new Conflict({ message: `Cannot ${direction}: ${refusal}` }))
      }
      switch (step.kind) {
        case "skip":
          return
        case "update": {
          const fields = yield* tx.update(table, step.id, step.writes)
          if (table.name === "tasks") {
            const set = touched.get(step.id) ?? new Set()
            fields.forEach((f) => set.add(f))
            touched.set(step.id, set)
            const next = step.writes.snooze_count
            const was = current?.snooze_count
            if (typeof next === "number" && typeof was === "number") tx.count("snoozes", next - was)
          }
          return
        }
        case "insert": {
          yield* tx.restoreRow(table, step.id, step.row)
          if (table.name === "completions") tx.count("completions", 1, new Date(decodeRow(CompletionsTable, step.row).completed_at))
          if (table.name === "tasks") touched.set(step.id, new Set(["deleted_at"]))
          return
        }
        case "delete": {
          if (table.name === "projects") {
            const used = yield* liveTasksIn(sql, step.id)
            if (used > 0) {
              return yield* Effect.fail(ValidationError.of("The project has tasks now; move them out before taking its creation back"))
            }
            // Tasks in the trash (typically one whose creation was just undone) wait in their owner's Inbox,
            // else undoing "create task, create project" would stop at the project for good.
            const trashed = yield* lockWithInbox(sql, step.id)
            for (const task of trashed) yield* tx.update(TasksTable, task.id, { project_id: task.inbox })
          }
          yield* tx.remove(table, step.id)
          if (table.name === "completions" && current !== undefined) {
            tx.count("completions", -1, new Date(decodeRow(CompletionsTable, current).completed_at))
          }
          return
        }
      }
    })

    /**
     * Closes the ended periods of the quotas the next entry touches, first (as a progress log
     * does): a log undone after its period ended must not change that period's count (spec
     * §4.6); the closed period moves progress_period_start, so the log's guard skips it.
     */
    const settlePeriods = Effect.fnUntraced(function*(user: CurrentUserShape, direction: Direction) {
      const now = yield* clockNow
      const ended = yield* endedQuotasAmong(sql, user.id, now, tasksOfNextEntry(sql, user.id, direction))
      for (const { id } of ended) yield* quotas.rollover(id)
    })

    /**
     * Locks the rows of a change list in the order the forward writes take them: the user's
     * slot set (`lockSlotSet`) and then tasks in id order. Returns what it locked. With
     * "nowait", a row another transaction holds ends this one as a conflict (`RowsTaken`, or
     * PostgreSQL's lock_not_available), which is run again.
     */
    const lockInWriteOrder = (
      userId: UserId,
      rows: ReadonlyArray<{ readonly table: string; readonly id: number }>,
      mode: "wait" | "nowait" = "wait"
    ) =>
      Effect.gen(function*() {
        const slots = rows.some((r) => r.table === "time_slots")
        if (slots && mode === "wait") yield* lockSlotSet(sql, userId)
        else if (slots && !(yield* tryLockSlotSet(sql, userId))) yield* Effect.die(new RowsTaken())
        const tasks = [...new Set(rows.filter((r) => r.table === "tasks").map((r) => r.id))].sort((a, b) => a - b)
        yield* lockTasksInOrder(sql, tasks, mode)
        return { slots, tasks: new Set(tasks) }
      })

    /**
     * The next entry, locked after the rows it touches, in the order the forward writes take
     * them (`lockInWriteOrder`). Forward writes lock their rows first and, at commit, clear the
     * redo stack, which waits on a redo's locked entry; locking the entry first and its rows
     * change by change made undo, redo and those writes deadlock in storms, each deadlock found
     * only after PostgreSQL's one-second deadlock timeout while the pool waited (503s).
     *
     * The rows are those of the next entry read a moment before. If other writes moved the
     * next entry meanwhile to one touching rows not locked, the savepoint is rolled back (its
     * locks go with it) and the next plan covers the rows of every entry seen so far: in a
     * storm of writes to one set of rows the plan reaches that set in a try or two instead of
     * chasing the newest entry. After PLAN_TRIES the entry is locked and then its rows without
     * waiting: waiting for them while holding the entry is the deadlock above, so a row that is
     * not free ends the transaction as a conflict and `TransactionConflicts` runs it again.
     */
    const lockNextWithItsRows = Effect.fnUntraced(function*(userId: UserId, direction: Direction) {
      const seen: Array<{ readonly table: string; readonly id: number }> = []
      for (let attempt = 1; attempt <= PLAN_TRIES; attempt++) {
        const locked = yield* sql.withTransaction(Effect.gen(function*() {
          const held = yield* lockInWriteOrder(userId, [...seen, ...yield* rowsOfNextEntry(sql, userId, direction)])
          const entry = yield* lockNextEntry(sql, userId, direction)
          const covered = entry === undefined || entry.changes.every((c) =>
            c.table === "time_slots" ? held.slots : c.table === "tasks" ? held.tasks.has(c.id) : true
          )
          if (!covered) seen.push(...entry.changes.map(({ table, id }) => ({ table, id })))
          return covered ? { entry } : yield* Effect.fail(new NextEntryMoved())
        })).pipe(Effect.catchTag("NextEntryMoved", () => Effect.succeed(undefined)), Effect.orDie)
        if (locked !== undefined) return locked.entry
      }
      const entry = yield* lockNextEntry(sql, userId, direction)
      if (entry !== undefined) yield* lockInWriteOrder(userId, entry.changes, "nowait")
      return entry
    })

    const run = (user: CurrentUserShape, direction: Direction, sessionStartId: number | undefined) =>
      Effect.zipRight(settlePeriods(user, direction), mutations.run({ user, action: direction === "undo" ? "undo" : "redo", undoable: false }, (tx) =>
        Effect.gen(function*() {
          const entry = yield* lockNextWithItsRows(user.id, direction)
          if (entry === undefined) {
            return yield* Effect.fail(ValidationError.of(direction === "undo" ? "Nothing to undo" : "Nothing to redo"))
          }
          const touched = new Map<number, Set<string>>()
          for (const change of ordered(entry.changes, direction)) yield* applyChange(tx, change, direction, touched)
          for (const [taskId, fields] of touched) {
            const task = yield* queries.wire(taskId)
            tx.emit({ event: "task.updated", taskId, data: { task: task as JsonValue, fields_changed: [...fields] } })
          }
          yield* markUndone(sql, entry.id, direction === "undo")
          tx.describe(`${direction === "undo" ? "Undid" : "Redid"}: ${entry.description}`)
          return entry
        }))).pipe(
          Effect.flatMap((entry) =>
            Effect.map(counts(user.id, sessionStartId), (c) => ({
              action: entry.action,
              description: entry.description,
              tasks_affected: entry.tasks_affected,
              undoable_count: c.undoable,
              redoable_count: c.redoable
            }))
          )
        )

    const status = (user: CurrentUserShape) =>
      Effect.map(counts(user.id, undefined), (c) => ({
        latest_id: c.latest,
        undoable_count: c.undoable,
        redoable_count: c.redoable
      }))

    const history = (user: CurrentUserShape, limit: number) =>
      Effect.map(recentEntries(sql, user.id, limit), (history) => ({ history, count: history.length }))

    /** Drops entries older than the retention window; returns how many went. */
    const purge = Effect.gen(function*() {
      const now = yield* clockNow
      const cutoff = new Date(now.getTime() - UNDO_RETENTION_DAYS * 86_400_000).toISOString()
      return yield* dropEntriesBefore(sql, cutoff)
    }).pipe(Effect.orDie)

    /**
     * Drops each user's entries beyond the newest UNDO_DEPTH, looking only at users who
     * recorded an entry after `afterId` (0: everyone). Returns how many went and the newest id
     * seen, the next call's `afterId`.
     */
    const trim = (afterId: number) =>
      Effect.gen(function*() {
        const writers = yield* writersAfter(sql, afterId)
        let trimmed = 0
        for (const { user_id } of writers) {
          for (;;) {
            const dropped = yield* dropEntriesBeyond(sql, user_id, UNDO_DEPTH, TRIM_BATCH)
            trimmed += dropped
            if (dropped < TRIM_BATCH) break
          }
        }
        const latest = writers.reduce((max, w) => Math.max(max, w.latest), afterId)
        return { trimmed, latest }
      }).pipe(Effect.orDie)

    return {
      undo: (user: CurrentUserShape, sessionStartId?: number) =>
        Effect.map(run(user, "undo", sessionStartId), ({ action, ...rest }) => ({ undone_action: action, ...rest })),
      redo: (user: CurrentUserShape, sessionStartId?: number) =>
        Effect.map(run(user, "redo", sessionStartId), ({ action, ...rest }) => ({ redone_action: action, ...rest })),
      status,
      history,
      purge,
      trim
    } as const
  })
}) {}
