import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { rollForwardMissedReminders } from "../src/quotas/ReminderRollForward.js"
import { snapshot } from "./support/rows.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask } from "./support/tasks.js"

/**
 * A recurrence rule can neither freeze the process nor slow it. Each
 * hostile rule answers 400 at once through every route that expands rules — create (with
 * and without a due date), PATCH, bulk edit per_task, and done/skip on a rule stored before
 * today's validation — and /api/health answers right after. Before the fix, the HOURLY rule
 * spun forever inside rrule (the whole process stopped answering) and BYMONTHDAY=30 in
 * February took 12–18 s. The clock is pinned at 10:00 UTC on Tuesday 24 November 2026.
 */
const NOW = new Date("2026-11-24T10:00:00Z")
// Generous for a loaded CI machine; the old code took seconds or never answered.
const QUICK_MS = 3_000

const HOSTILE: ReadonlyArray<readonly [rule: string, reason: RegExp]> = [
  ["FREQ=HOURLY;INTERVAL=2;BYHOUR=1", /^rrule never matches: every 2 hours from the series start never reaches its BYHOUR/],
  ["FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30", /^rrule never matches: no calendar day satisfies/],
  ["FREQ=DAILY;BYHOUR=24", /^rrule BYHOUR must be 0…23 \(got 24\)$/],
  ["FREQ=DAILY;BYHOUR=-1", /^rrule BYHOUR must be 0…23 \(got -1\)$/],
  ["FREQ=HOURLY;BYMONTH=13", /^rrule BYMONTH must be 1…12 \(got 13\)$/],
  ["FREQ=MONTHLY;BYDAY=MO;BYSETPOS=6", /^rrule BYSETPOS never matches: a period of this rule has at most 5 candidate/],
  ["FREQ=DAILY;INTERVAL=7;BYDAY=MO", /^rrule never matches: every 7 days from the series start never lands on its BYDAY/],
  ["FREQ=MINUTELY", /^rrule FREQ must be YEARLY, MONTHLY, WEEKLY, DAILY or HOURLY$/]
]

describe("hostile recurrence rules", () => {
  let service: TestService
  let counter = 0
  const newUser = (): Promise<TestUser> => service.user(`hostile${++counter}`, "Europe/Berlin")
  const sql = (build: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
    service.run(Effect.flatMap(SqlClient.SqlClient, build))

  const timed = async <A>(request: () => Promise<A>): Promise<A> => {
    const started = Date.now()
    const answer = await request()
    expect(Date.now() - started).toBeLessThan(QUICK_MS)
    return answer
  }
  const expectRefused = (res: { status: number; body: any }, reason: RegExp) => {
    expect(res.status).toBe(400)
    expect(res.body.code).toBe("VALIDATION_ERROR")
    expect(res.body.details.rrule).toMatch(reason)
  }
  const healthy = async () => {
    const res = await timed(() => service.anonymous.get("/api/health"))
    expect(res.status).toBe(200)
  }

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
  })
  afterAll(async () => {
    await service.stop()
  })

  for (const [rule, reason] of HOSTILE) {
    it(`${rule}: 400 at once on create, PATCH and bulk per_task; nothing written; health answers`, async () => {
      const user = await newUser()
      // Tuesday 24 November, 10:00 CET: an even hour, so INTERVAL=2 can never reach 01:00.
      const task = await createTask(user.api, { title: "Plain", due_at: "2026-11-24T09:00:00Z" })
      const before = await snapshot(service)

      expectRefused(await timed(() => user.api.post("/api/tasks", { title: "y", rrule: rule })), reason)
      await healthy()
      expectRefused(await timed(() => user.api.post("/api/tasks", { title: "y", due_at: "2026-11-24T09:00:00Z", rrule: rule })), reason)
      expectRefused(await timed(() => user.api.patch(`/api/tasks/${task.id}`, { rrule: rule })), reason)
      // A bulk edit skips a task its edit cannot apply to (README: bulk actions).
      const bulk = await timed(() => user.api.post("/api/tasks/bulk/edit", { ids: [task.id], per_task: { [task.id]: { rrule: rule } } }))
      expect(bulk.status).toBe(200)
      expect(bulk.body).toMatchObject({ tasks_affected: 0, tasks_skipped: 1 })
      await healthy()
      expect((await user.api.get(`/api/tasks/${task.id}`)).body.data).toMatchObject({ rrule: null, due_at: "2026-11-24T09:00:00.000Z" })
      expect(await snapshot(service)).toEqual(before)
    }, 60_000)
  }

  it("done and skip on a hostile rule stored before today's validation: 400 at once, nothing written", async () => {
    const user = await newUser()
    const hourly = await createTask(user.api, { title: "Hourly", due_at: "2026-11-24T09:00:00Z", rrule: "FREQ=HOURLY;INTERVAL=2" })
    const february = await createTask(user.api, { title: "February", due_at: "2026-11-24T09:00:00Z", rrule: "FREQ=DAILY" })
    await sql((sql) => sql`UPDATE tasks SET rrule = 'FREQ=HOURLY;INTERVAL=2;BYHOUR=1' WHERE id = ${hourly.id}`)
    await sql((sql) => sql`UPDATE tasks SET rrule = 'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30' WHERE id = ${february.id}`)
    const before = await snapshot(service)

    for (const [task, reason] of [[hourly, HOSTILE[0]![1]], [february, HOSTILE[1]![1]]] as const) {
      expectRefused(await timed(() => user.api.post(`/api/tasks/${task.id}/done`)), reason)
      expectRefused(await timed(() => user.api.post(`/api/tasks/${task.id}/skip-occurrence`)), reason)
      const bulk = await timed(() => user.api.post("/api/tasks/bulk/done", { ids: [task.id] }))
      expect(bulk.status).toBe(200)
      expect(bulk.body).toMatchObject({ tasks_affected: 0, tasks_skipped: 1 })
      await healthy()
    }
    expect(await snapshot(service)).toEqual(before)
  }, 60_000)

  it("the roll-forward sweep skips a reminder with a hostile stored rule and rolls the others", async () => {
    const user = await newUser()
    // Missed reminders: 08:00 CET on 20 November, daily; the same for the bad ones.
    const good = await createTask(user.api, { title: "Good", is_reminder: true, due_at: "2026-11-20T07:00:00Z", rrule: "FREQ=DAILY" })
    const spinning = await createTask(user.api, { title: "Spins", is_reminder: true, due_at: "2026-11-20T07:00:00Z", rrule: "FREQ=DAILY" })
    const impossible = await createTask(user.api, { title: "Never", is_reminder: true, due_at: "2026-11-20T07:00:00Z", rrule: "FREQ=DAILY" })
    const later = await createTask(user.api, { title: "Good too", is_reminder: true, due_at: "2026-11-21T17:30:00Z", rrule: "FREQ=DAILY" })
    // The series started in 1990 at 08:00: rolling forward must not walk 36 years of hours.
    await sql((sql) => sql`UPDATE tasks SET rrule = 'FREQ=HOURLY;INTERVAL=2;BYHOUR=1', series_start_at = '1990-01-01T07:00:00Z' WHERE id = ${spinning.id}`)
    await sql((sql) => sql`UPDATE tasks SET rrule = 'FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30' WHERE id = ${impossible.id}`)

    const started = Date.now()
    const moved = await service.run(rollForwardMissedReminders)
    expect(Date.now() - started).toBeLessThan(QUICK_MS)
    expect(moved).toBe(2)
    const read = async (id: number) => (await user.api.get(`/api/tasks/${id}`)).body.data
    // 08:00 CET on Wednesday 25 November: the first 08:00 after 10:00 UTC on the 24th.
    expect((await read(good.id)).due_at).toBe("2026-11-25T07:00:00.000Z")
    expect((await read(later.id)).due_at).toBe("2026-11-24T17:30:00.000Z")
    expect((await read(spinning.id)).due_at).toBe("2026-11-20T07:00:00.000Z")
    expect((await read(impossible.id)).due_at).toBe("2026-11-20T07:00:00.000Z")
    await healthy()
  }, 60_000)
})
