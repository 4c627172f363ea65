import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { RECENT_ROWS, RecentRows } from "../src/pipeline/RecentRows.js"
import { decodeRow, taskRowJson, TasksTable } from "../src/pipeline/Tables.js"
import type { TaskRow } from "../src/pipeline/Rows.js"
import { startService, type TestService } from "./support/service.js"

/*
 * An edit of a task this process wrote last starts from the row that write returned
 * (`RecentRows`) instead of reading it. These tests change rows behind the process's back
 * (plain SQL, as another instance on the same database would) and check that every edit
 * still acts on the row, the calendar and the access as they are now.
 */
describe("edits that start from the row this process wrote last", () => {
  let service: TestService
  beforeAll(async () => {
    service = await startService()
  })
  afterAll(() => service.stop())

  const sqlRun = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
    service.run(Effect.flatMap(SqlClient.SqlClient, f))
  const kept = (id: number) => service.run(Effect.map(RecentRows, (rows) => rows.get<TaskRow, unknown>(TasksTable, id)))
  /** The row and version as the database has them now. */
  const stored = (id: number) =>
    sqlRun((sql) => sql<{ row: Record<string, unknown>; version: string }>`
      SELECT ${sql.literal(taskRowJson)} AS row, t.xmin::text AS version FROM tasks t WHERE t.id = ${id}`).then(([found]) => ({
        row: decodeRow(TasksTable, found!.row),
        version: found!.version
      }))

  it("keeps the row exactly as the database has it after the edit, triggers' columns included", async () => {
    const user = await service.user("recent-exact")
    const id = (await user.api.post("/api/tasks", { title: "Feed the cat", due_at: "2027-01-04T09:00:00.000Z", rrule: "FREQ=DAILY" }))
      .body.data.id as number
    expect(await kept(id)).toBeUndefined()
    // A reminder the sweep stopped: moving its due date clears the mark, in a trigger.
    await sqlRun((sql) => sql`UPDATE tasks SET roll_stopped_at = now() WHERE id = ${id}`)
    const res = await user.api.patch(`/api/tasks/${id}`, { due_at: "2027-01-05T09:00:00.000Z", priority: 2, labels: ["home"] })
    expect(res.status).toBe(200)
    const now = await stored(id)
    expect(now.row.roll_stopped_at).toBeNull()
    expect(await kept(id)).toEqual({ row: now.row, version: now.version, extra: { zone: "UTC", weekStart: "sunday" } })
    // And again from the kept row.
    expect((await user.api.patch(`/api/tasks/${id}`, { notes: "Wet food", title: "Feed the cats" })).status).toBe(200)
    const again = await stored(id)
    expect(again.row).toMatchObject({ notes: "Wet food", title: "Feed the cats", priority: 2 })
    expect(await kept(id)).toEqual({ row: again.row, version: again.version, extra: { zone: "UTC", weekStart: "sunday" } })
  })

  it("keeps the enrichment baseline the trigger of a pending enrichment sets", async () => {
    const user = await service.user("recent-baseline")
    const id = (await user.api.post("/api/tasks", { title: "Call the bank" })).body.data.id as number
    await sqlRun((sql) => sql`UPDATE tasks SET enrichment_status = 'pending', enrichment_baseline = NULL WHERE id = ${id}`)
    expect((await user.api.patch(`/api/tasks/${id}`, { priority: 3 })).status).toBe(200)
    const first = await stored(id)
    expect(first.row.enrichment_baseline).not.toBeNull()
    expect(await kept(id)).toEqual({ row: first.row, version: first.version, extra: { zone: "UTC", weekStart: "sunday" } })
    // The next edit starts from the kept row, baseline included, and keeps the new one exactly.
    expect((await user.api.patch(`/api/tasks/${id}`, { title: "Call the bank at 9" })).status).toBe(200)
    const second = await stored(id)
    expect(second.row).toMatchObject({ title: "Call the bank at 9", priority: 3, enrichment_baseline: first.row.enrichment_baseline })
    expect(await kept(id)).toEqual({ row: second.row, version: second.version, extra: { zone: "UTC", weekStart: "sunday" } })
  })

  it("the tasks table's BEFORE UPDATE triggers are the ones whose columns a kept row takes from the UPDATE", async () => {
    // A new trigger that sets a column must add it to TasksTable.triggerSet, or kept rows
    // would miss what it set. tgtype bits: 2 BEFORE, 16 UPDATE.
    const triggers = await sqlRun((sql) => sql<{ name: string }>`
      SELECT tgname AS name FROM pg_trigger
      WHERE tgrelid = 'tasks'::regclass AND NOT tgisinternal AND (tgtype & 2) <> 0 AND (tgtype & 16) <> 0
      ORDER BY tgname`)
    expect(triggers.map((t) => t.name)).toEqual(["tasks_keep_enrichment_baseline", "tasks_resume_reminder_roll"])
    expect(TasksTable.triggerSet).toEqual(["enrichment_baseline", "roll_stopped_at"])
  })

  it("a row changed elsewhere since is read again: the edit diffs against it and undo restores it", async () => {
    const user = await service.user("recent-moved")
    const id = (await user.api.post("/api/tasks", { title: "Water the plants", priority: 1 })).body.data.id as number
    expect((await user.api.patch(`/api/tasks/${id}`, { priority: 2 })).status).toBe(200)
    expect((await kept(id))?.row.priority).toBe(2)
    await sqlRun((sql) => sql`UPDATE tasks SET priority = 3, title = 'Water the ferns' WHERE id = ${id}`)
    // Asks for what the row holds now: nothing changes (the kept row said priority 2).
    const same = await user.api.patch(`/api/tasks/${id}`, { priority: 3 })
    expect({ status: same.status, fields: same.body.data.fields_changed, description: same.body.data.description })
      .toEqual({ status: 200, fields: [], description: "No changes to 'Water the ferns'" })
    const edit = await user.api.patch(`/api/tasks/${id}`, { priority: 4 })
    expect({ title: edit.body.data.title, priority: edit.body.data.priority, fields: edit.body.data.fields_changed })
      .toEqual({ title: "Water the ferns", priority: 4, fields: ["priority"] })
    expect((await user.api.post("/api/undo")).status).toBe(200)
    expect((await user.api.get(`/api/tasks/${id}`)).body.data).toMatchObject({ title: "Water the ferns", priority: 3 })
  })

  it("a new time zone since the row was kept: the edit reckons on it", async () => {
    const user = await service.user("recent-zone", "Europe/Berlin")
    const id = (await user.api.post("/api/tasks", { title: "Stand-up" })).body.data.id as number
    expect((await user.api.patch(`/api/tasks/${id}`, { priority: 1 })).status).toBe(200)
    expect((await kept(id))?.extra).toEqual({ zone: "Europe/Berlin", weekStart: "sunday" })
    // Another instance's write of the user's zone: the task row stays as kept.
    await sqlRun((sql) => sql`UPDATE users SET timezone = 'America/New_York' WHERE id = ${user.id}`)
    const res = await user.api.patch(`/api/tasks/${id}`, { due_at: "2027-01-04T09:00:00.000Z" })
    expect({ status: res.status, anchor_time: res.body.data.anchor_time }).toEqual({ status: 200, anchor_time: "04:00" })
    // Through the API as well.
    expect((await user.api.patch("/api/user/preferences", { timezone: "Asia/Tokyo" })).status).toBe(200)
    const tokyo = await user.api.patch(`/api/tasks/${id}`, { due_at: "2027-01-05T09:00:00.000Z" })
    expect(tokyo.body.data.anchor_time).toBe("18:00")
  })

  it("another user's edit through a shared project reads, so unsharing it ends their access", async () => {
    const owner = await service.user("recent-owner")
    const other = await service.user("recent-other")
    const project = (await owner.api.post("/api/projects", { name: "Porch", shared: true })).body.data.id as number
    const id = (await owner.api.post("/api/tasks", { title: "Sweep the porch", project_id: project })).body.data.id as number
    expect((await owner.api.patch(`/api/tasks/${id}`, { priority: 1 })).status).toBe(200)
    expect((await other.api.patch(`/api/tasks/${id}`, { priority: 2 })).status).toBe(200)
    expect((await kept(id))?.row.priority).toBe(2)
    expect((await owner.api.patch(`/api/projects/${project}`, { shared: false })).status).toBe(200)
    const refused = await other.api.patch(`/api/tasks/${id}`, { priority: 3 })
    expect({ status: refused.status, body: refused.body }).toEqual({
      status: 404,
      body: { error: "Task not found", code: "NOT_FOUND", details: {} }
    })
    expect((await owner.api.get(`/api/tasks/${id}`)).body.data.priority).toBe(2)
  })

  it("a row another write of this process changes is dropped", async () => {
    const user = await service.user("recent-dropped")
    const id = (await user.api.post("/api/tasks", { title: "Pay rent", priority: 1 })).body.data.id as number
    expect((await user.api.patch(`/api/tasks/${id}`, { priority: 2 })).status).toBe(200)
    expect(await kept(id)).toBeDefined()
    expect((await user.api.post(`/api/tasks/${id}/done`)).status).toBe(200)
    expect(await kept(id)).toBeUndefined()
    const res = await user.api.patch(`/api/tasks/${id}`, { priority: 3 })
    expect({ status: res.status, done: res.body.data.done, priority: res.body.data.priority }).toEqual({ status: 200, done: true, priority: 3 })
  })
})

describe("RecentRows", () => {
  it("keeps at most RECENT_ROWS rows, dropping the least recently written or used", async () => {
    const rows = await Effect.runPromise(Effect.provide(RecentRows, RecentRows.Default))
    const keep = (id: number) => rows.put(TasksTable, id, { row: { id } as never, version: String(id), extra: undefined })
    for (let id = 1; id <= RECENT_ROWS; id++) keep(id)
    expect(rows.get(TasksTable, 1)?.version).toBe("1")
    keep(RECENT_ROWS + 1)
    expect({ size: rows.size(), first: rows.get(TasksTable, 1)?.version, second: rows.get(TasksTable, 2) })
      .toEqual({ size: RECENT_ROWS, first: "1", second: undefined })
    rows.drop("tasks", 1)
    expect(rows.get(TasksTable, 1)).toBeUndefined()
  })
})
