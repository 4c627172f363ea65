import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { ValidationError } from "../kernel/Errors.js"
import type { JsonValue } from "../kernel/Json.js"
import type { TaskRow } from "../pipeline/Rows.js"
import type { Task } from "../tasks/Task.js"
import { localDate, localTimeOfDay, startOfLocalDay, startOfNextLocalDay } from "../kernel/LocalTime.js"
import {
  isNumberedDaily,
  parsePromptKey,
  promptsFor,
  type QuotaPrompt,
  slotForTime
} from "./QuotaPrompts.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { Mutations } from "../pipeline/Mutations.js"
import { type Tx } from "../pipeline/Tx.js"
import { PreferencesService } from "../accounts/PreferencesService.js"
import { dayStateFor, Quotas } from "./Quotas.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { TasksTable } from "../pipeline/Tables.js"
import { TaskQueries } from "../tasks/TaskQueries.js"
import { quotasAmong } from "../tasks/TasksTable.js"
import { type QuotaWire, quotasForPrompts, remindersDueBy } from "../tasks/TaskListSql.js"
import { slotsOf } from "../slots/TimeSlotsTable.js"

/** GET /api/reminders and the quota prompt actions (spec "Quota reminders", CONTRACT §8). */
export class Reminders extends Effect.Service<Reminders>()("steady/Reminders", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const mutations = yield* Mutations
    const queries = yield* TaskQueries
    const quotas = yield* Quotas
    const preferences = yield* PreferencesService

    const today = Effect.fnUntraced(function*(user: CurrentUserShape) {
      const prefs = yield* preferences.get(user)
      const now = yield* clockNow
      return { prefs, now, date: localDate(now, prefs.timezone) }
    })

    const promptInput = (task: QuotaWire, date: string, now: Date) => {
      const state = dayStateFor(task.quota_day_state, date)
      const periodEnded = task.progress_period_end !== null && new Date(task.progress_period_end) <= now
      return {
        id: task.id,
        title: task.title,
        rrule: task.rrule,
        // Just after a boundary the old count may still be held; prompts treat it as 0.
        progress_current: periodEnded ? 0 : task.progress_current,
        progress_target: task.progress_target,
        quota_prompt_config: task.quota_prompt_config,
        did: state.did,
        considered: state.considered,
        loggedToday: state.logged
      }
    }

    const list = Effect.fnUntraced(function*(user: CurrentUserShape) {
      const { date, now, prefs } = yield* today(user)
      const zone = prefs.timezone
      const slots = yield* slotsOf(sql, user.id)
      const dayStart = startOfLocalDay(now, zone)
      const dayEnd = startOfNextLocalDay(now, zone)
      const reminders = yield* remindersDueBy(sql, user.id, dayEnd)
      const quotaRows = prefs.quota_prompts_enabled ? yield* quotasForPrompts(sql, user.id) : []
      const defaultSlot = prefs.quota_prompt_slot_id ?? prefs.default_reminder_slot_id
      const prompts: Array<QuotaPrompt> = quotaRows.flatMap(({ task }) =>
        promptsFor(promptInput(task, date, now), slots, defaultSlot, date)
      )
      const groups = slots.map((slot) => ({
        slot,
        reminders: [] as Array<Task>,
        prompts: [] as Array<QuotaPrompt>,
        count: 0,
        considered: 0
      }))
      for (const { task } of reminders) {
        const time = task.due_at !== null ? localTimeOfDay(new Date(task.due_at), zone) : (task.anchor_time ?? "00:00")
        const slot = slotForTime(slots, time)
        const group = groups.find((g) => g.slot.id === slot?.id)
        if (group === undefined) continue
        group.reminders.push(task)
        const considered = task.last_considered_at !== null && new Date(task.last_considered_at) >= dayStart
        if (considered) group.considered++
      }
      for (const prompt of prompts) {
        const group = groups.find((g) => g.slot.id === prompt.slot_id)
        if (group === undefined) continue
        group.prompts.push(prompt)
        if (prompt.considered || prompt.done) group.considered++
      }
      for (const group of groups) group.count = group.reminders.length + group.prompts.length
      return {
        date,
        groups,
        total: reminders.length,
        prompts_total: prompts.length,
        has_any: reminders.length + prompts.length > 0
      }
    })

    /** Every key must name one of the caller's own quotas, for today: else the whole request is a 400. */
    const checkKeys = Effect.fnUntraced(function*(user: CurrentUserShape, keys: ReadonlyArray<string>, date: string) {
      const parsed = []
      for (const [index, key] of keys.entries()) {
        const p = parsePromptKey(key)
        if (p === undefined) return yield* Effect.fail(ValidationError.field(`keys.${index}`, `"${key}" is not a prompt key`))
        if (p.date !== date) {
          return yield* Effect.fail(ValidationError.field(`keys.${index}`, `"${key}" is not for today (${date})`))
        }
        parsed.push({ key, ...p })
      }
      const ids = [...new Set(parsed.map((p) => p.taskId))]
      const owned = ids.length === 0 ? [] : yield* quotasAmong(sql, user.id, ids)
      for (const p of parsed) {
        const quota = owned.find((o) => o.id === p.taskId)
        if (quota === undefined) return yield* Effect.fail(ValidationError.field("keys", `"${p.key}" does not name one of your quotas`))
        if ((p.number === 0) === isNumberedDaily(quota.rrule) || p.number > quota.progress_target) {
          return yield* Effect.fail(ValidationError.field("keys", `"${p.key}" has the wrong prompt number for its quota`))
        }
      }
      return parsed
    })

    type Parsed = Effect.Effect.Success<ReturnType<typeof checkKeys>>

    const forEachQuota = (
      tx: Tx,
      parsed: Parsed,
      date: string,
      apply: (row: TaskRow, keys: Parsed, state: ReturnType<typeof dayStateFor>) => Effect.Effect<{ moved: boolean }>
    ) =>
      Effect.gen(function*() {
        const tasks: Array<Task> = []
        for (const taskId of [...new Set(parsed.map((p) => p.taskId))]) {
          const row = (yield* tx.lock(TasksTable, taskId))!
          const keys = parsed.filter((p) => p.taskId === taskId)
          const { moved } = yield* apply(row, keys, dayStateFor(row.quota_day_state, date))
          const task = yield* queries.wire(taskId)
          if (moved) {
            const current = task.progress_current
            const target = task.progress_target
            tx.emit({
              event: "task.progressed",
              taskId,
              data: { task: task as JsonValue, progress_current: current, progress_target: target, met: current >= target }
            })
          }
          tasks.push(task)
        }
        return tasks
      })

    /** Did it: logs progress and marks considered; idempotent per key. */
    const did = Effect.fnUntraced(function*(user: CurrentUserShape, keys: ReadonlyArray<string>) {
      const { date } = yield* today(user)
      const parsed = yield* checkKeys(user, keys, date)
      for (const id of new Set(parsed.map((p) => p.taskId))) yield* quotas.rollover(id)
      let didCount = 0
      let consideredCount = 0
      const tasks = yield* mutations.run({ user, action: "quota_prompt" }, (tx) =>
        Effect.gen(function*() {
          const result = yield* forEachQuota(tx, parsed, date, (row, rowKeys, state) =>
            Effect.gen(function*() {
              let current = row.progress_current
              const before = current
              const didKeys = [...state.did]
              const considered = new Set(state.considered)
              const applied = { ...state.did_applied }
              let logged = state.logged
              for (const { key, number } of rowKeys) {
                if (didKeys.includes(key)) continue
                const add = number >= 1 ? Math.max(0, number - current) : 1
                current += add
                logged += add
                didKeys.push(key)
                applied[key] = add
                if (!considered.has(key)) consideredCount++
                considered.add(key)
                didCount++
              }
              yield* tx.update(TasksTable, row.id, {
                progress_current: current,
                quota_day_state: { date, logged, did: didKeys, considered: [...considered], did_applied: applied }
              }, { guard: ["progress_period_start"] })
              return { moved: current !== before }
            }))
          tx.describe(`Did ${didCount} quota prompt(s)`)
          return result
        }))
      return { considered: consideredCount, did: didCount, tasks }
    })

    /** Considered: handled for today, no progress logged. */
    const consider = Effect.fnUntraced(function*(user: CurrentUserShape, keys: ReadonlyArray<string>) {
      const { date } = yield* today(user)
      const parsed = yield* checkKeys(user, keys, date)
      let count = 0
      const tasks = yield* mutations.run({ user, action: "quota_prompt" }, (tx) =>
        Effect.gen(function*() {
          const result = yield* forEachQuota(tx, parsed, date, (row, rowKeys, state) =>
            Effect.gen(function*() {
              const considered = new Set(state.considered)
              for (const { key } of rowKeys) {
                if (!considered.has(key)) count++
                considered.add(key)
              }
              yield* tx.update(TasksTable, row.id, { quota_day_state: { ...state, considered: [...considered] } })
              return { moved: false }
            }))
          tx.describe(`Considered ${count} quota prompt(s)`)
          return result
        }))
      return { considered: count, did: 0, tasks }
    })

    /** Takes back a Considered. */
    const restore = Effect.fnUntraced(function*(user: CurrentUserShape, keys: ReadonlyArray<string>) {
      const { date } = yield* today(user)
      const parsed = yield* checkKeys(user, keys, date)
      let restored = 0
      const tasks = yield* mutations.run({ user, action: "quota_prompt" }, (tx) =>
        Effect.gen(function*() {
          const result = yield* forEachQuota(tx, parsed, date, (row, rowKeys, state) =>
            Effect.gen(function*() {
              const drop = new Set(rowKeys.map((k) => k.key).filter((k) => state.considered.includes(k)))
              restored += drop.size
              yield* tx.update(TasksTable, row.id, {
                quota_day_state: { ...state, considered: state.considered.filter((k) => !drop.has(k)) }
              })
              return { moved: false }
            }))
          tx.describe(`Restored ${restored} quota prompt(s)`)
          return result
        }))
      return { restored, tasks }
    })

    return { list, did, consider, restore } as const
  })
}) {}
