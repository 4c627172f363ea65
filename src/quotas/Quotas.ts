import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Either } from "effect"
import { ValidationError } from "../kernel/Errors.js"
import type { TaskId, UserId } from "../kernel/Ids.js"
import type { TaskRow, Writes } from "../pipeline/Rows.js"
import { localDate } from "../kernel/LocalTime.js"
import {
  nearestBoundary,
  nextBoundary,
  type Period,
  periodContaining,
  type PeriodSettings,
  parsePeriodRule
} from "./QuotaPeriods.js"
import { closingOf, type QuotaState } from "./QuotaClosing.js"
import { isQuota } from "../tasks/TaskRules.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { Mutations } from "../pipeline/Mutations.js"
import { type Runner, type Tx } from "../pipeline/Tx.js"
import type { KeyedAnswer } from "../pipeline/IdempotencyRecord.js"
import { type BatchResult, closeBatch, SWEEP_BATCH, SWEEP_WORKERS, type SweepCursor } from "./QuotaSweep.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { CompletionsTable, QuotaPeriodsTable, TasksTable } from "../pipeline/Tables.js"
import { TaskQueries } from "../tasks/TaskQueries.js"
import { UserCalendar } from "../accounts/UserCalendar.js"
import { ownerOf as taskOwner } from "../tasks/TasksTable.js"
import { quotaListJson } from "../tasks/TaskListSql.js"
import { runningQuotasOf } from "./TaskRolloverSql.js"

export type QuotaDayState = TaskRow["quota_day_state"]

export const freshDayState = (date: string): QuotaDayState => ({ date, logged: 0, did: [], considered: [], did_applied: {} })

/** Today's prompt state, reset when the local day has changed. */
export const dayStateFor = (state: QuotaDayState, today: string): QuotaDayState =>
  state.date === today ? state : freshDayState(today)

const iso = (d: Date) => d.toISOString()
const dateOrNull = (value: string | null) => (value === null ? null : new Date(value))

/** A locked task row as the closing rule reads it. */
const quotaState = (row: TaskRow): QuotaState => ({
  rrule: row.rrule,
  periodStart: dateOrNull(row.progress_period_start),
  periodEnd: dateOrNull(row.progress_period_end),
  current: row.progress_current,
  target: row.progress_target,
  completionCount: row.completion_count,
  firstCompletedAt: row.first_completed_at
})

/**
 * Quota periods: the first period, closing ended ones (rollover), early closing, progress,
 * and realignment when week_start or the time zone changes.
 */
export class Quotas extends Effect.Service<Quotas>()("steady/Quotas", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const mutations = yield* Mutations
    const queries = yield* TaskQueries
    const calendars = yield* UserCalendar

    /** The period a quota starts in, or nothing for a legacy quota without a rule. */
    const initialPeriod = (rrule: string | null, settings: PeriodSettings, now: Date): Period | undefined => {
      if (rrule === null) return undefined
      const rule = parsePeriodRule(rrule)
      return Either.isLeft(rule) ? undefined : periodContaining(rule.right, settings, now)
    }

    /**
     * Records every period of `row` (locked) that has ended by `now` (see `closingOf`), then
     * moves the task to the period containing now. Answers how many periods it closed and the
     * row as it leaves it, so the caller writes on without reading the row again.
     */
    const closeEnded = Effect.fnUntraced(function*(tx: Tx, row: TaskRow, settings: PeriodSettings) {
      const closing = closingOf(quotaState(row), settings, tx.now)
      if (closing === undefined) return { closed: 0, row }
      const target = row.progress_target
      for (const { count, period } of closing.closed) yield* recordPeriod(tx, row, period, count, target, false)
      const writes: Writes<TaskRow> = {
        progress_current: 0,
        progress_period_start: iso(closing.next.start),
        progress_period_end: iso(closing.next.end),
        ...(closing.completion !== undefined
          ? {
            completion_count: closing.completion.completionCount,
            first_completed_at: closing.completion.firstCompletedAt,
            last_completed_at: closing.completion.lastCompletedAt
          }
          : {})
      }
      yield* tx.update(TasksTable, row.id, writes, { current: row })
      return { closed: closing.closed.length, row: { ...row, ...writes } }
    })

    /**
     * The rollover a user's write on a quota owes first (progress, done with close_period):
     * its ended periods closed in the write's transaction, as the rollover's own pass would
     * record them (`Tx.upkeep`: no undo entry, the owner's statistics). `row` is locked, and
     * `calendar` its owner's. Answers the row as it leaves it.
     */
    const rolloverStep = (tx: Tx, row: TaskRow, calendar: PeriodSettings & { readonly zone: string }) =>
      row.done || row.deleted_at !== null
        ? Effect.succeed(row)
        : Effect.map(tx.upkeep(ownerOf(row.user_id, calendar.zone), closeEnded(tx, row, calendar)), (closed) => closed.row)

    const recordPeriod = Effect.fnUntraced(function*(tx: Tx, row: TaskRow, period: Period, count: number, target: number, early: boolean) {
      const met = count >= target
      yield* tx.insert(QuotaPeriodsTable, {
        task_id: row.id,
        user_id: row.user_id,
        period_start: iso(period.start),
        period_end: iso(period.end),
        count,
        target,
        met,
        closed_at: iso(tx.now),
        closed_early: early
      })
      if (met) {
        yield* tx.insert(CompletionsTable, {
          task_id: row.id,
          user_id: row.user_id,
          completed_at: iso(period.end),
          due_at_was: null,
          due_at_next: null,
          task_title: row.title,
          project_id: row.project_id,
          is_reminder: false,
          is_tracked: row.is_tracked,
          progress_target: target
        })
        // The completion belongs to the period's last local day.
        tx.count("completions", 1, new Date(Math.min(period.end.getTime() - 1, tx.now.getTime())))
      }
    })

    const ownerOf = (userId: UserId, zone: string): CurrentUserShape => ({ id: userId, username: "", timezone: zone })

    /** Rollover of one quota in its own transaction: no undo entry, no webhook. */
    const rollover = Effect.fnUntraced(function*(taskId: TaskId) {
      const owner = yield* taskOwner(sql, taskId)
      if (owner === undefined) return 0
      const settings = yield* calendars.of(owner)
      return yield* mutations.run(
        { user: ownerOf(owner, settings.zone), action: "rollover", undoable: false },
        (tx) =>
          Effect.gen(function*() {
            const row = yield* tx.lock(TasksTable, taskId)
            if (row === undefined || row.done || row.deleted_at !== null) return 0
            return (yield* closeEnded(tx, row, settings)).closed
          })
      )
    })

    /**
     * One sweep: every quota whose period has ended, oldest first, read through the partial
     * index on (progress_period_end, id), so the cost follows the ended periods only.
     * Returns the periods this sweep recorded.
     *
     * First in batches claimed with SKIP LOCKED (see QuotaSweep): instances sweeping at once,
     * and the workers of one sweep, split the work. Rows passed by were being closed by another sweep or held by a user's
     * write; a second pass waits for them one at a time (one lock per transaction, so it
     * cannot deadlock with a write holding several), so when a sweep returns every period
     * ended by its start is recorded, whoever recorded it.
     */
    const sweep = Effect.fnUntraced(function*(batch = SWEEP_BATCH) {
      const now = yield* clockNow
      // Batches write one after the other on a connection; two workers keep the server's
      // cores busy (on the embedded database they simply take turns).
      const worker = Effect.gen(function*() {
        let closed = 0
        let cursor: SweepCursor | undefined = undefined
        for (;;) {
          const result: BatchResult = yield* closeBatch(sql, now, cursor, batch)
          closed += result.closed
          cursor = result.cursor
          if (result.claimed < batch) return closed
        }
      })
      const shares = yield* Effect.all(Array.from({ length: SWEEP_WORKERS }, () => worker), { concurrency: "unbounded" })
      let closed = shares.reduce((sum, n) => sum + n, 0)
      let cursor: SweepCursor | undefined = undefined
      for (;;) {
        const result: BatchResult = yield* closeBatch(sql, now, cursor, 1, false)
        closed += result.closed
        cursor = result.cursor
        if (result.claimed === 0) return closed
      }
    })

    /**
     * done with close_period: the current period closes now; the rest of it starts afresh.
     * Answers the last write on the row (and the row it applies to) for the caller to make:
     * a single done sends it with its commit statement.
     */
    const closeEarly = Effect.fnUntraced(function*(tx: Tx, row: TaskRow, settings: PeriodSettings) {
      if (row.progress_period_start === null || row.progress_period_end === null) {
        // A legacy quota without a period: what accumulated closes now.
        const period = { start: new Date(row.created_at), end: tx.now }
        yield* recordPeriod(tx, row, period, row.progress_current, row.progress_target, true)
        return { current: row, writes: completionFields(row, row.progress_current >= row.progress_target, tx.now) }
      }
      const fresh = (yield* closeEnded(tx, row, settings)).row
      // closeEnded leaves the period set: it moves it, never clears it.
      const period = { start: new Date(fresh.progress_period_start!), end: tx.now }
      const count = fresh.progress_current
      const met = count >= fresh.progress_target
      yield* recordPeriod(tx, fresh, period, count, fresh.progress_target, true)
      return {
        current: fresh,
        writes: { ...completionFields(fresh, met, tx.now), progress_period_start: iso(tx.now) }
      }
    })

    const completionFields = (row: TaskRow, met: boolean, now: Date): Writes<TaskRow> => ({
      progress_current: 0,
      ...(met
        ? {
          completion_count: row.completion_count + 1,
          first_completed_at: row.first_completed_at ?? iso(now),
          last_completed_at: iso(now)
        }
        : {})
    })

    /**
     * POST /api/tasks/{id}/progress: one transaction that locks the task once (with its
     * owner's calendar). An ended period is closed first (`rolloverStep`), so the log counts in
     * the new one; the log goes out with the commit statement.
     */
    const progressWith = <X>(run: Runner<X>, user: CurrentUserShape, id: TaskId, delta: number) =>
      run({ user, action: "progress" }, (tx) =>
        Effect.gen(function*() {
          const locked = yield* queries.lockForWrite(user, id)
          const row = yield* rolloverStep(tx, locked.current, locked.calendar)
          if (!isQuota(row)) {
            return yield* Effect.fail(ValidationError.field("id", "Progress is logged on quotas only"))
          }
          if (row.deleted_at !== null) {
            return yield* Effect.fail(ValidationError.field("id", "Cannot log progress on a task in the trash"))
          }
          const current = row.progress_current
          const next = Math.max(0, current + delta)
          const today = localDate(tx.now, locked.calendar.zone)
          const state = dayStateFor(row.quota_day_state, today)
          // Guarded by the period: a log is not taken back once its period has closed.
          const { wire: task } = yield* tx.updateAtCommit(TasksTable, id, {
            progress_current: next,
            quota_day_state: { ...state, logged: state.logged + (next - current) }
          }, { current: row, guard: ["progress_period_start"] })
          const target = row.progress_target
          const met = next >= target
          tx.emit({ event: "task.progressed", taskId: id, data: { task, progress_current: next, progress_target: target, met } })
          const description = `${next}/${target}`
          tx.describe(`Logged ${delta >= 0 ? "+" : ""}${delta} on '${row.title}' (${description})`)
          return task.with({ met, description })
        }))

    /**
     * week_start or time zone changed. A weekly quota's current period now ends at the first
     * boundary under the new settings (spec §3, period rule 4; CONTRACT §5 treats a zone change
     * the same); any other quota's period ends at the new-zone boundary nearest its old end,
     * so a zone change shifts it rather than cutting it short. Periods that have ended by then
     * are closed at once, before the response.
     */
    const realign = (
      tx: Tx,
      userId: UserId,
      settings: PeriodSettings,
      changed: { readonly weekStart: boolean; readonly zone: boolean }
    ) =>
      Effect.gen(function*() {
        const rows = yield* runningQuotasOf(sql, userId)
        for (const { id } of rows) {
          const row = (yield* tx.lock(TasksTable, id))!
          if (row.rrule === null) continue
          const rule = parsePeriodRule(row.rrule)
          if (Either.isLeft(rule)) continue
          const weekly = rule.right.freq === "WEEKLY"
          if (!weekly && !changed.zone) continue
          // Close what had already ended under the old settings first.
          const fresh = (yield* closeEnded(tx, row, settings)).row
          // closeEnded moves a period, never clears it: both ends are still set.
          const start = new Date(fresh.progress_period_start!)
          const end = weekly
            ? nextBoundary(rule.right, settings, start)
            : nearestBoundary(rule.right, settings, new Date(fresh.progress_period_end!), start)
          const realigned = { progress_period_end: iso(end) }
          yield* tx.update(TasksTable, id, realigned, { current: fresh })
          yield* closeEnded(tx, { ...fresh, ...realigned }, settings)
        }
      })

    /** GET /api/quotas: open quotas; a period that ended but is not rolled yet counts 0. */
    const listJson = Effect.fnUntraced(function*(user: CurrentUserShape) {
      const now = yield* clockNow
      return yield* quotaListJson(sql, user.id, now)
    })

    const progress = (user: CurrentUserShape, id: TaskId, delta: number) => progressWith(mutations.run, user, id, delta)
    /** `progress` under an Idempotency-Key: the answer is recorded with the key by the same statement. */
    const progressKeyed = (user: CurrentUserShape, id: TaskId, delta: number, keyed: KeyedAnswer) =>
      progressWith(mutations.keyed(keyed), user, id, delta)

    return {
      initialPeriod,
      closeEnded,
      rollover,
      rolloverStep,
      sweep,
      closeEarly,
      progress,
      progressKeyed,
      realign,
      listJson
    } as const
  })
}) {}
