import { Duration, Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { DEFAULT_MAINTENANCE, type MaintenanceTuning } from "../src/kernel/AppConfig.js"
import { DatabaseMaintenance, isDue } from "../src/system/DatabaseMaintenance.js"
import { databaseKind } from "./support/database.js"
import { query } from "./support/rows.js"
import { startService, type TestService } from "./support/service.js"

/**
 * The embedded database has no autovacuum, so the service vacuums and analyzes
 * its tables itself once enough rows changed; on a server it reports tables never analyzed.
 */

const NOW = new Date("2026-11-01T12:00:00Z")

interface Counters {
  readonly analyzes: number
  readonly vacuums: number
  readonly dead: number
}

/** The service's statistics functions (stateless: a fresh instance reads what the running one would). */
const maintenance = <A>(service: TestService, f: (m: DatabaseMaintenance) => Effect.Effect<A>) =>
  service.run(Effect.flatMap(DatabaseMaintenance, f).pipe(Effect.provide(DatabaseMaintenance.Default)))

/** The tasks table's maintenance counters (PGlite publishes them only when asked to flush). */
const counters = async (service: TestService): Promise<Counters> => {
  if (databaseKind() === "embedded") await query(service, (sql) => sql`SELECT pg_stat_force_next_flush()`)
  const rows = await query(service, (sql) =>
    sql<Counters>`SELECT (analyze_count + autoanalyze_count)::int AS analyzes, (vacuum_count + autovacuum_count)::int AS vacuums,
        n_dead_tup::int AS dead
      FROM pg_stat_user_tables WHERE relname = 'tasks'`)
  return rows[0]!
}

const insertTasks = (service: TestService, userId: number, n: number) =>
  query(service, (sql) =>
    sql`INSERT INTO tasks (user_id, project_id, title, original_title, created_at, updated_at)
      SELECT ${userId}, p.id, 'task ' || g, 'task ' || g, now(), now()
      FROM generate_series(1, ${n}) g, projects p WHERE p.owner_id = ${userId} AND p.is_inbox RETURNING id`)

const until = async <A>(read: () => Promise<A>, ok: (a: A) => boolean, seconds = 60): Promise<A> => {
  const deadline = Date.now() + seconds * 1000
  for (;;) {
    const value = await read()
    if (ok(value) || Date.now() > deadline) return value
    await new Promise((r) => setTimeout(r, 200))
  }
}

const tuning = (overrides: Partial<MaintenanceTuning>): MaintenanceTuning => ({ ...DEFAULT_MAINTENANCE, ...overrides })

describe("due tables", () => {
  const table = { schema: "public", name: "tasks", live: 1000, dead: 0, changed: 0, analyzed: true }
  it("are those whose changed or dead rows reach base + scale × live rows, or never analyzed ones with rows", () => {
    const t = tuning({ base: 50, scale: 0.1 })
    expect(isDue(table, t)).toBe(false)
    expect(isDue({ ...table, changed: 149 }, t)).toBe(false)
    expect(isDue({ ...table, changed: 150 }, t)).toBe(true)
    expect(isDue({ ...table, dead: 150 }, t)).toBe(true)
    expect(isDue({ ...table, live: 0, analyzed: false }, t)).toBe(false)
    expect(isDue({ ...table, live: 1, analyzed: false }, t)).toBe(true)
  })
})

describe.runIf(databaseKind() === "embedded")("embedded database upkeep", () => {
  let service: TestService

  beforeAll(async () => {
    service = await startService({
      serviceNow: Option.some(NOW),
      maintenance: tuning({ poll: Duration.millis(300), base: 20, scale: 0.1, pause: Duration.millis(1) })
    })
  })
  afterAll(async () => {
    await service?.stop()
  })

  it("analyzes and vacuums the tasks table once enough rows changed", async () => {
    const user = await service.user("keeper")
    const start = await counters(service)
    await insertTasks(service, user.id, 200)
    const analyzed = await until(() => counters(service), (c) => c.analyzes > start.analyzes)
    expect(analyzed.analyzes).toBeGreaterThan(start.analyzes)
    expect(await maintenance(service, (m) => m.neverAnalyzed)).not.toContain("tasks")

    // 100 of 200 rows updated: above 20 + 10% of 200, so the dead rows are reclaimed too.
    const before = await counters(service)
    await query(service, (sql) => sql`UPDATE tasks SET title = title || '!' WHERE user_id = ${user.id} AND id % 2 = 0 RETURNING id`)
    const after = await until(() => counters(service), (c) => c.vacuums > before.vacuums && c.analyzes > before.analyzes)
    expect(after.vacuums).toBeGreaterThan(before.vacuums)
    expect(after.analyzes).toBeGreaterThan(before.analyzes)
    expect(after.dead).toBe(0)
  }, 120_000)

  it("analyzes only the columns queries look at (migration 0027)", async () => {
    // The test above has analyzed tasks by now.
    const analyzed = await query(service, (sql) =>
      sql<{ attname: string }>`SELECT attname FROM pg_stats WHERE tablename = 'tasks' ORDER BY attname`)
    const columns = analyzed.map((r) => r.attname)
    expect(columns).toEqual(expect.arrayContaining(["user_id", "project_id", "due_at", "done", "deleted_at"]))
    // Returned, never filtered on: the widest of them cost ANALYZE the most.
    for (const skipped of ["wire_text", "notes", "title", "enrichment_baseline", "created_at"]) {
      expect(columns).not.toContain(skipped)
    }
  })
})

describe.runIf(databaseKind() === "embedded")("after a bulk action", () => {
  let service: TestService

  beforeAll(async () => {
    // The poll never comes round during the test: only the bulk action can start a pass.
    service = await startService({ serviceNow: Option.some(NOW), maintenance: tuning({ poll: Duration.hours(1), base: 20 }) })
  })
  afterAll(async () => {
    await service?.stop()
  })

  it("the statistics are checked at once", async () => {
    const user = await service.user("bulky")
    const ids = (await insertTasks(service, user.id, 100)).map((r) => (r as { id: number }).id)
    await new Promise((r) => setTimeout(r, 1000))
    const before = await counters(service)
    // Nothing looked at the new rows yet.
    expect(await maintenance(service, (m) => m.neverAnalyzed)).toContain("tasks")
    const res = await user.api.post("/api/tasks/bulk/done", { ids: ids.slice(0, 10) })
    expect(res.status).toBe(200)
    const after = await until(() => counters(service), (c) => c.analyzes > before.analyzes)
    expect(after.analyzes).toBeGreaterThan(before.analyzes)
    expect(await maintenance(service, (m) => m.neverAnalyzed)).not.toContain("tasks")
  }, 120_000)
})

describe.runIf(databaseKind() === "postgres")("on a PostgreSQL server", () => {
  let service: TestService
  const logged: Array<string> = []

  beforeAll(async () => {
    for (const method of ["log", "info", "warn", "error"] as const) {
      vi.spyOn(console, method).mockImplementation((...args: Array<unknown>) => {
        logged.push(args.map(String).join(" "))
      })
    }
    service = await startService({ serviceNow: Option.some(NOW), maintenance: tuning({ poll: Duration.millis(200), base: 1 }) })
    await query(service, (sql) => sql`ALTER TABLE tasks SET (autovacuum_enabled = false)`)
  })
  afterAll(async () => {
    vi.restoreAllMocks()
    await service?.stop()
  })

  it("warns once at start when autovacuum is off", async () => {
    const [{ on }] = await query(service, (sql) => sql<{ on: boolean }>`SELECT current_setting('autovacuum') = 'on' AS on`) as [{ on: boolean }]
    expect(await maintenance(service, (m) => m.autovacuumOn)).toBe(on)
    const warnings = () => Promise.resolve(logged.filter((line) => line.includes("autovacuum is off")).length)
    expect(await until(warnings, (n) => n === (on ? 0 : 1), 20)).toBe(on ? 0 : 1)
  })

  it("leaves vacuuming to autovacuum and reports tables never analyzed", async () => {
    const user = await service.user("server")
    await insertTasks(service, user.id, 100)
    const never = await until(() => maintenance(service, (m) => m.neverAnalyzed), (names) => names.includes("tasks"), 20)
    expect(never).toContain("tasks")
    await new Promise((r) => setTimeout(r, 1000))
    expect((await counters(service)).analyzes).toBe(0)
    await query(service, (sql) => sql`ANALYZE tasks`.pipe(Effect.as([])))
    const after = await until(() => maintenance(service, (m) => m.neverAnalyzed), (names) => !names.includes("tasks"), 20)
    expect(after).not.toContain("tasks")
  }, 60_000)
})
