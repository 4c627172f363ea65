import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { TaskId, UserId } from "../src/kernel/Ids.js"
import { Idempotency } from "../src/pipeline/Idempotency.js"
import { Tasks } from "../src/tasks/Tasks.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { type LoggedStatement, STATEMENT_TAG_HEADER, statementLog } from "./support/statements.js"
import { createTask } from "./support/tasks.js"
import { freezeServiceClock } from "./support/frozen-clock.js"
import { outboxEvents, query, undoEntries } from "./support/rows.js"
import { createWebhook, deliveryRows } from "./support/webhooks.js"

/**
 * A single-task write sends few statements. The undo
 * entry, outbox events, deliveries, statistics and change-feed rows go out as one statement
 * at commit, and the answer comes from the write itself (RETURNING the wire JSON). Today's
 * code sent 12 (POST) and 14 (done) statements besides BEGIN and COMMIT.
 * A create: the commit statement alone, which carries the INSERT (it finds the Inbox). An edit or a done:
 * the lock (with the owner's calendar) and the commit statement, which carries the UPDATE
 * (and a done's completion record). The token was verified by an earlier request and is
 * remembered (CredentialCache), so no request after the first spends a statement on it.
 */
const CREATE_STATEMENTS = 1
const EDIT_STATEMENTS = 2

describe("round trips of a single-task write", () => {
  let service: TestService
  let user: TestUser
  const log = statementLog()
  let counter = 0

  beforeAll(async () => {
    service = await startService({}, undefined, log.layer)
    user = await service.user("counted")
    expect((await user.api.get("/api/tasks")).status).toBe(200)
  })
  afterAll(async () => {
    await service.stop()
  })

  /** Sends one request tagged for counting; returns its response and the statements it sent. */
  const counted = async (method: string, path: string, body?: unknown) => {
    const tag = `req-${++counter}`
    const res = await user.api.request(method, path, body, { [STATEMENT_TAG_HEADER]: tag })
    const statements = log.entries.filter((e) => e.tag === tag).map((e) => e.sql.replace(/\s+/g, " ").trim())
    return { res, statements }
  }

  it("POST /api/tasks into the Inbox: the commit statement, carrying the INSERT", async () => {
    const { res, statements } = await counted("POST", "/api/tasks", { title: "Count me", labels: ["x"], priority: 2 })
    expect(res.status).toBe(201)
    expect(res.body.data).toMatchObject({ title: "Count me", labels: ["x"], priority: 2, done: false })
    const inbox = (await user.api.get("/api/projects")).body.data.projects.find((p: { is_inbox: boolean }) => p.is_inbox)
    expect(res.body.data.project_id).toBe(inbox.id)
    expect(statements.length, statements.join("\n")).toBeLessThanOrEqual(CREATE_STATEMENTS)
    // The undo entry holds the values given and what the statement gave the row: its id and Inbox.
    const created = (await undoEntries(service, user.id)).at(-1)!
    expect(created.action).toBe("create")
    expect(created.changes).toHaveLength(1)
    const { after, ...change } = created.changes[0]
    expect(change).toEqual({ op: "insert", table: "tasks", id: res.body.data.id })
    expect(after).toMatchObject({
      id: res.body.data.id,
      user_id: user.id,
      project_id: inbox.id,
      title: "Count me",
      labels: ["x"],
      priority: 2,
      created_at: res.body.data.created_at,
      updated_at: res.body.data.updated_at
    })
    expect(JSON.stringify(after)).not.toContain("@@steady-pending")
    const events = await outboxEvents(service, user.id)
    expect(events.at(-1)).toMatchObject({ event: "task.created", task_id: res.body.data.id, payload: { task: res.body.data } })
  })

  it("PATCH /api/tasks/{id}: the lock and the commit statement", async () => {
    const task = await createTask(user.api, { title: "Patch me" })
    const { res, statements } = await counted("PATCH", `/api/tasks/${task.id}`, { title: "Patched", priority: 3 })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ id: task.id, title: "Patched", priority: 3, fields_changed: ["title", "short_title", "priority"] })
    expect(statements.length, statements.join("\n")).toBeLessThanOrEqual(EDIT_STATEMENTS)
  })

  it("POST /api/tasks/{id}/done on a one-off task: the lock and the commit statement", async () => {
    const task = await createTask(user.api, { title: "Finish me" })
    const { res, statements } = await counted("POST", `/api/tasks/${task.id}/done`)
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ id: task.id, done: true, was_recurring: false, next_due_at: null })
    expect(statements.length, statements.join("\n")).toBeLessThanOrEqual(EDIT_STATEMENTS)
  })

  it("POST /api/tasks/{id}/done on a recurring task: the lock and the commit statement", async () => {
    const task = await createTask(user.api, { title: "Water plants", rrule: "FREQ=DAILY", due_at: "2030-01-01T08:00:00Z" })
    const { res, statements } = await counted("POST", `/api/tasks/${task.id}/done`)
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({
      id: task.id,
      done: false,
      due_at: "2030-01-02T08:00:00.000Z",
      was_recurring: true,
      next_due_at: "2030-01-02T08:00:00.000Z"
    })
    expect(statements.length, statements.join("\n")).toBeLessThanOrEqual(EDIT_STATEMENTS)
  })

  /*
   * A keyed write hands its key to its mutation (`Mutations.runKeyed`), whose commit statement
   * records the answer in a CTE of its own: no statement more than without the key.
   */
  const keyed = async (method: string, path: string, body?: unknown) => {
    const tag = `req-${++counter}`
    const key = `k-${tag}`
    const res = await user.api.request(method, path, body, { [STATEMENT_TAG_HEADER]: tag, "idempotency-key": key })
    const statements = log.entries.filter((e) => e.tag === tag).map((e) => e.sql.replace(/\s+/g, " ").trim())
    const retry = await user.api.request(method, path, body, { "idempotency-key": key })
    expect(retry.headers.get("idempotent-replayed")).toBe("true")
    expect(retry.text).toBe(res.text)
    // Sent with their length, not chunked.
    for (const answer of [res, retry]) expect(answer.headers.get("content-length")).toBe(String(Buffer.byteLength(answer.text)))
    return { res, statements }
  }

  it("keyed POST, PATCH and done: as many statements as unkeyed, and the answer carries the task as GET shows it", async () => {
    const created = await keyed("POST", "/api/tasks", { title: "Keyed", labels: ["k"] })
    expect(created.res.status).toBe(201)
    expect(created.statements.length, created.statements.join("\n")).toBeLessThanOrEqual(CREATE_STATEMENTS)
    const id = created.res.body.data.id
    expect(created.res.body.data).toEqual((await user.api.get(`/api/tasks/${id}`)).body.data)

    const patched = await keyed("PATCH", `/api/tasks/${id}`, { title: "Keyed edit", priority: 1 })
    expect(patched.res.status).toBe(200)
    expect(patched.statements.length, patched.statements.join("\n")).toBeLessThanOrEqual(EDIT_STATEMENTS)
    const { description, fields_changed, ...edited } = patched.res.body.data
    expect(edited).toEqual((await user.api.get(`/api/tasks/${id}`)).body.data)
    expect(fields_changed).toEqual(["title", "short_title", "priority"])
    expect(description).toBe("Edited 'Keyed edit' (title, short_title, priority)")
    expect(patched.res.text).not.toContain("@@steady-pending")

    const done = await keyed("POST", `/api/tasks/${id}/done`)
    expect(done.res.status).toBe(200)
    expect(done.statements.length, done.statements.join("\n")).toBeLessThanOrEqual(EDIT_STATEMENTS)
    const { next_due_at, was_recurring, ...finished } = done.res.body.data
    expect(finished).toEqual((await user.api.get(`/api/tasks/${id}`)).body.data)
    expect(finished).toMatchObject({ done: true, title: "Keyed edit" })
    expect([next_due_at, was_recurring]).toEqual([null, false])
  })

  it("a write inside a keyed request's transaction (Idempotency.run): a statement after it reads the write, and the kept answer is whole", async () => {
    const task = await createTask(user.api, { title: "Before" })
    const { kept, outcome, seen } = await service.run(Effect.gen(function*() {
      const idempotency = yield* Idempotency
      const tasks = yield* Tasks
      const sql = yield* SqlClient.SqlClient
      let seen: ReadonlyArray<{ title: string }> = []
      let kept = ""
      const outcome = yield* idempotency.run(
        { userId: user.id as UserId, key: "flush-me", fingerprint: "f" },
        Effect.gen(function*() {
          const edited = yield* tasks.update({ id: user.id as UserId, username: user.username, timezone: "UTC" }, task.id as TaskId, { title: "After" } as never)
          seen = yield* sql<{ title: string }>`SELECT title FROM tasks WHERE id = ${task.id}`
          return edited
        }),
        (value) => {
          kept = JSON.stringify({ data: value })
          return Effect.succeed({ status: 200, contentType: "application/json", body: kept })
        }
      )
      return { kept, outcome, seen }
    }))
    expect(seen).toEqual([{ title: "After" }])
    expect(outcome._tag).toBe("Ran")
    expect(kept).not.toContain("@@steady-pending")
    const { description: _d, fields_changed, ...sent } = JSON.parse(kept).data
    expect(fields_changed).toEqual(["title", "short_title"])
    expect(sent).toEqual((await user.api.get(`/api/tasks/${task.id}`)).body.data)
    const recorded = await query<{ body: string }>(service, (sql) =>
      sql`SELECT body FROM idempotency_keys WHERE user_id = ${user.id} AND key = 'flush-me'`)
    expect(recorded).toEqual([{ body: kept }])
    const replay = await user.api.request("PATCH", `/api/tasks/${task.id}`, { title: "After" }, { "idempotency-key": "flush-me" })
    expect(replay.status).toBe(422) // another request (method, path, body) under that key
  })

  /*
   * Logging progress on a quota, and done with close_period on one, close the quota's ended
   * periods first (the rollover it owes). Both run as one transaction that locks the task
   * once: every statement of the request in the same transaction, one FOR UPDATE.
   */
  const inOneTransactionLockingOnce = (statements: ReadonlyArray<LoggedStatement>) => {
    const listed = statements.map((s) => s.sql).join("\n")
    expect(statements.filter((s) => /FOR UPDATE/i.test(s.sql)), listed).toHaveLength(1)
    // Outside the transaction only the caller's credentials may be looked up (the clock moved
    // past the remembered verification): nothing reads a task.
    expect(statements.filter((s) => s.transaction === undefined && /\btasks\b/.test(s.sql)), listed).toEqual([])
    expect(new Set(statements.filter((s) => s.transaction !== undefined).map((s) => s.transaction)).size, listed).toBe(1)
  }
  const loggedFor = async (method: string, path: string, body?: unknown) => {
    const tag = `req-${++counter}`
    const res = await user.api.request(method, path, body, { [STATEMENT_TAG_HEADER]: tag })
    return { res, statements: log.entries.filter((e) => e.tag === tag) }
  }

  it("progress and done with close_period on a quota with ended periods: one transaction, one lock of the task", async () => {
    const clock = freezeServiceClock(service)
    try {
      const quota = await createTask(user.api, { title: "Stretch", progress_target: 2, rrule: "FREQ=DAILY" })
      await user.api.post(`/api/tasks/${quota.id}/progress`, { delta: 2 })
      clock.advance(3 * 24 * 3_600_000)
      const logged = await loggedFor("POST", `/api/tasks/${quota.id}/progress`, { delta: 1 })
      expect(logged.res.status, logged.res.text).toBe(200)
      expect(logged.res.body.data).toMatchObject({ progress_current: 1, met: false, completion_count: 1 })
      inOneTransactionLockingOnce(logged.statements)
      // The periods it closed first are the rollover's: not in the progress's undo entry.
      const periods = await query<{ count: number; met: boolean }>(service, (sql) =>
        sql`SELECT count, met FROM quota_periods WHERE task_id = ${quota.id} ORDER BY period_start`)
      expect(periods.map((p) => [p.count, p.met])).toEqual([[2, true], [0, false], [0, false]])
      const progressEntry = (await undoEntries(service, user.id)).at(-1)!
      expect(progressEntry.action).toBe("progress")
      expect(progressEntry.changes.map((c: { table: string; op: string }) => `${c.op} ${c.table}`)).toEqual(["update tasks"])

      clock.advance(24 * 3_600_000)
      const closed = await loggedFor("POST", `/api/tasks/${quota.id}/done`, { close_period: true })
      expect(closed.res.status, closed.res.text).toBe(200)
      expect(closed.res.body.data).toMatchObject({ progress_current: 0, was_recurring: false, next_due_at: null })
      inOneTransactionLockingOnce(closed.statements)
      const after = await query<{ count: number; closed_early: boolean }>(service, (sql) =>
        sql`SELECT count, closed_early FROM quota_periods WHERE task_id = ${quota.id} ORDER BY period_start, closed_at`)
      expect(after.map((p) => [p.count, p.closed_early])).toEqual([[2, false], [0, false], [0, false], [1, false], [0, true]])
      const doneEntry = (await undoEntries(service, user.id)).at(-1)!
      expect(doneEntry.action).toBe("done")
      expect(doneEntry.changes.map((c: { table: string; op: string }) => `${c.op} ${c.table}`)).toEqual([
        "insert quota_periods",
        "update tasks"
      ])
    } finally {
      clock.restore()
    }
  })

  it("GET /api/tasks/{id} with a token verified before: one statement, no token lookup", async () => {
    const task = (await user.api.post("/api/tasks", { title: "Read me" })).body.data
    const { res, statements } = await counted("GET", `/api/tasks/${task.id}`)
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ id: task.id, title: "Read me" })
    expect(statements, statements.join("\n")).toHaveLength(1)
    expect(statements[0]).not.toMatch(/api_tokens/)
  })

  it("writes with no webhook do not wake the webhook dispatcher: it only polls", async () => {
    const isClaim = (e: LoggedStatement) => e.tag === undefined && e.sql.includes("WITH RECURSIVE waiting")
    const before = log.entries.filter(isClaim).length
    const started = Date.now()
    for (let n = 0; n < 20; n++) await createTask(user.api, { title: `Quiet ${n}` })
    const seconds = (Date.now() - started) / 1000
    const claims = log.entries.filter(isClaim).length - before
    // One poll a second (WEBHOOK_POLL), plus one in progress when the writes began.
    expect(claims).toBeLessThanOrEqual(Math.ceil(seconds) + 1)
  })

  it("the UPDATE sent with the commit statement: frozen bodies, outbox payloads and the answer carry the task as GET shows it", async () => {
    const owner = await service.user("hooked")
    // A closed port: the deliveries stay in the table whatever their attempts do.
    const hook = await createWebhook(owner.api, "http://127.0.0.1:9/hook", ["task.updated", "task.completed"])
    const task = await createTask(owner.api, { title: "Hook me" })

    const patched = await owner.api.patch(`/api/tasks/${task.id}`, { title: "Hooked", labels: ["a"] })
    expect(patched.status).toBe(200)
    const afterPatch = (await owner.api.get(`/api/tasks/${task.id}`)).body.data
    const { description, fields_changed, ...answer } = patched.body.data
    expect(answer).toEqual(afterPatch)
    expect(fields_changed).toEqual(["title", "short_title", "labels"])
    expect(description).toBe("Edited 'Hooked' (title, short_title, labels)")

    const done = await owner.api.post(`/api/tasks/${task.id}/done`)
    expect(done.status).toBe(200)
    const afterDone = (await owner.api.get(`/api/tasks/${task.id}`)).body.data
    const { next_due_at: _n, was_recurring: _w, ...doneAnswer } = done.body.data
    expect(doneAnswer).toEqual(afterDone)

    const rows = await deliveryRows(service, hook.id)
    expect(rows.map((r) => r.event)).toEqual(["task.updated", "task.completed"])
    for (const row of rows) expect(row.body).not.toContain("@@steady-pending")
    const [updated, completed] = rows.map((r) => JSON.parse(r.body))
    expect(updated).toEqual({
      event: "task.updated",
      timestamp: afterPatch.updated_at,
      data: { task: afterPatch, fields_changed: ["title", "short_title", "labels"] }
    })
    expect(completed).toEqual({ event: "task.completed", timestamp: afterDone.updated_at, data: { task: afterDone } })
    expect((await outboxEvents(service, owner.id)).map((e) => [e.event, e.task_id, e.payload])).toEqual([
      ["task.created", task.id, { task }],
      ["task.updated", task.id, updated.data],
      ["task.completed", task.id, completed.data]
    ])
    // Stored as the text the statement built (migration 0038): compact, as JSON.stringify writes it.
    const stored = await query(service, (sql) =>
      sql<{ payload: string }>`SELECT payload FROM outbox_events WHERE user_id = ${owner.id} ORDER BY id`)
    expect(stored.map((r) => typeof r.payload)).toEqual(["string", "string", "string"])
    for (const { payload } of stored) expect(payload).toBe(JSON.stringify(JSON.parse(payload)))
    expect(stored[1]!.payload).toBe(JSON.stringify(updated.data))

    // The done's undo entry holds the completion record with the id the statement gave it.
    const undo = await undoEntries(service, owner.id)
    const last = undo.at(-1)!
    expect(last.action).toBe("done")
    const insert = last.changes.find((c: { table: string }) => c.table === "completions")!
    expect(insert).toMatchObject({ op: "insert", table: "completions", id: expect.any(Number) })
    expect(insert.after).toMatchObject({ id: insert.id, task_id: task.id, task_title: "Hooked", completed_at: afterDone.done_at })
    // And undo takes it all back.
    expect((await owner.api.post("/api/undo")).status).toBe(200)
    expect((await owner.api.get(`/api/tasks/${task.id}`)).body.data).toMatchObject({ done: false, title: "Hooked" })
  })
})
