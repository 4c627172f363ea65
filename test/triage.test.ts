import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { UndoService } from "../src/undo/UndoService.js"
import { freshDatabase, type TestDatabase } from "./support/database.js"
import { sweep } from "./support/quotas.js"
import { snapshot } from "./support/rows.js"
import { type Client, makeClient, startService, type TestService } from "./support/service.js"
import { createTask, inboxOf, TASK_FIELDS } from "./support/tasks.js"

/**
 * GET /api/process (spec §4.4, §8), with the horizon/target/deadline meanings of
 * domain/TaskRules.ts and the growth exclusion of the process queue. The service is restarted on the same database at later SERVICE_NOW instants to
 * walk the tasks across the growth thresholds; each restart sits an hour before or after a
 * whole number of days, so the clock running on in real time never changes a day count.
 *
 * T0 is 12:00 UTC on Monday 5 January 2026; every user is on UTC.
 */
const T0 = new Date("2026-01-05T12:00:00Z")
const DAY = 86_400_000
const HOUR = 3_600_000
const at = (days: number, hours = 0) => new Date(T0.getTime() + days * DAY + hours * HOUR)
const iso = (d: Date) => d.toISOString()

type Task = Record<string, any>
type GrowthRow = [id: number, from: string | null, to: string, days: number, canAct: boolean]

describe("GET /api/process (spec §4.4)", () => {
  let database: TestDatabase
  let service: TestService
  let alice: Client
  let bob: Client
  let aliceToken = ""
  let bobToken = ""
  let aliceId = 0
  let inboxId = 0
  const t: Record<string, Task> = {}

  const process = async (api: Client = alice) => {
    const res = await api.get("/api/process")
    if (res.status !== 200) throw new Error(`GET /api/process -> ${res.status} ${res.text}`)
    expect(Object.keys(res.body)).toEqual(["data"])
    const data = res.body.data
    expect(Object.keys(data).sort()).toEqual(["growth", "inbox", "inbox_project_id", "stale_targets", "stale_targets_with_deadline"])
    for (const g of data.growth) expect(Object.keys(g).sort()).toEqual(["can_act", "days_on_horizon", "from", "task", "to"])
    for (const s of [...data.stale_targets, ...data.stale_targets_with_deadline]) expect(Object.keys(s).sort()).toEqual(["age_days", "task"])
    for (const task of [...data.inbox, ...data.growth.map((g: any) => g.task), ...data.stale_targets.map((s: any) => s.task)]) {
      expect(Object.keys(task).sort()).toEqual([...TASK_FIELDS].sort())
    }
    // Every task is spliced in as the database renders it: the same task GET /api/tasks/{id} shows.
    const listed = [
      ...data.inbox,
      ...data.growth.map((g: any) => g.task),
      ...data.stale_targets.map((s: any) => s.task),
      ...data.stale_targets_with_deadline.map((s: any) => s.task)
    ]
    for (const task of listed.slice(0, 12)) {
      const one = await api.get(`/api/tasks/${task.id}`)
      expect(one.status).toBe(200)
      expect(task).toEqual(one.body.data)
    }
    return data as {
      inbox_project_id: number
      inbox: Array<Task>
      growth: Array<{ task: Task; from: string | null; to: string; days_on_horizon: number; can_act: boolean }>
      stale_targets: Array<{ task: Task; age_days: number }>
      stale_targets_with_deadline: Array<{ task: Task; age_days: number }>
    }
  }
  const growthOf = (data: Awaited<ReturnType<typeof process>>): Array<GrowthRow> =>
    data.growth.map((g) => [g.task.id, g.from, g.to, g.days_on_horizon, g.can_act])
  const staleOf = (items: ReadonlyArray<{ task: Task; age_days: number }>) => items.map((s) => [s.task.id, s.age_days])
  const id = (key: string) => t[key]!.id as number
  const sqlRun = (build: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
    service.run(Effect.flatMap(SqlClient.SqlClient, build))

  /** Starts the service at `now` on the same database, with clients for the same tokens. */
  const restart = async (now: Date) => {
    await service.stop()
    service = await startService({ serviceNow: Option.some(now) }, database)
    alice = makeClient(service.baseUrl, { authorization: `Bearer ${aliceToken}` })
    bob = makeClient(service.baseUrl, { authorization: `Bearer ${bobToken}` })
    // Close any quota period the new clock has ended and purge old undo entries, so the
    // background sweeps have nothing left to write while a test compares snapshots.
    await sweep(service)
    await service.run(Effect.flatMap(UndoService, (undo) => undo.purge))
  }

  /** GET /api/process writes nothing. */
  const readOnly = async () => {
    const before = await snapshot(service)
    const first = await process()
    await process(bob)
    expect(await snapshot(service)).toEqual(before)
    return first
  }

  beforeAll(async () => {
    database = await freshDatabase()
    service = await startService({ serviceNow: Option.some(T0) }, database)
    const a = await service.user("triage-alice", "UTC")
    const b = await service.user("triage-bob", "UTC")
    alice = a.api
    bob = b.api
    aliceToken = a.token
    bobToken = b.token
    aliceId = a.id
    inboxId = await inboxOf(alice)
    const later = (await alice.post("/api/projects", { name: "Later" })).body.data.id as number
    const shared = (await bob.post("/api/projects", { name: "Shared", shared: true })).body.data.id as number

    const make = async (key: string, body: Record<string, unknown>, api: Client = alice) => {
      t[key] = await createTask(api, { title: key, ...body })
    }
    const inLater = (key: string, body: Record<string, unknown>) => make(key, { project_id: later, ...body })

    // Inbox: oldest first; "someday" keeps them out of growth.
    await make("inboxA", { horizon: "someday" })
    await make("inboxB", { horizon: "someday", priority: 3 })
    await make("inboxRecurring", { rrule: "FREQ=DAILY", due_at: iso(at(1)) })
    await make("inboxReminder", { is_reminder: true, due_at: iso(at(1)) })
    await make("inboxQuota", { progress_target: 2, rrule: "FREQ=WEEKLY" })
    await make("inboxDone", { horizon: "someday" })
    await make("inboxTrashed", { horizon: "someday" })
    await make("inboxSkipped", { horizon: "someday", due_at: iso(at(1)) })
    await make("movedOut", { horizon: "someday" })
    await make("bobInbox", { horizon: "someday" }, bob)
    expect((await alice.post(`/api/tasks/${id("inboxDone")}/done`)).status).toBe(200)
    expect((await alice.delete(`/api/tasks/${id("inboxTrashed")}`)).status).toBe(200)
    expect((await alice.post(`/api/tasks/${id("inboxSkipped")}/skip-occurrence`)).status).toBe(200)
    expect((await alice.patch(`/api/tasks/${id("movedOut")}`, { project_id: later })).status).toBe(200)
    await sqlRun((sql) => sql`UPDATE tasks SET created_at = ${iso(at(-2))}::timestamptz WHERE id = ${id("inboxB")}`)
    await sqlRun((sql) => sql`UPDATE tasks SET created_at = ${iso(at(-1))}::timestamptz WHERE id = ${id("inboxRecurring")}`)

    // Growth candidates.
    await inLater("gDay", { horizon: "day", priority: 2 })
    await inLater("gDayOldTask", { horizon: "day" })
    await inLater("gWeek", { horizon: "week", priority: 1 })
    await inLater("gUnset", { priority: 3 })
    await inLater("gMonth", { horizon: "month", priority: 4 })
    await inLater("gSomeday", { horizon: "someday", priority: 4 })
    await inLater("gTargetArrived", { horizon: "day", priority: 2, target_at: iso(at(5)) })
    await inLater("gTargetFuture", { horizon: "day", priority: 2, target_at: iso(at(400)) })
    await inLater("gDeadlineNear", { horizon: "day", priority: 2, deadline_at: iso(at(100)) })
    await inLater("gDeadlineFar", { horizon: "day", priority: 1, deadline_at: iso(at(14 + 90, 3)) })
    await inLater("gDeadlinePast", { horizon: "day", priority: 2, deadline_at: iso(at(1)), target_at: iso(at(400)), allow_past_deadline: true })
    await inLater("gRecurring", { horizon: "day", priority: 2, rrule: "FREQ=WEEKLY", due_at: iso(at(0, 1)) })
    await inLater("gReminder", { horizon: "day", priority: 2, is_reminder: true, due_at: iso(at(0, 1)) })
    await inLater("gQuota", { horizon: "day", priority: 2, progress_target: 3, rrule: "FREQ=MONTHLY" })
    await inLater("gDone", { horizon: "day", priority: 2 })
    await inLater("gTrashed", { horizon: "day", priority: 2 })
    await inLater("gAffirmed", { horizon: "day" })
    await inLater("gWeekNoStamp", { horizon: "week", priority: 2 })
    await make("bobDay", { horizon: "day", priority: 2, project_id: shared }, bob)
    expect((await alice.post(`/api/tasks/${id("gDone")}/done`)).status).toBe(200)
    expect((await alice.delete(`/api/tasks/${id("gTrashed")}`)).status).toBe(200)
    // Created long ago, its horizon set at T0: measured from horizon_set_at.
    await sqlRun((sql) => sql`UPDATE tasks SET created_at = ${iso(at(-100))}::timestamptz WHERE id = ${id("gDayOldTask")}`)
    // A horizon without a stamp: measured from created_at.
    await sqlRun((sql) =>
      sql`UPDATE tasks SET created_at = ${iso(at(-30))}::timestamptz, horizon_set_at = NULL WHERE id = ${id("gWeekNoStamp")}`)

    // Stale targets: explicit targets in the past, aged from the first target date.
    await inLater("sOld", { target_at: iso(at(-10)) })
    await inLater("sSeven", { target_at: iso(at(-7, -1)) })
    await inLater("sSix", { target_at: iso(at(-6, -23)) })
    await inLater("sMoved", { target_at: iso(at(-12)) })
    await inLater("sMovedFuture", { target_at: iso(at(-9)) })
    await inLater("sRetarget", { target_at: iso(at(-20)) })
    await inLater("sSnoozed", { target_at: iso(at(-8)), due_at: iso(at(-1)) })
    await inLater("sDeadline", { target_at: iso(at(-15)), deadline_at: iso(at(30)) })
    await inLater("sDeadlinePast", { target_at: iso(at(-8)), deadline_at: iso(at(-1)) })
    await inLater("sAuto", { deadline_at: iso(at(-10)) })
    await inLater("sRecurring", { target_at: iso(at(-10)), rrule: "FREQ=DAILY", due_at: iso(at(0, 2)) })
    await inLater("sReminder", { target_at: iso(at(-10)), is_reminder: true, due_at: iso(at(0, 2)) })
    await inLater("sQuota", { target_at: iso(at(-10)), progress_target: 2, rrule: "FREQ=WEEKLY" })
    await inLater("sDone", { target_at: iso(at(-10)) })
    await make("bobStale", { target_at: iso(at(-10)), project_id: shared }, bob)
    expect((await alice.post(`/api/tasks/${id("sDone")}/done`)).status).toBe(200)
    const moved = await alice.patch(`/api/tasks/${id("sMoved")}`, { target_at: iso(at(-2)) })
    expect(moved.body.data).toMatchObject({ target_at: iso(at(-2)), segment_targeted_at: iso(at(-12)) })
    expect((await alice.patch(`/api/tasks/${id("sMovedFuture")}`, { target_at: iso(at(5)) })).status).toBe(200)
    const retargeted = await alice.patch(`/api/tasks/${id("sRetarget")}`, { target_at: iso(at(-1)), retarget: true })
    expect(retargeted.body.data).toMatchObject({ target_at: iso(at(-1)), segment_targeted_at: iso(at(-1)) })
    expect((await alice.post(`/api/tasks/${id("sSnoozed")}/snooze`, { until: iso(at(1)) })).status).toBe(200)
  })
  afterAll(async () => {
    await service.stop()
    await database.drop()
  })

  it("inbox: the caller's own open tasks in the Inbox, oldest first, recurring included, no reminders or quotas", async () => {
    const data = await readOnly()
    expect(data.inbox_project_id).toBe(inboxId)
    expect(data.inbox.map((task) => task.title)).toEqual(["inboxB", "inboxRecurring", "inboxA"])
    expect(data.inbox.every((task) => task.user_id === aliceId && task.project_id === inboxId)).toBe(true)
    // The items are the tasks as GET /api/tasks/{id} shows them.
    expect(data.inbox[1]).toEqual((await alice.get(`/api/tasks/${id("inboxRecurring")}`)).body.data)

    const other = await process(bob)
    expect(other.inbox.map((task) => task.title)).toEqual(["bobInbox"])
    expect(other.inbox_project_id).not.toBe(inboxId)
    expect(other.growth).toEqual([])
  })

  it("stale targets: explicit targets 7 or more days old, aged from the first target, oldest first; those with a deadline apart", async () => {
    const data = await process()
    expect(staleOf(data.stale_targets)).toEqual([
      [id("sMoved"), 12],
      [id("sOld"), 10],
      [id("sMovedFuture"), 9],
      [id("sSnoozed"), 8],
      [id("sSeven"), 7]
    ])
    expect(staleOf(data.stale_targets_with_deadline)).toEqual([
      [id("sDeadline"), 15],
      [id("sDeadlinePast"), 8]
    ])
    const item = data.stale_targets[0]!.task
    expect(item).toMatchObject({ target_at: iso(at(-2)), segment_targeted_at: iso(at(-12)), target_auto: false })
    // Bob's lists hold only his own task.
    expect(staleOf((await process(bob)).stale_targets)).toEqual([[id("bobStale"), 10]])
    // Nothing grows on the first day.
    expect(data.growth).toEqual([])
  })

  it("13 days on a day-level horizon is not yet growth; measured from horizon_set_at, not created_at", async () => {
    await restart(at(14, -1))
    const data = await readOnly()
    expect(growthOf(data)).toEqual([])
    // The stale ages moved on with the clock.
    expect(staleOf(data.stale_targets)).toEqual([
      [id("sMoved"), 25],
      [id("sOld"), 23],
      [id("sMovedFuture"), 22],
      [id("sSeven"), 21],
      [id("sSnoozed"), 21],
      [id("sSix"), 20],
      [id("sRetarget"), 14],
      // Its target arrived 8 days ago (and took it out of growth).
      [id("gTargetArrived"), 8]
    ])
    expect(staleOf(data.stale_targets_with_deadline)).toEqual([
      [id("sDeadline"), 28],
      [id("sDeadlinePast"), 21]
    ])
  })

  it("day 14: day-level horizons grow to week; target arrived or deadline under 90 days (or past) are left out", async () => {
    await restart(at(14, 1))
    const data = await readOnly()
    expect(growthOf(data)).toEqual([
      [id("gDay"), "day", "week", 14, true],
      [id("gDayOldTask"), "day", "week", 14, false],
      [id("gTargetFuture"), "day", "week", 14, true],
      [id("gDeadlineFar"), "day", "week", 14, false],
      [id("gAffirmed"), "day", "week", 14, false]
    ])
    expect(data.growth[0]!.task).toEqual((await alice.get(`/api/tasks/${id("gDay")}`)).body.data)
    // Affirming the horizon restarts the count.
    expect((await alice.patch(`/api/tasks/${id("gAffirmed")}`, { affirm_horizon: true })).status).toBe(200)
    expect(growthOf(await process()).map((g) => g[0])).toEqual([id("gDay"), id("gDayOldTask"), id("gTargetFuture"), id("gDeadlineFar")])
    const affirmed = (await alice.get(`/api/tasks/${id("gAffirmed")}`)).body.data
    expect(Date.parse(affirmed.horizon_set_at)).toBeGreaterThanOrEqual(at(14, 1).getTime())
    expect(Date.parse(affirmed.horizon_set_at)).toBeLessThan(at(14, 1).getTime() + 5 * 60_000)
    // Pinned half a day later, so the day counts below do not hang on how long each restart took.
    await sqlRun((sql) => sql`UPDATE tasks SET horizon_set_at = ${iso(at(14, 12))}::timestamptz WHERE id = ${id("gAffirmed")}`)
  })

  it("day 59: week-level and unset horizons are not yet growth; a deadline now under 90 days away drops out", async () => {
    await restart(at(60, -1))
    const data = await readOnly()
    expect(growthOf(data)).toEqual([
      [id("gWeekNoStamp"), "week", "month", 89, true],
      [id("gDay"), "day", "week", 59, true],
      [id("gDayOldTask"), "day", "week", 59, false],
      [id("gTargetFuture"), "day", "week", 59, true],
      [id("gAffirmed"), "day", "week", 45, false]
    ])
  })

  it("day 60: week-level grows to month, unset (from created_at, from null) to month", async () => {
    await restart(at(60, 1))
    const data = await readOnly()
    expect(growthOf(data)).toEqual([
      [id("gWeekNoStamp"), "week", "month", 90, true],
      [id("gDay"), "day", "week", 60, true],
      [id("gDayOldTask"), "day", "week", 60, false],
      [id("gWeek"), "week", "month", 60, false],
      [id("gUnset"), null, "month", 60, true],
      [id("gTargetFuture"), "day", "week", 60, true],
      [id("gAffirmed"), "day", "week", 45, false]
    ])
  })

  it("day 179 vs 180: month-level grows to someday only at 180; someday never grows", async () => {
    await restart(at(180, -1))
    const before = growthOf(await readOnly())
    expect(before.map((g) => g[0])).not.toContain(id("gMonth"))
    expect(before).toEqual([
      [id("gWeekNoStamp"), "week", "month", 209, true],
      [id("gDay"), "day", "week", 179, true],
      [id("gDayOldTask"), "day", "week", 179, false],
      [id("gWeek"), "week", "month", 179, false],
      [id("gUnset"), null, "month", 179, true],
      [id("gTargetFuture"), "day", "week", 179, true],
      [id("gAffirmed"), "day", "week", 165, false]
    ])

    await restart(at(180, 1))
    const data = await readOnly()
    expect(growthOf(data)).toEqual([
      [id("gWeekNoStamp"), "week", "month", 210, true],
      [id("gDay"), "day", "week", 180, true],
      [id("gDayOldTask"), "day", "week", 180, false],
      [id("gWeek"), "week", "month", 180, false],
      [id("gUnset"), null, "month", 180, true],
      [id("gMonth"), "month", "someday", 180, true],
      [id("gTargetFuture"), "day", "week", 180, true],
      [id("gAffirmed"), "day", "week", 165, false]
    ])
    // The inbox is unchanged by time; someone else's tasks never appear.
    expect(data.inbox.map((task) => task.title)).toEqual(["inboxB", "inboxRecurring", "inboxA"])
    const everything = [...data.inbox, ...data.growth.map((g) => g.task), ...data.stale_targets.map((s) => s.task),
      ...data.stale_targets_with_deadline.map((s) => s.task)]
    expect(everything.every((task) => task.user_id === aliceId)).toBe(true)
  })

  it("needs authentication", async () => {
    expect((await service.anonymous.get("/api/process")).status).toBe(401)
  })
})
