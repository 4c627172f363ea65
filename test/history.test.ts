import { Effect, Option } from "effect"
import * as SqlClient from "@effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase } from "./support/database.js"
import { dailyStats } from "./support/rows.js"
import { makeClient, startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, expectServiceTime } from "./support/tasks.js"

/**
 * Spec §4.5: GET /api/completions and GET /api/stats.
 *
 * The clock is pinned at 02:00 UTC on Wednesday 11 March 2026, which is 22:00 on
 * Tuesday 10 March in New York (EDT, UTC-4): the user's calendar is a day behind UTC's.
 */
const NOW = new Date("2026-03-11T02:00:00Z")
const NY_TODAY = "2026-03-10"

const zeros = { completions: 0, tasks_created: 0, snoozes: 0 }

describe("completion history and statistics (spec §4.5)", () => {
  let service: TestService
  let counter = 0
  const newYorker = (): Promise<TestUser> => service.user(`hist${++counter}`, "America/New_York")

  const sql = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
    service.run(Effect.flatMap(SqlClient.SqlClient, f))

  /** A completion made earlier, written as the done endpoint writes it. */
  const seedCompletion = (task: Record<string, any>, completedAt: string) =>
    sql((q) =>
      q<{ id: number }>`INSERT INTO completions (task_id, user_id, completed_at, due_at_was, due_at_next, task_title, project_id)
        VALUES (${task.id}, ${task.user_id}, ${completedAt}::timestamptz, NULL, NULL, ${task.title}, ${task.project_id})
        RETURNING id`.pipe(Effect.map((rows) => rows[0]!.id))
    )

  const seedStats = (userId: number, rows: ReadonlyArray<[string, number, number, number]>) =>
    sql((q) =>
      Effect.forEach(rows, ([date, completions, created, snoozes]) =>
        q`INSERT INTO daily_stats (user_id, date, completions, tasks_created, snoozes)
          VALUES (${userId}, ${date}::date, ${completions}, ${created}, ${snoozes})`)
    )

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
  })
  afterAll(async () => {
    await service.stop()
  })

  describe("GET /api/completions", () => {
    let user: TestUser
    let other: TestUser
    let chores: Record<string, any>
    let errands: Record<string, any>
    let otherTask: Record<string, any>
    let doneAt: string
    const ids: Record<string, number> = {}

    const list = async (user: TestUser, queryString = "") => {
      const res = await user.api.get(`/api/completions${queryString === "" ? "" : `?${queryString}`}`)
      expect(res.status, `${queryString}: ${res.text}`).toBe(200)
      expect(Object.keys(res.body.data).sort()).toEqual(["completions", "count"])
      expect(res.body.data.count).toBe(res.body.data.completions.length)
      return res.body.data.completions as Array<Record<string, any>>
    }
    const idsOf = async (user: TestUser, queryString = "") => (await list(user, queryString)).map((c) => c.id)

    beforeAll(async () => {
      user = await newYorker()
      other = await newYorker()
      chores = await createTask(user.api, { title: "Chores", due_at: "2026-03-10T13:00:00Z", rrule: "FREQ=DAILY" })
      errands = await createTask(user.api, { title: "Errands" })
      // Errands completed earlier, around UTC midnights.
      ids.mar9Last = await seedCompletion(errands, "2026-03-09T23:59:59.999Z")
      ids.mar10First = await seedCompletion(errands, "2026-03-10T00:00:00.000Z")
      ids.mar10Last = await seedCompletion(errands, "2026-03-10T23:59:59.999Z")
      ids.mar11First = await seedCompletion(errands, "2026-03-11T00:00:00.000Z")
      // Chores completed now, through HTTP.
      const done = await user.api.post(`/api/tasks/${chores.id}/done`)
      expect(done.status).toBe(200)
      doneAt = done.body.data.last_completed_at
      otherTask = await createTask(other.api, { title: "Someone else's" })
      await other.api.post(`/api/tasks/${otherTask.id}/done`)
    })

    it("lists the caller's completions newest first as completion records", async () => {
      const completions = await list(user)
      const choresId = completions[0]!.id
      expect(completions.map((c) => c.id)).toEqual([choresId, ids.mar11First, ids.mar10Last, ids.mar10First, ids.mar9Last])
      expectServiceTime(doneAt, NOW)
      expect(completions[0]).toEqual({
        id: choresId,
        task_id: chores.id,
        user_id: user.id,
        completed_at: doneAt,
        due_at_was: "2026-03-10T13:00:00.000Z",
        due_at_next: "2026-03-11T13:00:00.000Z",
        task_title: "Chores",
        project_id: chores.project_id,
        is_reminder: false,
        is_tracked: false,
        progress_target: 1
      })
      expect(completions[1]).toMatchObject({ task_id: errands.id, completed_at: "2026-03-11T00:00:00.000Z", task_title: "Errands" })
    })

    it("only the caller's own: another user's completions never appear, not even by task_id", async () => {
      const theirs = await list(other)
      expect(theirs.map((c) => c.task_id)).toEqual([otherTask.id])
      expect(await idsOf(user, `task_id=${otherTask.id}`)).toEqual([])
      expect((await list(user)).every((c) => c.user_id === user.id)).toBe(true)
    })

    it("task_id narrows to one task", async () => {
      expect(await idsOf(user, `task_id=${errands.id}`)).toEqual([ids.mar11First, ids.mar10Last, ids.mar10First, ids.mar9Last])
      expect((await list(user, `task_id=${chores.id}`)).map((c) => c.completed_at)).toEqual([doneAt])
      expect(await idsOf(user, "task_id=999999")).toEqual([])
    })

    it("date is the UTC calendar date, not the user's local one", async () => {
      expect(await idsOf(user, "date=2026-03-10")).toEqual([ids.mar10Last, ids.mar10First])
      // 02:00 UTC on 11 March, although it is still 10 March in New York.
      const mar11 = await list(user, "date=2026-03-11")
      expect(mar11.map((c) => c.completed_at)).toEqual([doneAt, "2026-03-11T00:00:00.000Z"])
      expect(await idsOf(user, "date=2026-03-09")).toEqual([ids.mar9Last])
      expect(await idsOf(user, "date=2026-03-08")).toEqual([])
      expect(await idsOf(user, `date=2026-03-10&task_id=${chores.id}`)).toEqual([])
    })

    it("since (at or after) and until (before) select a half-open window, in any offset", async () => {
      expect(await idsOf(user, "since=2026-03-10T00:00:00Z&until=2026-03-11T00:00:00Z")).toEqual([ids.mar10Last, ids.mar10First])
      // The same window written in New York time.
      const since = encodeURIComponent("2026-03-09T20:00:00-04:00")
      const until = encodeURIComponent("2026-03-10T20:00:00-04:00")
      expect(await idsOf(user, `since=${since}&until=${until}`)).toEqual([ids.mar10Last, ids.mar10First])
      expect(await idsOf(user, "since=2026-03-09T23:59:59.999Z&until=2026-03-10T00:00:00.000Z")).toEqual([ids.mar9Last])
      expect(await idsOf(user, "since=2026-03-10T00:00:00.001Z&until=2026-03-10T23:59:59.999Z")).toEqual([])
      expect(await idsOf(user, `since=2026-03-10T00:00:00Z&until=2026-03-12T00:00:00Z&task_id=${errands.id}`)).toEqual([
        ids.mar11First,
        ids.mar10Last,
        ids.mar10First
      ])
    })

    it("since or until alone, a bad date or a bad task_id is a 400", async () => {
      const cases: Array<[string, string]> = [
        ["since=2026-03-10T00:00:00Z", "until"],
        ["until=2026-03-10T00:00:00Z", "since"],
        ["date=2026-02-30", "date"],
        ["date=10-03-2026", "date"],
        ["since=yesterday&until=2026-03-10T00:00:00Z", "since"],
        ["task_id=abc", "task_id"],
        ["task_id=0", "task_id"]
      ]
      for (const [queryString, field] of cases) {
        const res = await user.api.get(`/api/completions?${queryString}`)
        expect(res.status, queryString).toBe(400)
        expect(res.body.code, queryString).toBe("VALIDATION_ERROR")
        expect(Object.keys(res.body.details), queryString).toEqual([field])
      }
    })
  })

  describe("GET /api/stats", () => {
    /** Earlier days, seeded as the pipeline would have counted them: [date, completions, created, snoozes]. */
    const history: ReadonlyArray<[string, number, number, number]> = [
      ["2026-02-28", 1, 100, 0], // last month
      ["2026-03-01", 2, 0, 10], // this month, Sunday a week ago
      ["2026-03-07", 4, 0, 0], // Saturday: last week either way
      ["2026-03-08", 8, 0, 20], // Sunday: this week only when weeks start on Sunday
      ["2026-03-09", 16, 1, 0] // Monday: this week either way
    ]

    /** Today in New York: two tasks created, one done, one snoozed. */
    const actToday = async (user: TestUser) => {
      const a = await createTask(user.api, { title: "Today one" })
      const b = await createTask(user.api, { title: "Today two", due_at: "2026-03-11T13:00:00Z" })
      expect((await user.api.post(`/api/tasks/${a.id}/done`)).status).toBe(200)
      expect((await user.api.post(`/api/tasks/${b.id}/snooze`, { until: "2026-03-12T13:00:00Z" })).status).toBe(200)
    }

    const summary = async (user: TestUser) => {
      const res = await user.api.get("/api/stats")
      expect(res.status).toBe(200)
      expect(Object.keys(res.body.data).sort()).toEqual(["all_time", "month", "today", "week"])
      return res.body.data
    }

    it("without a range: today, week (from Sunday by default), month and all time on the user's local calendar", async () => {
      const user = await newYorker()
      await seedStats(user.id, history)
      await actToday(user)
      // Counted on 10 March, New York's date, although UTC is on 11 March.
      expect((await dailyStats(service, user.id)).at(-1)).toEqual({ date: NY_TODAY, completions: 1, tasks_created: 2, snoozes: 1 })

      const data = await summary(user)
      expect(data.today).toEqual({
        id: expect.any(Number),
        user_id: user.id,
        date: NY_TODAY,
        completions: 1,
        tasks_created: 2,
        snoozes: 1
      })
      // Sunday 8 March to today.
      expect(data.week).toEqual({ completions: 8 + 16 + 1, tasks_created: 1 + 2, snoozes: 20 + 1 })
      expect(data.month).toEqual({ completions: 2 + 4 + 8 + 16 + 1, tasks_created: 1 + 2, snoozes: 10 + 20 + 1 })
      expect(data.all_time).toEqual({ completions: 1 + 2 + 4 + 8 + 16 + 1, tasks_created: 100 + 1 + 2, snoozes: 31 })
    })

    it("with week_start monday the week runs from Monday", async () => {
      const user = await newYorker()
      const prefs = await user.api.patch("/api/user/preferences", { week_start: "monday" })
      expect(prefs.status).toBe(200)
      expect(prefs.body.data.week_start).toBe("monday")
      await seedStats(user.id, history)
      await actToday(user)

      const data = await summary(user)
      expect(data.today).toMatchObject({ date: NY_TODAY, completions: 1, tasks_created: 2, snoozes: 1 })
      // Monday 9 March to today.
      expect(data.week).toEqual({ completions: 16 + 1, tasks_created: 1 + 2, snoozes: 1 })
      expect(data.month).toEqual({ completions: 31, tasks_created: 3, snoozes: 31 })
      expect(data.all_time).toEqual({ completions: 32, tasks_created: 103, snoozes: 31 })

      // And back to sunday.
      await user.api.patch("/api/user/preferences", { week_start: "sunday" })
      expect((await summary(user)).week).toEqual({ completions: 25, tasks_created: 3, snoozes: 21 })
    })

    it("a user with no statistics gets a zero today row without id and zero totals", async () => {
      const user = await newYorker()
      const other = await newYorker()
      await seedStats(other.id, history)
      expect(await summary(user)).toEqual({
        today: { id: null, user_id: user.id, date: NY_TODAY, ...zeros },
        week: zeros,
        month: zeros,
        all_time: zeros
      })
    })

    it("a user in another zone counts on their own calendar", async () => {
      // 11:00 on Wednesday 11 March in Tokyo.
      const user = await service.user(`tokyo${++counter}`, "Asia/Tokyo")
      await seedStats(user.id, [["2026-03-10", 3, 0, 0], ["2026-03-08", 5, 0, 0], ["2026-03-07", 7, 0, 0]])
      await createTask(user.api, { title: "Tokyo today" })
      const data = await summary(user)
      expect(data.today).toMatchObject({ date: "2026-03-11", ...zeros, tasks_created: 1 })
      expect(data.week).toEqual({ completions: 3 + 5, tasks_created: 1, snoozes: 0 })
      expect(data.month).toEqual({ completions: 15, tasks_created: 1, snoozes: 0 })
    })

    it("with start and end: one row per day that has stats, oldest first, only the caller's", async () => {
      const user = await newYorker()
      const other = await newYorker()
      await seedStats(user.id, history)
      await seedStats(other.id, [["2026-03-05", 9, 9, 9]])
      await actToday(user)

      const res = await user.api.get("/api/stats?start=2026-03-01&end=2026-03-09")
      expect(res.status).toBe(200)
      expect(Object.keys(res.body.data)).toEqual(["stats"])
      expect(res.body.data.stats).toEqual([
        { id: expect.any(Number), user_id: user.id, date: "2026-03-01", completions: 2, tasks_created: 0, snoozes: 10 },
        { id: expect.any(Number), user_id: user.id, date: "2026-03-07", completions: 4, tasks_created: 0, snoozes: 0 },
        { id: expect.any(Number), user_id: user.id, date: "2026-03-08", completions: 8, tasks_created: 0, snoozes: 20 },
        { id: expect.any(Number), user_id: user.id, date: "2026-03-09", completions: 16, tasks_created: 1, snoozes: 0 }
      ])

      const all = (await user.api.get("/api/stats?start=2026-01-01&end=2026-12-31")).body.data.stats
      expect(all.map((r: any) => r.date)).toEqual(["2026-02-28", "2026-03-01", "2026-03-07", "2026-03-08", "2026-03-09", NY_TODAY])
      expect(all.at(-1)).toMatchObject({ completions: 1, tasks_created: 2, snoozes: 1 })

      const oneDay = (await user.api.get(`/api/stats?start=${NY_TODAY}&end=${NY_TODAY}`)).body.data.stats
      expect(oneDay.map((r: any) => r.date)).toEqual([NY_TODAY])
      expect((await user.api.get("/api/stats?start=2026-03-02&end=2026-03-06")).body.data).toEqual({ stats: [] })
      expect((await other.api.get("/api/stats?start=2026-03-01&end=2026-03-31")).body.data.stats.map((r: any) => r.date)).toEqual([
        "2026-03-05"
      ])
    })

    it("a bad date, start after end, or only one of start and end is a 400", async () => {
      const user = await newYorker()
      const cases: Array<[string, string]> = [
        ["start=2026-02-30&end=2026-03-05", "start"],
        ["start=2026-03-01&end=2026-13-01", "end"],
        ["start=20260301&end=2026-03-05", "start"],
        ["start=2026-03-05&end=2026-03-01", "start"],
        ["start=2026-03-01", "end"],
        ["end=2026-03-01", "start"]
      ]
      for (const [queryString, field] of cases) {
        const res = await user.api.get(`/api/stats?${queryString}`)
        expect(res.status, queryString).toBe(400)
        expect(res.body.code, queryString).toBe("VALIDATION_ERROR")
        expect(Object.keys(res.body.details), queryString).toEqual([field])
      }
    })
  })
})

describe("statistics across days (two service runs on one database)", () => {
  it("undone takes a completion off the day it was counted; a day whose counts went back to zero has no stats", async () => {
    const database = await freshDatabase()
    let token = ""
    const ids: Array<number> = []
    // Sunday 8 March, 11:00 EDT: two tasks created, one done.
    const first = await startService({ serviceNow: Option.some(new Date("2026-03-08T15:00:00Z")) }, database)
    try {
      const user = await first.user("traveller", "America/New_York")
      token = user.token
      for (const title of ["Done on Sunday", "Done on Tuesday"]) ids.push((await createTask(user.api, { title })).id)
      expect((await user.api.post(`/api/tasks/${ids[0]}/done`)).status).toBe(200)
      expect(await dailyStats(first, user.id)).toEqual([{ date: "2026-03-08", completions: 1, tasks_created: 2, snoozes: 0 }])
    } finally {
      await first.stop()
    }

    // Tuesday 10 March, 11:00 EDT.
    const second = await startService({ serviceNow: Option.some(new Date("2026-03-10T15:00:00Z")) }, database)
    try {
      const api = makeClient(second.baseUrl, { authorization: `Bearer ${token}` })
      const me = (await api.get("/api/auth/me")).body.data
      // Sunday's completion, taken back on Tuesday, comes off Sunday.
      expect((await api.post(`/api/tasks/${ids[0]}/undone`)).status).toBe(200)
      expect(await dailyStats(second, me.id)).toEqual([{ date: "2026-03-08", completions: 0, tasks_created: 2, snoozes: 0 }])
      // Done and undone on Tuesday: Tuesday's counts come back to zero.
      expect((await api.post(`/api/tasks/${ids[1]}/done`)).status).toBe(200)
      expect((await api.post(`/api/tasks/${ids[1]}/undone`)).status).toBe(200)

      const range = await api.get("/api/stats?start=2026-03-01&end=2026-03-31")
      expect(range.status).toBe(200)
      expect(range.body.data.stats).toEqual([
        { id: expect.any(Number), user_id: me.id, date: "2026-03-08", completions: 0, tasks_created: 2, snoozes: 0 }
      ])
      const summary = (await api.get("/api/stats")).body.data
      expect(summary.today).toMatchObject({ date: "2026-03-10", ...zeros })
      expect(summary.week).toEqual({ completions: 0, tasks_created: 2, snoozes: 0 })
      expect(summary.all_time).toEqual({ completions: 0, tasks_created: 2, snoozes: 0 })
    } finally {
      await second.stop()
      await database.drop()
    }
  })
})
