import * as Fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { query } from "./support/rows.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask } from "./support/tasks.js"

/**
 * Tasks render by concatenating their columns (`steady_task_wire_of`, stored
 * as `tasks.wire_text` since migration 0022) instead of row_to_json over a declared row type. The old
 * rendering is recreated here from migrations 0002 and 0008 under another name, and every
 * task, list page and single read must come out as its text, compact (migration 0033: no
 * spacing from PostgreSQL's JSON text).
 */

/** The old rendering's text as the wire now writes it: json_build_object's spacing dropped. */
const compact = (text: string) => JSON.stringify(JSON.parse(text))

const oldRendering = (): Array<string> => {
  const read = (file: string) => Fs.readFileSync(Path.join(import.meta.dirname, "..", "migrations", file), "utf8")
  const type = read("0002_wire_speed.sql").match(/CREATE TYPE steady_task_wire_row AS \([\s\S]*?\n\);/)![0]
  const fn = read("0008_ai.sql").match(/CREATE OR REPLACE FUNCTION steady_task_wire\(t tasks\)[\s\S]*?END \$\$;/)![0]
  return [type.replace(/\n\);$/, ",\n  enrichment_status text\n);"), fn]
    .map((s) => s.replaceAll("steady_task_wire_row", "old_wire_row").replace("steady_task_wire(", "old_task_wire("))
}

describe("task rendering", () => {
  let service: TestService
  let user: TestUser

  beforeAll(async () => {
    service = await startService()
    user = await service.user("renderer")
    for (const statement of oldRendering()) await query(service, (sql) => sql.unsafe(statement))
    await createTask(user.api, { title: "plain", due_at: "2026-11-01T12:00:00.000Z" })
    await createTask(user.api, {
      title: "quote \" backslash \\ newline \n tab \t bell \u0007 é ✓ 😀",
      notes: "</script> \u2028 line separator",
      labels: ["home", "a \"quoted\" label"],
      due_at: "2026-11-02T08:30:00.120Z",
      rrule: "FREQ=WEEKLY;BYDAY=MO",
      priority: 4
    })
    const full = await createTask(user.api, { title: "every field", due_at: "2026-11-03T00:00:00.001Z" })
    // Every nullable field set, timestamps with microseconds (cut to milliseconds on the wire).
    await query(service, (sql) =>
      sql`UPDATE tasks SET done_at = '2026-11-03T10:11:12.345678Z', original_due_at = '2026-10-30T00:00:00.999999Z',
            target_at = '2026-11-05T00:00:00Z', deadline_at = '2026-11-09T23:59:59.999Z', horizon = 'week',
            horizon_set_at = now(), last_considered_at = now(), segment_deferred_at = now(), segment_targeted_at = now(),
            target_set_at = now(), occurrence_at = now(), deleted_at = now(), archived_at = now(), anchor_time = '07:30',
            progress_period_start = now(), quota_prompt_config = '{"slots": [1, 2], "note": "x"}'::jsonb,
            first_completed_at = now(), last_completed_at = now(), enrichment_status = 'done', snooze_count = 2,
            is_tracked = true, is_reminder = true, progress_target = 3
          WHERE id = ${full.id} RETURNING id`)
  })
  afterAll(async () => {
    await service?.stop()
  })

  it("renders each task as the same text as the row_to_json rendering", async () => {
    const rows = await query<{ id: number; text: string; json: string; old: string }>(service, (sql) =>
      sql`SELECT t.id, steady_task_wire_text(t) AS text, steady_task_wire(t)::text AS json, old_task_wire(t)::text AS old
          FROM tasks t WHERE t.user_id = ${user.id} ORDER BY t.id`)
    expect(rows.map((r) => [r.text === compact(r.old), r.json === r.text])).toEqual([[true, true], [true, true], [true, true]])
    // Compact to the byte: jsonb's spacing is gone from labels and the quota objects (migration 0033).
    // Outside its strings, no whitespace at all.
    expect(rows.map((r) => /\s/.test(r.text.replace(/"(?:[^"\\]|\\.)*"/g, '""')))).toEqual([false, false, false])
    const full = JSON.parse(rows[2]!.text)
    expect(full).toMatchObject({
      done_at: "2026-11-03T10:11:12.345Z",
      original_due_at: "2026-10-30T00:00:00.999Z",
      deadline_at: "2026-11-09T23:59:59.999Z",
      quota_prompt_config: { slots: [1, 2], note: "x" },
      enrichment_status: "done",
      snooze_count: 2,
      is_snoozed: true
    })
    expect(JSON.parse(rows[1]!.text).title).toBe("quote \" backslash \\ newline \n tab \t bell \u0007 é ✓ 😀")
  })

  it("answers list pages, the trash and single reads with the old rendering's text, compact", async () => {
    const [expected] = await query<{ list: string; trash: string }>(service, (sql) =>
      sql`SELECT
            (SELECT json_build_object('data', json_build_object(
               'tasks', COALESCE(json_agg(old_task_wire(t) ORDER BY t.due_at, t.id), '[]'::json), 'count', count(*)::int))::text
             FROM tasks t WHERE t.user_id = ${user.id} AND NOT t.done AND t.deleted_at IS NULL AND t.archived_at IS NULL) AS list,
            (SELECT json_build_object('data', json_build_object(
               'tasks', COALESCE(json_agg(old_task_wire(t) ORDER BY t.deleted_at DESC, t.id DESC), '[]'::json), 'count', count(*)::int))::text
             FROM tasks t WHERE t.user_id = ${user.id} AND t.deleted_at IS NOT NULL) AS trash`)
    const list = await user.api.get("/api/tasks")
    expect(list.body.data.count).toBe(2)
    expect(list.text).toBe(compact(expected!.list))
    const trash = await user.api.get("/api/trash")
    expect(trash.body.data.count).toBe(1)
    expect(trash.text).toBe(compact(expected!.trash))
    const empty = await (await service.user("renderer-empty")).api.get("/api/tasks")
    expect(empty.text).toBe(`{"data":{"tasks":[],"count":0}}`)

    const ids = await query<{ id: number; old: string }>(service, (sql) =>
      sql`SELECT t.id, json_build_object('data', old_task_wire(t))::text AS old FROM tasks t
          WHERE t.user_id = ${user.id} AND t.deleted_at IS NULL ORDER BY t.id`)
    for (const { id, old } of ids) expect((await user.api.get(`/api/tasks/${id}`)).text).toBe(compact(old))
  })

  // Migration 0022: the wire text is a stored generated column. PostgreSQL computes it on every
  // write, so it follows a change made by any path, and nothing can write a stale one.
  it("stores the wire text with the row: it follows every write and cannot be set", async () => {
    const task = await createTask(user.api, { title: "stored", due_at: "2026-11-04T09:00:00.000Z" })
    expect((await user.api.patch(`/api/tasks/${task.id}`, { title: "stored, then edited", labels: ["x"] })).status).toBe(200)
    await query(service, (sql) => sql`UPDATE tasks SET priority = 2 WHERE id = ${task.id}`)
    const [row] = await query<{ stored: string; old: string }>(service, (sql) =>
      sql`SELECT t.wire_text AS stored, old_task_wire(t)::text AS old FROM tasks t WHERE t.id = ${task.id}`)
    expect(row!.stored).toBe(compact(row!.old))
    expect(JSON.parse(row!.stored)).toMatchObject({ title: "stored, then edited", labels: ["x"], priority: 2 })
    await expect(query(service, (sql) => sql`UPDATE tasks SET wire_text = '{}' WHERE id = ${task.id}`)).rejects.toThrow()
    expect((await user.api.get(`/api/tasks/${task.id}`)).body.data.priority).toBe(2)
  })
  // Issue 39: no spacing from PostgreSQL's JSON text in any answer, including those rendered in
  // the database (lists, the trash, quotas, completions, the export's projects and completions).
  it("answers compact JSON: no whitespace outside strings", async () => {
    const writer = await service.user("compact")
    const task = await createTask(writer.api, { title: "a b", labels: ["x", "y z"], due_at: "2026-11-01T09:00:00Z", rrule: "FREQ=DAILY" })
    expect((await writer.api.post(`/api/tasks/${task.id}/done`, {})).status).toBe(200)
    expect((await writer.api.post("/api/tasks", { title: "quota", progress_target: 3, rrule: "FREQ=WEEKLY" })).status).toBe(201)
    const spaced: Array<string> = []
    for (const path of ["/api/tasks", `/api/tasks/${task.id}`, "/api/trash", "/api/quotas", "/api/completions", "/api/projects", "/api/export?format=json"]) {
      const res = await writer.api.get(path)
      expect(res.status, path).toBe(200)
      if (/\s/.test(res.text.replace(/"(?:[^"\\]|\\.)*"/g, '""'))) spaced.push(path)
    }
    expect(spaced).toEqual([])
  })
})
