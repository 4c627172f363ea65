import * as SqlClient from "@effect/sql/SqlClient"
import * as Statement from "@effect/sql/Statement"
import { Effect, Option, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { TaskId, type UserId } from "../src/kernel/Ids.js"
import { DEFAULT_LIMIT } from "../src/kernel/QueryParams.js"
import type { TaskListQuery } from "../src/tasks/Task.js"
import { DEFAULT_MAINTENANCE } from "../src/kernel/AppConfig.js"
import type { CurrentUserShape } from "../src/kernel/CurrentUser.js"
import { Exporter } from "../src/history/Exporter.js"
import { History } from "../src/history/HistoryService.js"
import { Projects } from "../src/projects/Projects.js"
import { TaskQueries } from "../src/tasks/TaskQueries.js"
import { Triage } from "../src/triage/TriageService.js"
import { missedReminders } from "../src/quotas/TaskRolloverSql.js"
import { databaseKind } from "./support/database.js"
import { query } from "./support/rows.js"
import { startService, type TestService } from "./support/service.js"

/**
 * Every hot read must pick an index-driven plan on a database nobody has
 * analyzed (the embedded default has no autovacuum; a server's may lag). The service's
 * own statements are captured as it runs them and replayed under
 * `EXPLAIN (ANALYZE, FORMAT JSON)`: no sequential scan of `tasks`, and the rows read from
 * `tasks` bounded by the page or the caller's own rows, never by the table.
 */

const NOW = new Date("2026-11-01T12:00:00Z")
const BIG = 3000
const SMALL = 300
const OTHERS = 5
const SHARED_TASKS = 2000
/**
 * Another user's tasks, in a project of their own: they make the table as large as a server
 * with a few busy users. Never analyzed, PostgreSQL's guesses change with the table's size;
 * below ~50,000 rows it walked a shared project's tasks in due order anyway, above it sorted
 * all of them (bench/scale.ts, 1,000,000 tasks: 7 ms against 0.4 ms; migration 0026).
 */
const CROWD = 100_000
/** Open recurring reminders are 1 seeded task in 230 (`seedTasks`). */
const SEEDED = BIG + SMALL * (OTHERS + 1) + SHARED_TASKS + CROWD

interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly "Index Cond"?: string
  readonly "Actual Rows"?: number
  readonly "Actual Loops"?: number
  readonly "Rows Removed by Filter"?: number
  readonly "Rows Removed by Index Recheck"?: number
  readonly Plans?: ReadonlyArray<PlanNode>
}

const nodes = (plan: PlanNode): Array<PlanNode> => [plan, ...(plan.Plans ?? []).flatMap(nodes)]

/** Rows a plan read from `tasks`: those it kept plus those its filters threw away, over every loop. */
const tasksExamined = (plan: PlanNode) =>
  nodes(plan)
    .filter((n) => n["Relation Name"] === "tasks")
    .reduce((sum, n) =>
      sum + ((n["Actual Rows"] ?? 0) + (n["Rows Removed by Filter"] ?? 0) + (n["Rows Removed by Index Recheck"] ?? 0)) *
        (n["Actual Loops"] ?? 1), 0)

interface Explained {
  readonly sql: string
  readonly seqScans: ReadonlyArray<string>
  readonly examined: number
  /** The index scans whose conditions name user_id. */
  readonly byUser: ReadonlyArray<{ readonly index: string; readonly cond: string }>
  /** The scans of the plan, for a readable failure. */
  readonly scans: string
}

describe(`query plans without statistics (${databaseKind()})`, () => {
  let service: TestService
  let big: CurrentUserShape
  let small: CurrentUserShape
  let bigInbox: number
  let sharedProject: number
  let sharedTask: TaskId
  let bigTask: TaskId

  const user = (id: number, username: string): CurrentUserShape => ({ id: id as UserId, username, timezone: "UTC" })

  /** Rows as the API writes them: due dates spread around now, some recurring, labelled, done, archived, trashed. */
  const seedTasks = (userId: number, projectId: number, n: number) =>
    query(service, (sql) =>
      sql`INSERT INTO tasks (user_id, project_id, title, original_title, due_at, original_due_at, rrule, labels,
            done, done_at, archived_at, deleted_at, is_reminder, priority, notes, created_at, updated_at)
          SELECT ${userId}, ${projectId}, 'task ' || g, 'task ' || g,
            CASE WHEN g % 11 = 0 THEN NULL ELSE ${NOW.toISOString()}::timestamptz + ((g * 7919) % 120 - 60) * interval '1 day' END,
            CASE WHEN g % 11 = 0 THEN NULL ELSE ${NOW.toISOString()}::timestamptz + ((g * 7919) % 120 - 60) * interval '1 day' END,
            CASE WHEN g % 10 = 0 THEN 'FREQ=WEEKLY' END,
            CASE WHEN g % 7 = 0 THEN '["home"]'::jsonb ELSE '[]'::jsonb END,
            g % 13 = 0, CASE WHEN g % 13 = 0 THEN ${NOW.toISOString()}::timestamptz END,
            CASE WHEN g % 17 = 0 THEN ${NOW.toISOString()}::timestamptz END,
            CASE WHEN g % 19 = 0 THEN ${NOW.toISOString()}::timestamptz - g * interval '1 minute' END,
            g % 23 = 0, g % 5, CASE WHEN g % 3 = 0 THEN 'notes ' || g ELSE '' END,
            ${NOW.toISOString()}::timestamptz - g * interval '1 hour', ${NOW.toISOString()}::timestamptz
          FROM generate_series(1, ${n}) g RETURNING id`)

  const inboxOf = async (userId: number) =>
    (await query(service, (sql) => sql<{ id: number }>`SELECT id FROM projects WHERE owner_id = ${userId} AND is_inbox`))[0]!.id

  beforeAll(async () => {
    // The embedded database's own upkeep would analyze the tables mid-test: off here.
    service = await startService({ serviceNow: Option.some(NOW), maintenance: { ...DEFAULT_MAINTENANCE, enabled: false } })
    // A server's autovacuum would analyze the tables mid-test; this database must stay unanalyzed.
    if (databaseKind() === "postgres") {
      await query(service, (sql) => sql`ALTER TABLE tasks SET (autovacuum_enabled = false)`)
      await query(service, (sql) => sql`ALTER TABLE completions SET (autovacuum_enabled = false)`)
      await query(service, (sql) => sql`ALTER TABLE projects SET (autovacuum_enabled = false)`)
    }
    const b = await service.user("big")
    big = user(b.id, "big")
    bigInbox = await inboxOf(b.id)
    const ids = await seedTasks(b.id, bigInbox, BIG)
    bigTask = TaskId.make((ids[BIG - 2] as { id: number }).id)
    const s = await service.user("small")
    small = user(s.id, "small")
    await seedTasks(s.id, await inboxOf(s.id), SMALL)
    for (let i = 0; i < OTHERS; i++) {
      const o = await service.user(`other${i}`)
      await seedTasks(o.id, await inboxOf(o.id), SMALL)
    }
    const crowd = await service.user("crowd")
    await seedTasks(crowd.id, await inboxOf(crowd.id), CROWD)
    // The first other user keeps a project that is shared later in the run.
    const owner = await service.user("owner")
    const created = await owner.api.post("/api/projects", { name: "Team" })
    expect(created.status).toBe(201)
    sharedProject = created.body.data.id
    sharedTask = TaskId.make((await seedTasks(owner.id, sharedProject, SHARED_TASKS) as Array<{ id: number }>)[0]!.id)
    await query(service, (sql) =>
      sql`INSERT INTO completions (task_id, user_id, completed_at, task_title, project_id)
          SELECT t.id, t.user_id, t.updated_at - (t.id % 500) * interval '1 hour', t.title, t.project_id
          FROM tasks t WHERE t.user_id IN (${b.id}, ${s.id}) AND t.id % 3 = 0 RETURNING id`)
  }, 120_000)

  afterAll(async () => {
    await service?.stop()
  })

  /** Runs a service call, capturing each statement it sends, and explains each with its parameters. */
  const explain = (effect: Effect.Effect<unknown, unknown, any>): Promise<ReadonlyArray<Explained>> =>
    service.run(Effect.gen(function*() {
      const captured: Array<readonly [string, ReadonlyArray<unknown>]> = []
      yield* Effect.either(Statement.withTransformer(effect, (self) =>
        Effect.sync(() => {
          captured.push(self.compile())
          return self
        })))
      const sql = yield* SqlClient.SqlClient
      const out: Array<Explained> = []
      for (const [text, params] of captured) {
        const rows = yield* sql.unsafe<Record<string, unknown>>(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, params as Array<any>)
        const raw = Object.values(rows[0]!)[0]
        const doc = (typeof raw === "string" ? JSON.parse(raw) : raw) as Array<{ Plan: PlanNode }>
        const plan = doc[0]!.Plan
        out.push({
          sql: text,
          seqScans: nodes(plan).filter((n) => n["Node Type"] === "Seq Scan").map((n) => n["Relation Name"] ?? "?"),
          examined: tasksExamined(plan),
          byUser: nodes(plan).filter((n) => n["Index Name"] !== undefined && /\buser_id\b/.test(n["Index Cond"] ?? ""))
            .map((n) => ({ index: n["Index Name"]!, cond: n["Index Cond"]! })),
          scans: nodes(plan).filter((n) => n["Relation Name"] !== undefined || n["Index Name"] !== undefined)
            .map((n) => `${n["Node Type"]} ${n["Relation Name"] ?? ""} ${n["Index Name"] ?? ""} rows=${n["Actual Rows"]} removed=${n["Rows Removed by Filter"] ?? 0} loops=${n["Actual Loops"]}`)
            .join("; ")
        })
      }
      return out
    }))

  const leadingColumns = new Map<string, string>()
  /** The first key column of an index. */
  const leadingColumn = async (index: string) => {
    if (!leadingColumns.has(index)) {
      const rows = await query(service, (sql) =>
        sql<{ column: string }>`SELECT a.attname AS column FROM pg_index i
          JOIN pg_class c ON c.oid = i.indexrelid
          JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
          WHERE c.relname = ${index}`)
      leadingColumns.set(index, rows[0]!.column)
    }
    return leadingColumns.get(index)!
  }

  const check = async (name: string, effect: Effect.Effect<unknown, unknown, any>, bound: number) => {
    const explained = await explain(effect)
    expect(explained.length, name).toBeGreaterThan(0)
    for (const e of explained) {
      expect(e.seqScans.filter((r) => r === "tasks"), `${name}: ${e.sql}`).toEqual([])
      expect(e.examined, `${name} reads at most ${bound} task rows: ${e.scans}`).toBeLessThanOrEqual(bound)
      // A condition on user_id in an index whose leading column nothing bounds walks every
      // user's entries, which the row counts above never show (they count what it kept).
      for (const { cond, index } of e.byUser) {
        const leading = await leadingColumn(index)
        expect(new RegExp(`\\b${leading}\\b`).test(cond), `${name}: ${index} (led by ${leading}): ${cond}; ${e.scans}`).toBe(true)
      }
    }
  }

  const list = (who: CurrentUserShape, q: TaskListQuery) => Effect.flatMap(TaskQueries, (t) => t.listJsonAt(who, q, NOW))

  /** Filters the index answers in order: a page (per branch) is all they read. */
  const paged: ReadonlyArray<TaskListQuery> = [
    { limit: 50 },
    {},
    { limit: 50, offset: 100 },
    { overdue: true, limit: 50 }
  ]
  /** Filters checked row by row: bounded by the caller's own rows (and shared ones), never other users'. */
  const filtered = (inbox: number): ReadonlyArray<TaskListQuery> => [
    { done: true, limit: 50 },
    { archived: true, limit: 50 },
    { trashed: true, limit: 50 },
    { project_id: inbox, limit: 50 },
    { label: "home", limit: 50 },
    { search: "task 12", limit: 50 },
    { kind: "reminder", limit: 50 },
    { kind: "quota", limit: 50 },
    { kind: "task", limit: 50 },
    { recurring: true, limit: 50 },
    { one_off: true, limit: 50 },
    { overdue: false, limit: 50 }
  ]

  const allReads = async (phase: string, shared: number) => {
    for (const q of paged) {
      await check(`${phase} list ${JSON.stringify(q)}`, list(big, q), 3 * ((q.limit ?? DEFAULT_LIMIT) + (q.offset ?? 0)) + 10)
    }
    for (const q of filtered(bigInbox)) {
      await check(`${phase} list ${JSON.stringify(q)}`, list(big, q), BIG + shared)
    }
    // The small user's reads never walk the big user's rows.
    for (const q of [...paged, ...filtered(bigInbox)]) {
      await check(`${phase} small list ${JSON.stringify(q)}`, list(small, q), SMALL + shared)
    }
    await check(`${phase} get`, Effect.flatMap(TaskQueries, (t) => t.getJson(big, bigTask)), 2)
    await check(`${phase} get (not visible)`, Effect.flatMap(TaskQueries, (t) => t.getJson(small, bigTask)), 2)
    await check(`${phase} counts`, Effect.flatMap(TaskQueries, (t) => t.countsAt(big, NOW)), BIG)
    await check(`${phase} small counts`, Effect.flatMap(TaskQueries, (t) => t.countsAt(small, NOW)), SMALL)
    // Unanalyzed, PostgreSQL fetches the caller's trash and sorts it rather than reading it in index order.
    await check(`${phase} trash`, Effect.flatMap(TaskQueries, (t) => t.trashJson(big, { limit: 50, offset: 0 })), Math.ceil(BIG / 19))
    await check(`${phase} completions`, Effect.flatMap(History, (h) => h.completionsJson(big, { limit: 50 })), 2)
    await check(`${phase} completions of a task`, Effect.flatMap(History, (h) => h.completionsJson(big, { task_id: bigTask })), 2)
    await check(`${phase} triage`, Effect.flatMap(Triage, (t) => t.process(small)), SMALL)
    // The minutely sweep of every user's missed recurring reminders: the open recurring
    // reminders (1 task in 230 here), not the table.
    await check(`${phase} missed reminders`, Effect.flatMap(SqlClient.SqlClient, (sql) => missedReminders(sql, NOW)), Math.ceil(SEEDED / 230) + 40)
    // Two counts per project (active, overdue), each over that project's rows.
    await check(`${phase} projects`, Effect.flatMap(Projects, (p) => p.list(small)), 2 * (SMALL + shared))
    await check(
      `${phase} export`,
      Effect.flatMap(Exporter, (e) => Effect.flatMap(e.json(small), ({ body }) => Stream.runDrain(body))),
      // The tasks page reads the caller's rows once; the projects page counts each project's rows twice.
      2 * SMALL
    )
  }

  it("every hot read is index-driven while no project is shared", async () => {
    await allReads("unshared", 0)
  }, 120_000)

  it("and with a shared project, driven from the shared projects", async () => {
    await query(service, (sql) => sql`UPDATE projects SET shared = true WHERE id = ${sharedProject} RETURNING id`)
    await check("get shared", Effect.flatMap(TaskQueries, (t) => t.getJson(small, sharedTask)), 2)
    await allReads("shared", SHARED_TASKS)
  }, 120_000)

  it("the database really was never analyzed", async () => {
    const rows = await query(service, (sql) =>
      sql<{ analyzed: boolean }>`SELECT (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL) AS analyzed
        FROM pg_stat_user_tables WHERE relname = 'tasks'`)
    expect(rows).toEqual([{ analyzed: false }])
  })
})
