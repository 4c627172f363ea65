import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { Chunk, Duration, Effect, Layer, Option, Redacted, TestClock } from "effect"
import { afterAll, beforeAll } from "vitest"
import { MigratedDatabaseLive } from "../src/Program.js"
import { QuotaRolloverLive } from "../src/quotas/QuotaRollover.js"
import { AppConfig } from "../src/kernel/AppConfig.js"
import type { CurrentUserShape } from "../src/kernel/CurrentUser.js"
import { Quotas } from "../src/quotas/Quotas.js"
import { ServicesLive } from "../src/system/ServicesLive.js"
import { Tasks } from "../src/tasks/Tasks.js"
import { Users } from "../src/accounts/Users.js"
import { databaseKind, freshDatabase, type TestDatabase } from "./support/database.js"
import { completionRows, type PeriodRow, periodRows, shiftPeriodBack, storedPeriod, sweep } from "./support/quotas.js"
import { dailyStats, outboxEvents, query, undoEntries } from "./support/rows.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, expectServiceTime } from "./support/tasks.js"
import { TaskId } from "../src/kernel/Ids.js"

/*
 * Quota period rollover (spec §3 "period boundary" and "week_start changed" rows, "Quota
 * period rules" 2-4, §2.3, §6 rule 3), driven by SERVICE_NOW restarts on one database and
 * by TestClock over the service layers.
 */

const HOUR = 3_600_000
const DAY = 24 * HOUR

/** Local midnight in Berlin, 2026: CET (UTC+1) until 29 March, CEST (UTC+2) from the 30th. */
const berlin = (month: number, day: number) => {
  const summer = month > 3 || (month === 3 && day >= 30)
  return new Date(Date.UTC(2026, month - 1, day) - (summer ? 2 : 1) * HOUR).toISOString()
}

/** The rows a daily quota leaves for the Berlin days [from, to) of March, with these counts. */
const berlinDays = (taskId: number, target: number, fromDay: number, toDay: number, counts: ReadonlyArray<number>) => {
  const rows: Array<Partial<PeriodRow>> = []
  for (let d = fromDay; d < toDay; d++) {
    const count = counts[d - fromDay] ?? 0
    const end = d + 1 === 32 ? berlin(4, 1) : berlin(3, d + 1)
    rows.push({ task_id: taskId, period_start: berlin(3, d), period_end: end, count, target, met: count >= target, closed_early: false })
  }
  return rows
}

const withoutClosedAt = (rows: ReadonlyArray<PeriodRow>) => rows.map(({ closed_at: _, ...rest }) => rest)

const eventsAndUndo = async (service: TestService, userId: number) => ({
  events: await outboxEvents(service, userId),
  undo: await undoEntries(service, userId)
})

describe("rollover across restarts (SERVICE_NOW)", () => {
  // Wednesday 11 March 2026, 16:00 in Berlin.
  const T0 = new Date("2026-03-11T15:00:00Z")
  const T1 = new Date(T0.getTime() + DAY)
  const T2 = new Date(T0.getTime() + 21 * DAY) // 1 April, after Berlin's spring change on 29 March
  let db: TestDatabase
  let service: TestService
  let rita: TestUser
  const ids: Record<"met" | "short" | "weekly" | "monthly" | "stale", number> = { met: 0, short: 0, weekly: 0, monthly: 0, stale: 0 }
  let before: Awaited<ReturnType<typeof eventsAndUndo>>

  beforeAll(async () => {
    db = await freshDatabase()
  })
  afterAll(async () => {
    await service?.stop()
    await db.drop()
  })

  it("day 0: quotas start in the current local period and collect progress", async () => {
    service = await startService({ serviceNow: Option.some(T0) }, db)
    rita = await service.user("rita", "Europe/Berlin")
    const make = (title: string, target: number, rrule: string) => createTask(rita.api, { title, progress_target: target, rrule })
    ids.met = (await make("Met daily", 2, "FREQ=DAILY")).id
    ids.short = (await make("Short daily", 3, "FREQ=DAILY")).id
    ids.weekly = (await make("Weekly", 2, "FREQ=WEEKLY")).id
    ids.monthly = (await make("Monthly", 5, "FREQ=MONTHLY")).id
    for (const [id, delta] of [[ids.met, 2], [ids.short, 1], [ids.weekly, 2], [ids.monthly, 3]] as const) {
      expect((await rita.api.post(`/api/tasks/${id}/progress`, { delta })).status).toBe(200)
    }
    expect(await storedPeriod(service, ids.met)).toEqual({ start: berlin(3, 11), end: berlin(3, 12), current: 2 })
    expect(await storedPeriod(service, ids.weekly)).toEqual({ start: berlin(3, 8), end: berlin(3, 15), current: 2 }) // Sunday to Sunday
    expect(await storedPeriod(service, ids.monthly)).toEqual({ start: berlin(3, 1), end: berlin(4, 1), current: 3 })
    await service.stop()
  })

  it("day 1: the ended day is recorded; met is a completion, short is not; a log just after the boundary counts in the new day", async () => {
    service = await startService({ serviceNow: Option.some(T1) }, db)
    rita = await service.user("rita", "Europe/Berlin") // a client for the new port
    before = await eventsAndUndo(service, rita.id)
    // Straight after the restart, whether or not the start-up sweep has run yet: the log
    // closes the old period first and counts in the new one.
    const logged = await rita.api.post(`/api/tasks/${ids.short}/progress`, { delta: 2 })
    expect(logged.status).toBe(200)
    expect(logged.body.data).toMatchObject({ progress_current: 2, progress_period_start: berlin(3, 12), met: false, description: "2/3" })
    await sweep(service)

    const metRows = await periodRows(service, ids.met)
    expect(withoutClosedAt(metRows)).toEqual(berlinDays(ids.met, 2, 11, 12, [2]))
    expectServiceTime(metRows[0]!.closed_at, T1)
    expect(withoutClosedAt(await periodRows(service, ids.short))).toEqual(berlinDays(ids.short, 3, 11, 12, [1]))
    expect(await periodRows(service, ids.weekly)).toEqual([])
    expect(await periodRows(service, ids.monthly)).toEqual([])

    // A met period is a completion at its end; a short one is not.
    expect(await completionRows(service, ids.met)).toEqual([
      { task_id: ids.met, completed_at: berlin(3, 12), due_at_was: null, due_at_next: null, is_tracked: false, is_reminder: false, progress_target: 2 }
    ])
    expect(await completionRows(service, ids.short)).toEqual([])
    const met = (await rita.api.get(`/api/tasks/${ids.met}`)).body.data
    expect(met).toMatchObject({
      progress_current: 0,
      progress_period_start: berlin(3, 12),
      completion_count: 1,
      first_completed_at: berlin(3, 12),
      last_completed_at: berlin(3, 12),
      done: false
    })
    expect((await rita.api.get(`/api/tasks/${ids.short}`)).body.data).toMatchObject({ completion_count: 0, last_completed_at: null })
    // The completion counts on the period's last local day.
    expect(await dailyStats(service, rita.id)).toEqual([{ date: "2026-03-11", completions: 1, tasks_created: 4, snoozes: 0 }])

    // Rollover sends no event and writes no undo entry; only the log did.
    const after = await eventsAndUndo(service, rita.id)
    expect(after.events.slice(before.events.length).map((e) => [e.event, e.task_id])).toEqual([["task.progressed", ids.short]])
    expect(after.undo.slice(before.undo.length).map((u) => u.action)).toEqual(["progress"])

    // Deterministically before the sweep: a period moved into the past is closed by the log.
    const stale = await createTask(rita.api, { title: "Stale daily", progress_target: 4, rrule: "FREQ=DAILY" })
    ids.stale = stale.id
    await rita.api.post(`/api/tasks/${stale.id}/progress`, { delta: 3 })
    await shiftPeriodBack(service, stale.id, 1)
    const fresh = await rita.api.post(`/api/tasks/${stale.id}/progress`)
    expect(fresh.body.data).toMatchObject({ progress_current: 1, progress_period_start: berlin(3, 12), description: "1/4" })
    expect(withoutClosedAt(await periodRows(service, stale.id))).toEqual(berlinDays(stale.id, 4, 11, 12, [3]))

    // One more log on the met quota, in its new day.
    await rita.api.post(`/api/tasks/${ids.met}/progress`)
    before = await eventsAndUndo(service, rita.id)
    await service.stop()
  })

  it("three weeks later: the first missed period keeps its count, later ones are recorded as 0", async () => {
    service = await startService({ serviceNow: Option.some(T2) }, db)
    rita = await service.user("rita", "Europe/Berlin")
    await sweep(service)
    const closedAt = (await periodRows(service)).filter((r) => Date.parse(r.closed_at) >= T2.getTime())
    expect(closedAt.length).toBeGreaterThan(0)
    for (const row of closedAt) expectServiceTime(row.closed_at, T2)

    // Days 12 to 31 March (29 March has 23 hours), then today, 1 April, is current.
    expect(withoutClosedAt(await periodRows(service, ids.met))).toEqual(berlinDays(ids.met, 2, 11, 32, [2, 1]))
    expect(withoutClosedAt(await periodRows(service, ids.short))).toEqual(berlinDays(ids.short, 3, 11, 32, [1, 2]))
    expect(withoutClosedAt(await periodRows(service, ids.stale))).toEqual(berlinDays(ids.stale, 4, 11, 32, [3, 1]))
    const march29 = (await periodRows(service, ids.met)).find((r) => r.period_start === berlin(3, 29))!
    expect(Date.parse(march29.period_end) - Date.parse(march29.period_start)).toBe(23 * HOUR)
    expect(await storedPeriod(service, ids.met)).toEqual({ start: berlin(4, 1), end: berlin(4, 2), current: 0 })

    // Weeks from Sunday: the met week, then two empty ones; the week of 29 March is current.
    expect(withoutClosedAt(await periodRows(service, ids.weekly))).toEqual([
      { task_id: ids.weekly, period_start: berlin(3, 8), period_end: berlin(3, 15), count: 2, target: 2, met: true, closed_early: false },
      { task_id: ids.weekly, period_start: berlin(3, 15), period_end: berlin(3, 22), count: 0, target: 2, met: false, closed_early: false },
      { task_id: ids.weekly, period_start: berlin(3, 22), period_end: berlin(3, 29), count: 0, target: 2, met: false, closed_early: false }
    ])
    expect(await storedPeriod(service, ids.weekly)).toEqual({ start: berlin(3, 29), end: berlin(4, 5), current: 0 })
    expect(withoutClosedAt(await periodRows(service, ids.monthly))).toEqual([
      { task_id: ids.monthly, period_start: berlin(3, 1), period_end: berlin(4, 1), count: 3, target: 5, met: false, closed_early: false }
    ])
    expect(await storedPeriod(service, ids.monthly)).toEqual({ start: berlin(4, 1), end: berlin(5, 1), current: 0 })

    // Completions: the met day and the met week only.
    expect((await completionRows(service, ids.met)).map((c) => c.completed_at)).toEqual([berlin(3, 12)])
    expect((await completionRows(service, ids.weekly)).map((c) => c.completed_at)).toEqual([berlin(3, 15)])
    for (const id of [ids.short, ids.stale, ids.monthly]) expect(await completionRows(service, id)).toEqual([])
    expect((await rita.api.get(`/api/tasks/${ids.weekly}`)).body.data).toMatchObject({
      completion_count: 1,
      first_completed_at: berlin(3, 15),
      last_completed_at: berlin(3, 15)
    })
    expect((await rita.api.get(`/api/tasks/${ids.met}`)).body.data.completion_count).toBe(1)
    expect(await dailyStats(service, rita.id)).toEqual([
      { date: "2026-03-11", completions: 1, tasks_created: 4, snoozes: 0 },
      { date: "2026-03-12", completions: 0, tasks_created: 1, snoozes: 0 },
      { date: "2026-03-14", completions: 1, tasks_created: 0, snoozes: 0 }
    ])
    const stats = await rita.api.get("/api/stats?start=2026-03-01&end=2026-04-30")
    expect(stats.body.data.stats.map((r: any) => [r.date, r.completions])).toEqual([["2026-03-11", 1], ["2026-03-12", 0], ["2026-03-14", 1]])

    // No event, no undo entry for any of it; a second sweep finds nothing.
    expect(await eventsAndUndo(service, rita.id)).toEqual(before)
    expect(await sweep(service)).toBe(0)
    await service.stop()
  })
})

/**
 * A service at `now` on a database of its own, once its own start-up sweep is over: that sweep
 * would race the sweeps and rollovers under test (it took 21 of 24 periods of the concurrent
 * sweeps on a loaded machine, and all of one user's quotas before the per-task rollovers of
 * the comparison below). A stale quota of `markerOwner` left by an earlier run shows when that
 * sweep is done; the next one is five minutes away.
 */
const startAfterItsSweep = async (now: Date, markerOwner: string) => {
  const db = await freshDatabase()
  const earlier = await startService({ serviceNow: Option.some(now) }, db)
  const marker = await createTask((await earlier.user(markerOwner, "UTC")).api, { title: "Marker", progress_target: 2, rrule: "FREQ=DAILY" })
  await shiftPeriodBack(earlier, marker.id, 1)
  await earlier.stop()
  const service = await startService({ serviceNow: Option.some(now) }, db)
  const deadline = Date.now() + 30_000
  while ((await periodRows(service, marker.id)).length === 0) {
    if (Date.now() > deadline) throw new Error("the start-up sweep did not run")
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return { db, service }
}

describe("concurrent sweeps record each ended period exactly once", () => {
  const NOW = new Date("2026-05-20T10:00:00Z")
  let db: TestDatabase
  let service: TestService
  let ursula: TestUser

  beforeAll(async () => {
    ;({ db, service } = await startAfterItsSweep(NOW, "ursula"))
    ursula = await service.user("ursula", "UTC")
  })
  afterAll(async () => {
    await service.stop()
    await db.drop()
  })

  /** Eight daily quotas (target 3) with 0..7 logged, each moved `days` days into the past. */
  const staleQuotas = async (days: number) => {
    const out: Array<{ id: number; logged: number }> = []
    for (let logged = 0; logged < 8; logged++) {
      const q = await createTask(ursula.api, { title: `Quota ${days}/${logged}`, progress_target: 3, rrule: "FREQ=DAILY" })
      if (logged > 0) await ursula.api.post(`/api/tasks/${q.id}/progress`, { delta: logged })
      await shiftPeriodBack(service, q.id, days)
      out.push({ id: q.id, logged })
    }
    return out
  }

  const expectOncePerBoundary = async (quotas: ReadonlyArray<{ id: number; logged: number }>, days: number) => {
    for (const { id, logged } of quotas) {
      const rows = await periodRows(service, id)
      const starts = Array.from({ length: days }, (_, i) => new Date(Date.UTC(2026, 4, 20 - days + i)).toISOString())
      expect(rows.map((r) => [r.period_start, r.count, r.met])).toEqual(starts.map((s, i) => [s, i === 0 ? logged : 0, i === 0 && logged >= 3]))
      expect((await completionRows(service, id)).length).toBe(logged >= 3 ? 1 : 0)
      expect(await storedPeriod(service, id)).toEqual({ start: "2026-05-20T00:00:00.000Z", end: "2026-05-21T00:00:00.000Z", current: 0 })
    }
  }

  it("two sweeps at once in one service (Effect.all, concurrency 2)", async () => {
    const quotas = await staleQuotas(3)
    const closed = await service.run(
      Effect.flatMap(Quotas, (q) => Effect.all([q.sweep(), q.sweep()], { concurrency: 2 }))
    )
    expect(closed[0] + closed[1]).toBe(8 * 3)
    await expectOncePerBoundary(quotas, 3)
  })

  it.skipIf(databaseKind() !== "postgres")("two service instances on one PostgreSQL database, each sweeping twice at once", async () => {
    const second = await startService({ serviceNow: Option.some(NOW) }, service.database)
    try {
      const quotas = await staleQuotas(4)
      const both = Effect.flatMap(Quotas, (q) => Effect.all([q.sweep(), q.sweep()], { concurrency: 2 }))
      const [a, b] = await Promise.all([service.run(both), second.run(both)])
      // The second instance's start-up sweep may have taken a share too.
      expect(a[0] + a[1] + b[0] + b[1]).toBeLessThanOrEqual(8 * 4)
      await expectOncePerBoundary(quotas, 4)
    } finally {
      await second.stop()
    }
  })
})

describe("the batched sweep writes what the per-task rollover (the mutation pipeline) writes", () => {
  // Friday 15 May 2026, 10:00 UTC; both users in Berlin, quotas three days behind.
  const NOW = new Date("2026-05-15T10:00:00Z")
  let db: TestDatabase
  let service: TestService

  beforeAll(async () => {
    ;({ db, service } = await startAfterItsSweep(NOW, "marker"))
  })
  afterAll(async () => {
    await service.stop()
    await db.drop()
  })

  /** A user with a met daily quota (completed once before), a short one and a met weekly one, all moved back. */
  const setUp = async (name: string) => {
    const user = await service.user(name, "Europe/Berlin")
    const met = await createTask(user.api, { title: "Met", progress_target: 2, rrule: "FREQ=DAILY" })
    const short = await createTask(user.api, { title: "Short", progress_target: 3, rrule: "FREQ=DAILY" })
    const weekly = await createTask(user.api, { title: "Weekly", progress_target: 2, rrule: "FREQ=WEEKLY" })
    await user.api.post(`/api/tasks/${met.id}/progress`, { delta: 2 })
    await user.api.post(`/api/tasks/${short.id}/progress`, { delta: 1 })
    await user.api.post(`/api/tasks/${weekly.id}/progress`, { delta: 3 })
    for (const id of [met.id, short.id]) await shiftPeriodBack(service, id, 3)
    await shiftPeriodBack(service, weekly.id, 7)
    return { user, ids: [met.id, short.id, weekly.id].map((id) => TaskId.make(id)) }
  }

  const recorded = async (userId: number, ids: ReadonlyArray<number>) => ({
    periods: (await Promise.all(ids.map((id) => periodRows(service, id)))).map((rows) =>
      rows.map(({ closed_at: _, task_id: __, ...rest }) => rest)
    ),
    completions: (await Promise.all(ids.map((id) => completionRows(service, id)))).map((rows) => rows.map(({ task_id: _, ...rest }) => rest)),
    tasks: await query(service, (sql) =>
      sql`SELECT progress_current, steady_iso(progress_period_start) AS start, steady_iso(progress_period_end) AS "end",
            completion_count, steady_iso(first_completed_at) AS first, steady_iso(last_completed_at) AS last
          FROM tasks WHERE id IN ${sql.in([...ids])} ORDER BY id`),
    stats: (await dailyStats(service, userId)).map(({ date, completions }) => [date, completions]),
    ...await eventsAndUndo(service, userId)
  })

  it("same periods, completions, task fields, statistics; no events or undo entries either way", async () => {
    const one = await setUp("pipeline-path")
    const two = await setUp("batch-path")
    const before = { one: await eventsAndUndo(service, one.user.id), two: await eventsAndUndo(service, two.user.id) }
    // The per-task path first (one mutation-pipeline transaction a quota), then the sweep,
    // which finds only the second user's quotas still ended.
    const perTask = await service.run(Effect.flatMap(Quotas, (q) => Effect.forEach(one.ids, (id) => q.rollover(id))))
    expect(await sweep(service)).toBe(perTask.reduce((a, b) => a + b, 0))
    const a = await recorded(one.user.id, one.ids)
    const b = await recorded(two.user.id, two.ids)
    expect(b).toEqual({ ...a, events: before.two.events, undo: before.two.undo })
    expect(a.events).toEqual(before.one.events)
    expect(a.undo).toEqual(before.one.undo)
    // And what that is: three days of the met quota (the first met), a whole week for the weekly one.
    expect(a.periods.map((rows) => rows.map((r) => [r.count, r.met]))).toEqual([
      [[2, true], [0, false], [0, false]],
      [[1, false], [0, false], [0, false]],
      [[3, true]]
    ])
    expect(a.stats.reduce((n, [, c]) => n + Number(c), 0)).toBe(2)
  })
})

describe("week_start and time zone changes realign weekly periods before the response", () => {
  // Wednesday 11 March 2026, 11:00 in New York (EDT since Sunday 8 March).
  const NOW = new Date("2026-03-11T15:00:00Z")
  const SUN_MAR_8 = "2026-03-08T05:00:00.000Z" // 00:00 EST
  const MON_MAR_9 = "2026-03-09T04:00:00.000Z" // 00:00 EDT
  let db: TestDatabase
  let service: TestService

  beforeAll(async () => {
    db = await freshDatabase()
    service = await startService({ serviceNow: Option.some(NOW) }, db)
  })
  afterAll(async () => {
    await service.stop()
    await db.drop()
  })

  it("sunday → monday: the weekly periods that ended at the new boundary are closed; INTERVAL=2 gets a short period then two full weeks", async () => {
    const wendy = await service.user("wendy", "America/New_York")
    const weekly = await createTask(wendy.api, { title: "Weekly", progress_target: 2, rrule: "FREQ=WEEKLY" })
    const fortnightly = await createTask(wendy.api, { title: "Fortnightly", progress_target: 3, rrule: "FREQ=WEEKLY;INTERVAL=2" })
    const daily = await createTask(wendy.api, { title: "Daily", progress_target: 2, rrule: "FREQ=DAILY" })
    await wendy.api.post(`/api/tasks/${weekly.id}/progress`, { delta: 2 })
    await wendy.api.post(`/api/tasks/${fortnightly.id}/progress`)
    expect(await storedPeriod(service, weekly.id)).toMatchObject({ start: SUN_MAR_8, end: "2026-03-15T04:00:00.000Z" })
    expect(await storedPeriod(service, fortnightly.id)).toMatchObject({ start: SUN_MAR_8, end: "2026-03-22T04:00:00.000Z" })
    const dailyBefore = await storedPeriod(service, daily.id)
    const before = await eventsAndUndo(service, wendy.id)

    const res = await wendy.api.patch("/api/user/preferences", { week_start: "monday" })
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.week_start).toBe("monday")

    // Already closed when the response arrives: [Sunday, Monday) under the new boundary.
    expect(withoutClosedAt(await periodRows(service, weekly.id))).toEqual([
      { task_id: weekly.id, period_start: SUN_MAR_8, period_end: MON_MAR_9, count: 2, target: 2, met: true, closed_early: false }
    ])
    expect(withoutClosedAt(await periodRows(service, fortnightly.id))).toEqual([
      { task_id: fortnightly.id, period_start: SUN_MAR_8, period_end: MON_MAR_9, count: 1, target: 3, met: false, closed_early: false }
    ])
    // Full intervals from the boundary: one week, and two weeks for INTERVAL=2.
    expect(await storedPeriod(service, weekly.id)).toEqual({ start: MON_MAR_9, end: "2026-03-16T04:00:00.000Z", current: 0 })
    expect(await storedPeriod(service, fortnightly.id)).toEqual({ start: MON_MAR_9, end: "2026-03-23T04:00:00.000Z", current: 0 })
    // The met short period is a completion; the short one is only recorded.
    expect((await completionRows(service, weekly.id)).map((c) => c.completed_at)).toEqual([MON_MAR_9])
    expect(await completionRows(service, fortnightly.id)).toEqual([])
    expect((await wendy.api.get(`/api/tasks/${weekly.id}`)).body.data.completion_count).toBe(1)
    expect((await dailyStats(service, wendy.id)).find((r) => r.date === "2026-03-08")?.completions).toBe(1)
    // Daily periods do not depend on the week.
    expect(await storedPeriod(service, daily.id)).toEqual(dailyBefore)
    expect(await periodRows(service, daily.id)).toEqual([])
    // Not undoable, no events.
    expect(await eventsAndUndo(service, wendy.id)).toEqual(before)
  })

  it("monday → sunday with the short period still running: it ends at the new boundary (at most one week), then two full weeks", async () => {
    const monty = await service.user("monty", "America/New_York")
    expect((await monty.api.patch("/api/user/preferences", { week_start: "monday" })).status).toBe(200)
    const fortnightly = await createTask(monty.api, { title: "Fortnightly", progress_target: 2, rrule: "FREQ=WEEKLY;INTERVAL=2" })
    await monty.api.post(`/api/tasks/${fortnightly.id}/progress`, { delta: 2 })
    expect(await storedPeriod(service, fortnightly.id)).toEqual({ start: MON_MAR_9, end: "2026-03-23T04:00:00.000Z", current: 2 })

    expect((await monty.api.patch("/api/user/preferences", { week_start: "sunday" })).status).toBe(200)
    // The next Sunday after the period's start: six days, not yet over.
    expect(await storedPeriod(service, fortnightly.id)).toEqual({ start: MON_MAR_9, end: "2026-03-15T04:00:00.000Z", current: 2 })
    expect(await periodRows(service, fortnightly.id)).toEqual([])

    // Restart after that boundary: the short period closes like any other, then two full weeks.
    await service.stop()
    service = await startService({ serviceNow: Option.some(new Date("2026-03-16T15:00:00Z")) }, db)
    await sweep(service)
    expect(withoutClosedAt(await periodRows(service, fortnightly.id))).toEqual([
      {
        task_id: fortnightly.id,
        period_start: MON_MAR_9,
        period_end: "2026-03-15T04:00:00.000Z",
        count: 2,
        target: 2,
        met: true,
        closed_early: false
      }
    ])
    expect(await storedPeriod(service, fortnightly.id)).toEqual({
      start: "2026-03-15T04:00:00.000Z",
      end: "2026-03-29T04:00:00.000Z",
      current: 0
    })
    expect((await completionRows(service, fortnightly.id)).map((c) => c.completed_at)).toEqual(["2026-03-15T04:00:00.000Z"])
  })

  it("a time zone change realigns a weekly period to the new zone's week", async () => {
    // Restarted at Monday 16 March, 15:00 UTC by the test above.
    const tina = await service.user("tina", "UTC")
    const weekly = await createTask(tina.api, { title: "Weekly", progress_target: 3, rrule: "FREQ=WEEKLY" })
    await tina.api.post(`/api/tasks/${weekly.id}/progress`)
    expect(await storedPeriod(service, weekly.id)).toEqual({ start: "2026-03-15T00:00:00.000Z", end: "2026-03-22T00:00:00.000Z", current: 1 })

    // East: the next Kolkata Sunday midnight after the start ends the period; not over yet.
    expect((await tina.api.patch("/api/user/preferences", { timezone: "Asia/Kolkata" })).status).toBe(200)
    expect(await storedPeriod(service, weekly.id)).toEqual({ start: "2026-03-15T00:00:00.000Z", end: "2026-03-21T18:30:00.000Z", current: 1 })
    expect(await periodRows(service, weekly.id)).toEqual([])

    // West: New York's Sunday midnight came five hours after the start, so that short
    // period is closed before the response and a New York week runs from it.
    expect((await tina.api.patch("/api/user/preferences", { timezone: "America/New_York" })).status).toBe(200)
    expect(withoutClosedAt(await periodRows(service, weekly.id))).toEqual([
      {
        task_id: weekly.id,
        period_start: "2026-03-15T00:00:00.000Z",
        period_end: "2026-03-15T04:00:00.000Z",
        count: 1,
        target: 3,
        met: false,
        closed_early: false
      }
    ])
    expect(await storedPeriod(service, weekly.id)).toEqual({ start: "2026-03-15T04:00:00.000Z", end: "2026-03-22T04:00:00.000Z", current: 0 })
  })
})

// ---------------------------------------------------------------------------------------
// TestClock: the service layers from src, with Effect's TestClock as the service clock.
// ---------------------------------------------------------------------------------------

/** A fresh database (dropped with the layer), migrated, with every service on it. */
const servicesOnFreshDatabase = Layer.unwrapScoped(
  Effect.map(
    Effect.acquireRelease(Effect.promise(() => freshDatabase()), (db) => Effect.promise(() => db.drop())),
    (db) =>
      ServicesLive.pipe(
        Layer.provideMerge(MigratedDatabaseLive),
        Layer.provideMerge(AppConfig.layerWith({
          databaseUrl: db.url === undefined ? Option.none() : Option.some(Redacted.make(db.url)),
          dataDir: db.dataDir,
          serviceNow: Option.none()
        }))
      )
  )
)

const T = Date.parse("2026-03-11T15:00:00Z") // Wednesday, 16:00 in Berlin

const periodsOf = (taskId: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ start: string; end: string; count: number; met: boolean }>`
      SELECT steady_iso(period_start) AS start, steady_iso(period_end) AS "end", count, met
      FROM quota_periods WHERE task_id = ${taskId} ORDER BY period_start`).pipe(Effect.orDie)

const newUser = (name: string, zone: string) => Effect.flatMap(Users, (users) => users.findOrCreate(name, zone))

const newQuota = (user: CurrentUserShape, title: string, target: number, rrule = "FREQ=DAILY") =>
  Effect.flatMap(Tasks, (tasks) => tasks.create(user, { title, progress_target: target, rrule })).pipe(
    Effect.map((task) => TaskId.make(task.value.id))
  )

const quotaListed = (user: CurrentUserShape, id: number) =>
  Effect.flatMap(Quotas, (q) => q.listJson(user)).pipe(
    Effect.map((body) => (JSON.parse(body).data.quotas as Array<{ id: number; progress_current: number }>).find((t) => t.id === id)!)
  )

describe("rollover under TestClock", () => {
  it.layer(servicesOnFreshDatabase, { timeout: Duration.minutes(2) })((it) => {
    it.effect("TestClock.adjust past midnight: listed as 0, a log closes the old day first, the sweep closes the rest", () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(T)
        const quotas = yield* Quotas
        const user = yield* newUser("clockwork", "Europe/Berlin")
        const id = yield* newQuota(user, "Daily", 2)
        const logged = (yield* quotas.progress(user, id, 2)).value
        expect(logged).toMatchObject({ progress_current: 2, met: true, progress_period_start: berlin(3, 11) })
        expect(yield* quotas.sweep()).toBe(0)

        // 23:59:59.999 in Berlin: still the same period.
        yield* TestClock.setTime(Date.parse(berlin(3, 12)) - 1)
        expect(yield* quotas.sweep()).toBe(0)
        expect((yield* quotaListed(user, id)).progress_current).toBe(2)

        // Midnight: the period has ended but nothing swept yet.
        yield* TestClock.adjust(Duration.millis(1))
        expect((yield* quotaListed(user, id)).progress_current).toBe(0)
        expect(yield* periodsOf(id)).toEqual([])
        const next = (yield* quotas.progress(user, id, 1)).value
        expect(next).toMatchObject({ progress_current: 1, met: false, progress_period_start: berlin(3, 12), description: "1/2" })
        expect(yield* periodsOf(id)).toEqual([{ start: berlin(3, 11), end: berlin(3, 12), count: 2, met: true }])

        // Two more days pass: the sweep closes both, the first with its count.
        yield* TestClock.adjust(Duration.days(2))
        expect(yield* quotas.sweep()).toBe(2)
        expect(yield* periodsOf(id)).toEqual([
          { start: berlin(3, 11), end: berlin(3, 12), count: 2, met: true },
          { start: berlin(3, 12), end: berlin(3, 13), count: 1, met: false },
          { start: berlin(3, 13), end: berlin(3, 14), count: 0, met: false }
        ])
        expect(yield* quotas.sweep()).toBe(0)
      }))

    it.effect("two concurrent sweeps across one boundary leave one row per period", () =>
      Effect.gen(function*() {
        yield* TestClock.setTime(T)
        const quotas = yield* Quotas
        const user = yield* newUser("racer", "UTC")
        const ids: Array<number> = []
        for (let i = 0; i < 6; i++) {
          const id = yield* newQuota(user, `Race ${i}`, 2)
          yield* quotas.progress(user, id, i)
          ids.push(id)
        }
        yield* TestClock.adjust(Duration.days(1))
        const [a, b] = yield* Effect.all([quotas.sweep(), quotas.sweep()], { concurrency: 2 })
        expect(a + b).toBe(6)
        for (const [i, id] of ids.entries()) {
          expect(yield* periodsOf(id)).toEqual([
            { start: "2026-03-11T00:00:00.000Z", end: "2026-03-12T00:00:00.000Z", count: i, met: i >= 2 }
          ])
        }
      }))
  })

})

// Its own describe: every it.layer of a file shares one TestClock, and this fiber would
// otherwise run on every clock move of the tests above.
describe("the rollover fiber under TestClock", () => {
  // The clock is set before the fiber starts: moving a TestClock runs every sleep due on
  // the way, so a jump from 1970 would run the 5-minute sweep half a million times.
  // 15:02 puts the sweeps at :02 and :07 past every hour.
  const T_SCHEDULED = Date.parse("2026-03-11T15:02:00Z")
  const MIDNIGHT = Date.parse("2026-03-12T00:00:00Z")
  const scheduledFromT = Layer.unwrapEffect(Effect.as(TestClock.setTime(T_SCHEDULED), QuotaRolloverLive))
  it.layer(Layer.provideMerge(scheduledFromT, servicesOnFreshDatabase), { timeout: Duration.minutes(2) })((it) => {
    it.effect("the rollover fiber sweeps every 5 minutes of the clock", () =>
      Effect.gen(function*() {
        const quotas = yield* Quotas
        // Swept once at start-up, now asleep for 5 minutes.
        expect(yield* asleepUntil).toBe(T_SCHEDULED + 5 * 60_000)
        const user = yield* newUser("scheduled", "UTC")
        const id = yield* newQuota(user, "Daily", 2)
        yield* quotas.progress(user, id, 2)

        // One minute before midnight. Each sweep on the way found nothing; the fiber sleeps
        // again until 00:02 (5 minutes after the 23:57 sweep) or, if the clock ran ahead of
        // a sweep's database work, until 00:04 (5 minutes after 23:59). Either way, after midnight.
        yield* TestClock.setTime(MIDNIGHT - 60_000)
        const wake = yield* asleepUntil
        expect([MIDNIGHT + 2 * 60_000, MIDNIGHT + 4 * 60_000]).toContain(wake)
        expect(yield* periodsOf(id)).toEqual([])

        // 00:01: the day has ended, but no sweep has run; the quota is listed with 0.
        yield* TestClock.setTime(MIDNIGHT + 60_000)
        yield* settle
        expect(yield* asleepUntil).toBe(wake)
        expect(yield* periodsOf(id)).toEqual([])
        expect((yield* quotaListed(user, id)).progress_current).toBe(0)

        // The scheduled sweep closes the day.
        yield* TestClock.setTime(wake)
        expect(yield* asleepUntil).toBe(wake + 5 * 60_000)
        expect(yield* periodsOf(id)).toEqual([
          { start: "2026-03-11T00:00:00.000Z", end: "2026-03-12T00:00:00.000Z", count: 2, met: true }
        ])
        expect(yield* closedAtOf(id)).toEqual([new Date(wake).toISOString()])
      }))
  })
})

/** Gives a woken fiber time to do its database work (real I/O; the clock does not move). */
const realPause = (ms: number) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, ms)))
const settle = realPause(300)

/**
 * The instant the rollover fiber sleeps until, once it is asleep: polls in real time (up
 * to 10 s) while a woken fiber does its database work.
 */
const asleepUntil = Effect.gen(function*() {
  for (let i = 0; i < 200; i++) {
    const sleeps = yield* TestClock.sleeps()
    if (Chunk.isNonEmpty(sleeps)) return Chunk.headNonEmpty(sleeps)
    yield* realPause(50)
  }
  return -1
})

const closedAtOf = (taskId: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ closed_at: string }>`SELECT steady_iso(closed_at) AS closed_at FROM quota_periods WHERE task_id = ${taskId}
      ORDER BY period_start`).pipe(Effect.map((rows) => rows.map((r) => r.closed_at)), Effect.orDie)
