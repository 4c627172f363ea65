import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option, ParseResult, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CompletionRow, ProjectRow, QuotaPeriodRow, TaskRow, TimeSlotRow } from "../src/pipeline/Rows.js"
import { Task } from "../src/tasks/Task.js"
import {
  CompletionsTable,
  decodeRow,
  ProjectsTable,
  QuotaPeriodsTable,
  rowJsonSql,
  type TableRow,
  type TableSpec,
  TasksTable,
  TimeSlotsTable
} from "../src/pipeline/Tables.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, TASK_FIELDS } from "./support/tasks.js"

/*
 * The task wire object is rendered by PostgreSQL (`steady_task_wire_text`,
 * migration 0014) and declared by the `Task` schema the OpenAPI document is built from.
 * This holds the two together: varied tasks (quota, recurring, snoozed, in a shared project,
 * trashed) are read back through every path that renders them and decoded with `Task`,
 * excess keys refused.
 */

const NOW = new Date("2026-06-10T09:00:00Z")
const decodeTask = Schema.decodeUnknownEither(Task, { onExcessProperty: "error" })

const expectTaskShape = (value: unknown) => {
  const decoded = decodeTask(value)
  if (decoded._tag === "Left") throw new Error(`not a Task: ${ParseResult.TreeFormatter.formatErrorSync(decoded.left)}\n${JSON.stringify(value)}`)
  // Every field, none twice (the order of keys carries no meaning in JSON, and a create's
  // answer comes from jsonb, which orders them its own way).
  expect(Object.keys(value as object).sort()).toEqual([...TASK_FIELDS].sort())
}

describe("what the database renders is what the Task schema declares", () => {
  let service: TestService
  let alice: TestUser
  let bob: TestUser
  const ids: Array<number> = []

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
    alice = await service.user("wire-alice", "America/New_York")
    bob = await service.user("wire-bob", "Europe/Berlin")
    const shared = (await bob.api.post("/api/projects", { name: "Household", shared: true })).body.data.id
    const made = [
      await createTask(alice.api, { title: "Plain" }),
      await createTask(alice.api, { title: "Dated, labelled", due_at: "2026-06-11T14:00:00Z", labels: ["a", "b"], priority: 4, notes: "x\ny \"q\" \u00e9" }),
      await createTask(alice.api, { title: "Recurring", rrule: "FREQ=WEEKLY;BYDAY=MO,WE", due_at: "2026-06-10T13:00:00Z" }),
      await createTask(alice.api, { title: "Quota", progress_target: 3, rrule: "FREQ=DAILY" }),
      await createTask(alice.api, { title: "Snoozed", due_at: "2026-06-10T10:00:00Z" }),
      await createTask(bob.api, { title: "Shared chore", project_id: shared, due_at: "2026-06-12T08:00:00Z" }),
      await createTask(alice.api, { title: "Trashed" })
    ]
    ids.push(...made.map((t) => t.id as number))
    expect((await alice.api.post(`/api/tasks/${ids[4]}/snooze`, { until: "2026-06-11T10:00:00Z" })).status).toBe(200)
    expect((await alice.api.post(`/api/tasks/${ids[1]}/done`)).status).toBe(200)
    expect((await alice.api.post(`/api/tasks/${ids[2]}/done`)).status).toBe(200)
    expect((await alice.api.delete(`/api/tasks/${ids[6]}`)).status).toBe(200)
  })
  afterAll(async () => {
    await service.stop()
  })

  it("GET /api/tasks/{id}: every kind of task", async () => {
    for (const [n, id] of ids.entries()) {
      const owner = n === 5 ? bob : alice
      const res = await owner.api.get(`/api/tasks/${id}`)
      expect(res.status, `task ${id}`).toBe(200)
      expectTaskShape(res.body.data)
    }
  })

  it("lists, the trash, writes' answers and the change feed render the same shape", async () => {
    const list = (await alice.api.get("/api/tasks?limit=50")).body.data.tasks as Array<unknown>
    expect(list.length).toBeGreaterThanOrEqual(5)
    list.forEach(expectTaskShape)
    const trash = (await alice.api.get("/api/trash")).body.data.tasks as Array<unknown>
    expect(trash).toHaveLength(1)
    trash.forEach(expectTaskShape)
    // A PATCH answers the task followed by what it changed (spec §4.2).
    const { description, fields_changed, ...patched } = (await alice.api.patch(`/api/tasks/${ids[0]}`, { title: "Renamed" })).body.data
    expect(fields_changed).toEqual(["title", "short_title"])
    expect(description).toEqual(expect.any(String))
    expectTaskShape(patched)
    expectTaskShape((await alice.api.post("/api/tasks", { title: "Fresh" })).body.data)
    const changes = (await alice.api.get("/api/changes?limit=100")).body.data.changes as Array<{ kind: string; data: unknown }>
    const tasks = changes.filter((c) => c.kind === "task" && c.data !== null)
    expect(tasks.length).toBeGreaterThan(0)
    tasks.forEach((c) => expectTaskShape(c.data))
  })
})

/*
 * The rows the mutation pipeline locks and writes are typed by the row
 * schemas of `pipeline/Rows.ts`, and decoded by `decodeRow` (column kinds, no schema work per
 * row). This holds the decoder, the table specs and the schemas together over real rows.
 */
describe("the pipeline's rows are what the row schemas declare", () => {
  let service: TestService
  const tables: ReadonlyArray<readonly [TableSpec<TableRow>, Schema.Schema<any>]> = [
    [TasksTable, TaskRow],
    [ProjectsTable, ProjectRow],
    [TimeSlotsTable, TimeSlotRow],
    [CompletionsTable, CompletionRow],
    [QuotaPeriodsTable, QuotaPeriodRow]
  ]

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
    const carol = await service.user("rows-carol", "Australia/Lord_Howe")
    const dave = await service.user("rows-dave", "America/Sao_Paulo")
    const shared = (await dave.api.post("/api/projects", { name: "Shared", shared: true, color: "#123456" })).body.data.id
    const quota = await createTask(carol.api, {
      title: "Stretch",
      progress_target: 3,
      rrule: "FREQ=DAILY",
      quota_prompt_config: { enabled: true, numbers: { "1": 1 } }
    })
    const recurring = await createTask(carol.api, {
      title: "Bins, \"out\"",
      rrule: "FREQ=WEEKLY;BYDAY=TU",
      due_at: "2026-06-09T09:30:00Z",
      deadline_at: "2026-07-01T00:00:00Z",
      horizon: "week",
      labels: ["home", "é"]
    })
    const snoozed = await createTask(carol.api, { title: "Call", due_at: "2026-06-10T08:00:00Z", priority: 3 })
    const trashed = await createTask(carol.api, { title: "Old" })
    await createTask(dave.api, { title: "Shared chore", project_id: shared, is_reminder: true, due_at: "2026-06-11T07:00:00Z" })
    expect((await carol.api.post(`/api/tasks/${quota.id}/progress`, { delta: 3 })).status).toBe(200)
    expect((await carol.api.post(`/api/tasks/${quota.id}/done`, { close_period: true })).status).toBe(200)
    expect((await carol.api.post(`/api/tasks/${recurring.id}/done`)).status).toBe(200)
    expect((await carol.api.post(`/api/tasks/${snoozed.id}/snooze`, { until: "2026-06-12T08:00:00Z" })).status).toBe(200)
    expect((await carol.api.delete(`/api/tasks/${trashed.id}`)).status).toBe(200)
    expect((await carol.api.post("/api/time-slots", { label: "Late", start_time: "22:15" })).status).toBe(201)
  })
  afterAll(async () => {
    await service.stop()
  })

  it("each table spec lists exactly its schema's columns", () => {
    for (const [table, schema] of tables) {
      const fields = Object.keys((schema as unknown as { fields: object }).fields).sort()
      expect(["id", ...Object.keys(table.columns)].sort(), table.name).toEqual(fields)
    }
  })

  it("every stored row, decoded as the pipeline decodes it, is accepted by its row schema", async () => {
    for (const [table, schema] of tables) {
      const raws = await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql.unsafe<{ row: Record<string, unknown> }>(`SELECT ${rowJsonSql(table, "t")} AS row FROM ${table.name} t ORDER BY id`)))
      expect(raws.length, table.name).toBeGreaterThan(0)
      for (const { row } of raws) {
        const decoded = decodeRow(table, row)
        const checked = Schema.decodeUnknownEither(schema, { onExcessProperty: "error" })(decoded)
        if (checked._tag === "Left") {
          throw new Error(`${table.name}: ${ParseResult.TreeFormatter.formatErrorSync(checked.left)}\n${JSON.stringify(decoded)}`)
        }
        expect(checked.right, table.name).toEqual(decoded)
      }
    }
  })

  it("timestamps decode to toISOString text, whatever PostgreSQL's own format", () => {
    const row = decodeRow(QuotaPeriodsTable, {
      id: 1,
      task_id: 2,
      user_id: 3,
      period_start: "2026-06-10T00:00:00+00:00",
      period_end: "2026-06-10T23:59:59.5+02:00",
      count: 1,
      target: 2,
      met: false,
      closed_at: "2026-06-11T00:00:00.123456+00:00",
      closed_early: false
    })
    expect([row.period_start, row.period_end, row.closed_at]).toEqual([
      "2026-06-10T00:00:00.000Z",
      "2026-06-10T21:59:59.500Z",
      "2026-06-11T00:00:00.123Z"
    ])
  })
})
