import { Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "./support/rows.js"
import { startService, type TestService } from "./support/service.js"

/*
 * A user's writes add to their day's statistics on a row per database
 * connection (migration 0015), so concurrent writers no longer queue on one row lock. What
 * GET /api/stats shows is the sum over a day's rows: one entry per day, whose id is the day's
 * first row and does not change as more rows are added.
 */

const NOW = new Date("2026-05-05T10:00:00Z")

describe("statistics summed over a day's rows", () => {
  let service: TestService

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
  })
  afterAll(async () => {
    await service.stop()
  })

  it("concurrent creates and dones of one user: every one counted once, one entry for the day", async () => {
    const user = await service.user("shards", "UTC")
    const created = await Promise.all(
      Array.from({ length: 24 }, (_, n) => user.api.post("/api/tasks", { title: `Parallel ${n}` }))
    )
    expect(created.map((r) => r.status)).toEqual(Array(24).fill(201))
    const firstId = (await user.api.get("/api/stats")).body.data.today.id
    expect(firstId).toEqual(expect.any(Number))
    const done = await Promise.all(created.slice(0, 10).map((r) => user.api.post(`/api/tasks/${r.body.data.id}/done`)))
    expect(done.map((r) => r.status)).toEqual(Array(10).fill(200))

    const summary = (await user.api.get("/api/stats")).body.data
    expect(summary.today).toEqual({ id: firstId, user_id: user.id, date: "2026-05-05", completions: 10, tasks_created: 24, snoozes: 0 })
    expect(summary.all_time).toEqual({ completions: 10, tasks_created: 24, snoozes: 0 })

    const range = (await user.api.get("/api/stats?start=2026-05-01&end=2026-05-31")).body.data.stats
    expect(range).toEqual([{ id: firstId, user_id: user.id, date: "2026-05-05", completions: 10, tasks_created: 24, snoozes: 0 }])

    // However many rows hold the day, they add up to what the API shows.
    const rows = await query<{ rows: number; completions: number; created: number }>(service, (sql) =>
      sql`SELECT count(*)::int AS rows, sum(completions)::int AS completions, sum(tasks_created)::int AS created
        FROM daily_stats WHERE user_id = ${user.id}`)
    expect(rows[0]).toMatchObject({ completions: 10, created: 24 })
    expect(rows[0]!.rows).toBeGreaterThanOrEqual(1)
  })

  it("a completion taken back by undo cancels out, whichever row it was added to", async () => {
    const user = await service.user("shards-undo", "UTC")
    const tasks = await Promise.all([1, 2, 3].map((n) => user.api.post("/api/tasks", { title: `Undone ${n}` })))
    await Promise.all(tasks.map((t) => user.api.post(`/api/tasks/${t.body.data.id}/done`)))
    for (let n = 0; n < 3; n++) expect((await user.api.post("/api/undo")).status).toBe(200)
    const expected = { user_id: user.id, date: "2026-05-05", completions: 0, tasks_created: 3, snoozes: 0 }
    expect((await user.api.get("/api/stats?start=2026-05-01&end=2026-05-31")).body.data.stats).toEqual([
      { id: expect.any(Number), ...expected }
    ])
    expect((await user.api.get("/api/stats")).body.data.today).toMatchObject(expected)
  })
})
