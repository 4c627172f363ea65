import * as SqlClient from "@effect/sql/SqlClient"
import * as Statement from "@effect/sql/Statement"
import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { UserId } from "../src/kernel/Ids.js"
import { DEFAULT_MAINTENANCE } from "../src/kernel/AppConfig.js"
import { TaskQueries } from "../src/tasks/TaskQueries.js"
import { databaseKind } from "./support/database.js"
import { query } from "./support/rows.js"
import { startService, type TestService } from "./support/service.js"

/**
 * GET /api/tasks/counts reads a user's open tasks through `tasks_open_by_due` alone (migration
 * 0037): every column the statement names is in that index, so a vacuumed table answers it
 * without reading the ~1.5 KB rows. On the embedded database, whose buffer pool holds ~24 MB,
 * reading the rows of a 10,000-task user meant reading them from the file cache on every count.
 */
const NOW = new Date("2026-11-01T12:00:00Z")
const MINE = 4000
const OTHERS = 20_000

interface PlanNode {
  readonly "Node Type": string
  readonly "Index Name"?: string
  readonly "Heap Fetches"?: number
  readonly Plans?: ReadonlyArray<PlanNode>
}
const nodes = (plan: PlanNode): ReadonlyArray<PlanNode> => [plan, ...(plan.Plans ?? []).flatMap(nodes)]

describe(`counts from the open tasks' index (${databaseKind()})`, () => {
  let service: TestService
  let me: number

  /** Open and closed, dated and undated, reminders and quotas, spread around now. */
  const seed = (userId: number, n: number) =>
    query(service, (sql) =>
      sql`INSERT INTO tasks (user_id, project_id, title, original_title, due_at, original_due_at, done, done_at,
            archived_at, deleted_at, is_reminder, is_tracked, progress_target, rrule, created_at, updated_at)
          SELECT ${userId}, (SELECT id FROM projects WHERE owner_id = ${userId} AND is_inbox), 'task ' || g, 'task ' || g,
            CASE WHEN g % 11 = 0 THEN NULL ELSE ${NOW.toISOString()}::timestamptz + ((g * 7919) % 120 - 60) * interval '1 day' END,
            CASE WHEN g % 11 = 0 THEN NULL ELSE ${NOW.toISOString()}::timestamptz + ((g * 7919) % 120 - 60) * interval '1 day' END,
            g % 13 = 0, CASE WHEN g % 13 = 0 THEN ${NOW.toISOString()}::timestamptz END,
            CASE WHEN g % 17 = 0 THEN ${NOW.toISOString()}::timestamptz END,
            CASE WHEN g % 19 = 0 THEN ${NOW.toISOString()}::timestamptz END,
            g % 23 = 0, g % 29 = 0, CASE WHEN g % 31 = 0 THEN 3 ELSE 1 END,
            CASE WHEN g % 29 = 0 OR g % 31 = 0 THEN 'FREQ=WEEKLY' END,
            ${NOW.toISOString()}::timestamptz, ${NOW.toISOString()}::timestamptz
          FROM generate_series(1, ${n}) g RETURNING id`)

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW), maintenance: { ...DEFAULT_MAINTENANCE, enabled: false } })
    me = (await service.user("counter")).id
    await seed(me, MINE)
    await seed((await service.user("someone-else")).id, OTHERS)
    // What a server's autovacuum and the embedded upkeep do after this many changed rows.
    await query(service, (sql) => sql`VACUUM (ANALYZE) tasks`)
  }, 120_000)

  afterAll(async () => {
    await service?.stop()
  })

  it("are an index-only scan of tasks_open_by_due that reads no row, and count as the rows say", async () => {
    const user = { id: me as UserId, username: "counter", timezone: "UTC" }
    const { counts, plan } = await service.run(Effect.gen(function*() {
      const captured: Array<readonly [string, ReadonlyArray<unknown>]> = []
      const counts = yield* Statement.withTransformer(
        Effect.flatMap(TaskQueries, (t) => t.countsAt(user, NOW)),
        (self) => Effect.sync(() => (captured.push(self.compile()), self))
      )
      expect(captured).toHaveLength(1)
      const sql = yield* SqlClient.SqlClient
      const [text, params] = captured[0]!
      const rows = yield* sql.unsafe<Record<string, unknown>>(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, params as Array<any>)
      const raw = Object.values(rows[0]!)[0]
      const doc = (typeof raw === "string" ? JSON.parse(raw) : raw) as Array<{ Plan: PlanNode }>
      return { counts, plan: doc[0]!.Plan }
    }))
    const scans = nodes(plan).filter((n) => n["Node Type"].includes("Scan"))
    expect(scans.map((n) => [n["Node Type"], n["Index Name"], n["Heap Fetches"]])).toEqual([
      ["Index Only Scan", "tasks_open_by_due", 0]
    ])

    // The same numbers from the rows, by the spec's definitions (§4.2): open is neither done,
    // trashed nor archived; overdue excludes reminders and quotas; today is the UTC day.
    const [expected] = await query<{ total: number; overdue: number; today: number }>(service, (sql) =>
      sql`SELECT count(*)::int AS total,
            (count(*) FILTER (WHERE NOT is_reminder AND NOT is_tracked AND progress_target <= 1
              AND due_at < ${NOW.toISOString()}::timestamptz))::int AS overdue,
            (count(*) FILTER (WHERE due_at >= '2026-11-01T00:00:00Z' AND due_at < '2026-11-02T00:00:00Z'))::int AS today
          FROM tasks WHERE user_id = ${me} AND NOT done AND deleted_at IS NULL AND archived_at IS NULL`)
    expect(counts).toEqual(expected)
    expect(expected!.total).toBeGreaterThan(3000)
    expect(expected!.overdue).toBeGreaterThan(1000)
    expect(expected!.today).toBeGreaterThan(10)
  }, 60_000)
})
