import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { type LoggedStatement, STATEMENT_TAG_HEADER, statementLog } from "./support/statements.js"
import { createTask } from "./support/tasks.js"

/**
 * Issue 12 item 5 / issue 17 item 5: a single-task write sends few statements. The undo
 * entry, outbox events, deliveries, statistics and change-feed rows go out as one statement
 * at commit, and the answer comes from the write itself (RETURNING the wire JSON). Today's
 * code sent 12 (POST) and 14 (done) statements besides BEGIN and COMMIT.
 * A create: the token lookup, the INSERT (which finds the Inbox) and the commit statement.
 * An edit or a done: the token lookup, the lock (with the owner's calendar), the UPDATE (a
 * done's completion record inserted by the same statement) and the commit statement.
 */
const CREATE_STATEMENTS = 3
const EDIT_STATEMENTS = 4

describe("round trips of a single-task write", () => {
  let service: TestService
  let user: TestUser
  const log = statementLog()
  let counter = 0

  beforeAll(async () => {
    service = await startService({}, undefined, log.layer)
    user = await service.user("counted")
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

  it("POST /api/tasks into the Inbox: the token lookup, the INSERT and the commit statement", async () => {
    const { res, statements } = await counted("POST", "/api/tasks", { title: "Count me", labels: ["x"], priority: 2 })
    expect(res.status).toBe(201)
    expect(res.body.data).toMatchObject({ title: "Count me", labels: ["x"], priority: 2, done: false })
    const inbox = (await user.api.get("/api/projects")).body.data.projects.find((p: { is_inbox: boolean }) => p.is_inbox)
    expect(res.body.data.project_id).toBe(inbox.id)
    expect(statements.length, statements.join("\n")).toBeLessThanOrEqual(CREATE_STATEMENTS)
  })

  it("PATCH /api/tasks/{id}: the token lookup, the lock, the UPDATE and the commit statement", async () => {
    const task = await createTask(user.api, { title: "Patch me" })
    const { res, statements } = await counted("PATCH", `/api/tasks/${task.id}`, { title: "Patched", priority: 3 })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ id: task.id, title: "Patched", priority: 3, fields_changed: ["title", "short_title", "priority"] })
    expect(statements.length, statements.join("\n")).toBeLessThanOrEqual(EDIT_STATEMENTS)
  })

  it("POST /api/tasks/{id}/done on a one-off task: the token lookup, the lock, the UPDATE and the commit statement", async () => {
    const task = await createTask(user.api, { title: "Finish me" })
    const { res, statements } = await counted("POST", `/api/tasks/${task.id}/done`)
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ id: task.id, done: true, was_recurring: false, next_due_at: null })
    expect(statements.length, statements.join("\n")).toBeLessThanOrEqual(EDIT_STATEMENTS)
  })

  it("POST /api/tasks/{id}/done on a recurring task: the token lookup, the lock, the UPDATE and the commit statement", async () => {
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
})
