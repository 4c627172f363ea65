import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { snapshot } from "./support/rows.js"
import { type Response, startService, type TestService, type TestUser } from "./support/service.js"
import { createTask } from "./support/tasks.js"

const TOO_LONG_TITLE = "t".repeat(10_001)
const LABELS_51 = Array.from({ length: 51 }, (_, i) => `label-${i}`)
const LONG_LABEL = "l".repeat(101)
const ONE_MIB = 1024 * 1024

describe("bad input is refused with the error envelope and changes nothing", () => {
  let service: TestService
  let user: TestUser
  let task: Record<string, any>
  let quota: Record<string, any>

  beforeAll(async () => {
    service = await startService()
    user = await service.user("careless", "Europe/Paris")
    task = await createTask(user.api, { title: "A perfectly good task", due_at: "2026-11-25T08:00:00Z", labels: ["ok"] })
    quota = await createTask(user.api, { title: "Swim", progress_target: 2, rrule: "FREQ=WEEKLY" })
  })
  afterAll(async () => {
    await service.stop()
  })

  /** Runs `send`, checks status and envelope, and that the database is exactly as before. */
  const refused = async (
    send: () => Promise<Response>,
    expected: { status: number; code: string; error?: string; details?: Record<string, unknown> }
  ) => {
    const before = await snapshot(service)
    const res = await send()
    expect(res.status, res.text).toBe(expected.status)
    expect(Object.keys(res.body).sort()).toEqual(["code", "details", "error"])
    expect(res.body.code).toBe(expected.code)
    expect(typeof res.body.error).toBe("string")
    expect(res.body.error.length).toBeGreaterThan(0)
    if (expected.error !== undefined) expect(res.body.error).toBe(expected.error)
    if (expected.details !== undefined) expect(res.body.details).toEqual(expected.details)
    expect(res.text).not.toMatch(/at .+\.(ts|js):\d+/) // no stack trace
    expect(await snapshot(service)).toEqual(before)
    return res
  }
  const invalid = (details: Record<string, unknown>, error = "Invalid request") => ({
    status: 400,
    code: "VALIDATION_ERROR",
    error,
    details
  })

  describe("malformed bodies", () => {
    it.each([
      ["unterminated JSON", "{\"title\": \"x\""],
      ["trailing comma", "{\"title\": \"x\",}"],
      ["single quotes", "{'title': 'x'}"],
      ["plain text", "buy milk"]
    ])("POST /api/tasks with %s is a 400", async (_name, raw) => {
      await refused(
        () => user.api.request("POST", "/api/tasks", raw, { "content-type": "application/json" }),
        invalid({ body: "malformed JSON" }, "The request body is not valid JSON")
      )
    })

    it("PATCH with malformed JSON is a 400", async () => {
      await refused(
        () => user.api.request("PATCH", `/api/tasks/${task.id}`, "{\"title\": ", { "content-type": "application/json" }),
        invalid({ body: "malformed JSON" }, "The request body is not valid JSON")
      )
    })

    it.each([
      ["an array", []],
      ["null", null],
      ["a number", 42],
      ["a string", "Buy milk"]
    ])("a body that is %s instead of an object is a 400", async (_name, body) => {
      const res = await refused(
        () => user.api.request("POST", "/api/tasks", JSON.stringify(body), { "content-type": "application/json" }),
        { status: 400, code: "VALIDATION_ERROR" }
      )
      expect(Object.keys(res.body.details)).toEqual(["body"])
    })

    it("a missing title is a 400 naming the field", async () => {
      await refused(() => user.api.post("/api/tasks", { notes: "no title" }), invalid({ title: "is missing" }))
    })
  })

  describe("wrong types, unknown enum values and out-of-range numbers on POST /api/tasks", () => {
    it.each<[string, Record<string, unknown>, Record<string, string>]>([
      ["title a number", { title: 5 }, { title: "Expected string, actual 5" }],
      ["priority a string", { title: "x", priority: "high" }, { priority: "Expected number, actual \"high\"" }],
      ["priority 5", { title: "x", priority: 5 }, { priority: "must be an integer from 0 (P0) to 4 (P4)" }],
      ["priority -1", { title: "x", priority: -1 }, { priority: "must be an integer from 0 (P0) to 4 (P4)" }],
      ["priority 1.5", { title: "x", priority: 1.5 }, { priority: "Expected an integer, actual 1.5" }],
      ["is_reminder a string", { title: "x", is_reminder: "yes" }, { is_reminder: "Expected boolean, actual \"yes\"" }],
      ["due_at a number", { title: "x", due_at: 1764057600000 }, { due_at: "Expected string, actual 1764057600000" }],
      ["project_id a string", { title: "x", project_id: "inbox" }, { project_id: "Expected number, actual \"inbox\"" }],
      ["project_id beyond 2^31-1", { title: "x", project_id: 2_147_483_648 }, { project_id: "is out of range" }],
      ["horizon year", { title: "x", horizon: "year" }, { horizon: "must be day, week, month or someday" }],
      ["recurrence_mode sometimes", { title: "x", recurrence_mode: "sometimes" }, {
        recurrence_mode: "must be from_due or from_completion"
      }],
      ["progress_target 0", { title: "x", progress_target: 0 }, { progress_target: "must be an integer from 1 to 1000" }],
      ["progress_target 1001", { title: "x", progress_target: 1001, rrule: "FREQ=DAILY" }, {
        progress_target: "must be an integer from 1 to 1000"
      }],
      ["an empty title", { title: "" }, { title: "must not be empty" }],
      ["a blank title", { title: "   " }, { title: "must not be empty" }],
      ["a title over 10,000 characters", { title: TOO_LONG_TITLE }, { title: "must be at most 10000 characters" }],
      ["notes over 10,000 characters", { title: "x", notes: "n".repeat(10_001) }, { notes: "must be at most 10000 characters" }],
      ["51 labels", { title: "x", labels: LABELS_51 }, { labels: "at most 50 labels" }],
      ["a label over 100 characters", { title: "x", labels: ["fine", LONG_LABEL] }, {
        "labels.1": "a label must be at most 100 characters"
      }],
      ["an empty label", { title: "x", labels: [""] }, { "labels.0": "a label must not be empty" }],
      ["a label that is a number", { title: "x", labels: [7] }, { "labels.0": "Expected string, actual 7" }],
      ["an unparseable rule", { title: "x", due_at: "2026-12-01T09:00:00Z", rrule: "every day" }, {
        rrule: "rrule is not an RRULE (expected e.g. FREQ=DAILY)"
      }]
    ])("%s is a 400", async (_name, body, details) => {
      const error = Object.values(details)[0]!.startsWith("rrule ") ? Object.values(details)[0] : "Invalid request"
      await refused(() => user.api.post("/api/tasks", body), invalid(details, error))
    })

    it.each([
      "tomorrow",
      "2026-02-30T10:00:00Z",
      "2026-13-01T10:00:00Z",
      "2026-01-01T25:00:00Z",
      "2026-01-01T10:61:00Z",
      "25/11/2026 08:00",
      "2026-11-25T08:00:00+25:00",
      ""
    ])("the timestamp %j is a 400 for due_at, target_at and deadline_at", async (value) => {
      for (const field of ["due_at", "target_at", "deadline_at"]) {
        await refused(() => user.api.post("/api/tasks", { title: "x", [field]: value }), invalid({ [field]: "must be an ISO 8601 date-time" }))
        await refused(
          () => user.api.patch(`/api/tasks/${task.id}`, { [field]: value }),
          invalid({ [field]: "must be an ISO 8601 date-time" })
        )
      }
    })

    it("the boundaries themselves are accepted: a 10,000-character title, 50 labels of 100 characters, 29 February 2028", async () => {
      const res = await user.api.post("/api/tasks", {
        title: "b".repeat(10_000),
        labels: Array.from({ length: 50 }, (_, i) => `${i}`.padEnd(100, "x")),
        due_at: "2028-02-29T23:59:59.999Z",
        priority: 4,
        progress_target: 1
      })
      expect(res.status).toBe(201)
      expect(res.body.data.title).toHaveLength(10_000)
      expect(res.body.data.labels).toHaveLength(50)
      expect(res.body.data.due_at).toBe("2028-02-29T23:59:59.999Z")
      expect((await user.api.delete(`/api/tasks/${res.body.data.id}`)).status).toBe(200)
    })
  })

  describe("PATCH /api/tasks/{id}", () => {
    it.each<[string, Record<string, unknown>, Record<string, string>]>([
      ["title null", { title: null }, { title: "Expected string, actual null" }],
      ["title empty", { title: "" }, { title: "must not be empty" }],
      ["priority null", { priority: null }, { priority: "Expected number, actual null" }],
      ["priority 5", { priority: 5 }, { priority: "must be an integer from 0 (P0) to 4 (P4)" }],
      ["labels a string", { labels: "ok" }, { labels: expect.stringContaining("actual \"ok\"") }],
      ["51 labels", { labels: LABELS_51 }, { labels: "at most 50 labels" }],
      ["a label over 100 characters", { labels: [LONG_LABEL] }, { "labels.0": "a label must be at most 100 characters" }],
      ["horizon fortnight", { horizon: "fortnight" }, { horizon: "must be day, week, month or someday" }],
      ["recurrence_mode never", { recurrence_mode: "never" }, { recurrence_mode: "must be from_due or from_completion" }],
      ["progress_target 1001", { progress_target: 1001 }, { progress_target: "must be an integer from 1 to 1000" }],
      ["progress_current -1", { progress_current: -1 }, { progress_current: "must be 0 or more" }],
      ["retarget a string", { retarget: "yes" }, { retarget: "Expected boolean, actual \"yes\"" }]
    ])("%s is a 400", async (_name, body, details) => {
      await refused(() => user.api.patch(`/api/tasks/${task.id}`, body), invalid(details))
    })
  })

  describe("ids in the path", () => {
    const routes: ReadonlyArray<[string, (id: string) => Promise<Response>]> = [
      ["GET", (id) => user.api.get(`/api/tasks/${id}`)],
      ["PATCH", (id) => user.api.patch(`/api/tasks/${id}`, { title: "renamed" })],
      ["DELETE", (id) => user.api.delete(`/api/tasks/${id}`)],
      ["restore", (id) => user.api.post(`/api/tasks/${id}/restore`)],
      ["reprocess", (id) => user.api.post(`/api/tasks/${id}/reprocess`)]
    ]

    it.each(["abc", "1.5", "-1", "99999999999", "1e3", "0x10", "%20"])("the id %j is a 400 on every task route", async (id) => {
      for (const [, send] of routes) {
        await refused(() => send(id), invalid({ id: "must be a positive integer id" }))
      }
    })

    it("0 and 2^31 are out of range (400); 2^31-1 is a well-formed id that does not exist (404)", async () => {
      for (const [, send] of routes) {
        await refused(() => send("0"), invalid({ id: "must be a positive integer" }))
        await refused(() => send("2147483648"), invalid({ id: "is out of range" }))
        await refused(() => send("2147483647"), { status: 404, code: "NOT_FOUND", error: "Task not found", details: {} })
      }
    })

    it("an unknown task id is a 404 on every task route", async () => {
      for (const [, send] of routes) {
        await refused(() => send("424242"), { status: 404, code: "NOT_FOUND", error: "Task not found", details: {} })
      }
    })
  })

  describe("GET /api/tasks query parameters", () => {
    it.each<[string, Record<string, string>]>([
      ["limit=0", { limit: "must be from 1 to 1000" }],
      ["limit=1001", { limit: "must be from 1 to 1000" }],
      ["limit=-5", { limit: "must be from 1 to 1000" }],
      ["limit=ten", { limit: "must be an integer" }],
      ["limit=2.5", { limit: "must be an integer" }],
      ["offset=-1", { offset: "must be from 0 to 2147483647" }],
      ["offset=x", { offset: "must be an integer" }],
      ["kind=habit", { kind: "must be task, reminder or quota" }],
      ["kind=TASK", { kind: "must be task, reminder or quota" }],
      ["kind=", { kind: "must be task, reminder or quota" }],
      ["done=maybe", { done: "must be true or false" }],
      ["trashed=yes", { trashed: "must be true or false" }],
      ["archived=2", { archived: "must be true or false" }],
      ["overdue=soon", { overdue: "must be true or false" }],
      ["recurring=often", { recurring: "must be true or false" }],
      ["one_off=once", { one_off: "must be true or false" }],
      ["project_id=inbox", { project_id: "must be an integer" }],
      ["project_id=0", { project_id: "must be from 1 to 2147483647" }],
      ["project_id=2147483648", { project_id: "must be from 1 to 2147483647" }],
      ["project=abc", { project: "must be an integer" }]
    ])("%s is a 400", async (qs, details) => {
      await refused(() => user.api.get(`/api/tasks?${qs}`), invalid(details))
    })

    it("the limits themselves are accepted", async () => {
      for (const qs of ["limit=1", "limit=1000", "offset=0", "kind=task", "kind=reminder", "kind=quota", "done=true", "done=0"]) {
        expect((await user.api.get(`/api/tasks?${qs}`)).status, qs).toBe(200)
      }
    })
  })

  describe("quota rules on create and edit", () => {
    it("a quota without a period is refused: A quota needs a period", async () => {
      const expected = invalid({ rrule: "A quota needs a period" }, "A quota needs a period")
      await refused(() => user.api.post("/api/tasks", { title: "Read", progress_target: 3 }), expected)
      await refused(() => user.api.post("/api/tasks", { title: "Read", is_tracked: true }), expected)
      await refused(() => user.api.post("/api/tasks", { title: "Read", progress_target: 3, rrule: null }), expected)
      // Turning an undated task into a quota, or taking a quota's period away.
      const undated = await createTask(user.api, { title: "Journal" })
      await refused(() => user.api.patch(`/api/tasks/${undated.id}`, { progress_target: 3 }), expected)
      await refused(() => user.api.patch(`/api/tasks/${quota.id}`, { rrule: null }), expected)
      await user.api.delete(`/api/tasks/${undated.id}`)
    })

    it("a quota with a due date is refused, on create and on edit", async () => {
      const expected = invalid({ due_at: "A quota has no due date" }, "A quota has no due date")
      await refused(
        () => user.api.post("/api/tasks", { title: "Run", progress_target: 3, rrule: "FREQ=WEEKLY", due_at: "2026-11-25T08:00:00Z" }),
        expected
      )
      await refused(() => user.api.patch(`/api/tasks/${quota.id}`, { due_at: "2026-11-25T08:00:00Z" }), expected)
      // A dated task cannot become a quota either.
      await refused(() => user.api.patch(`/api/tasks/${task.id}`, { progress_target: 4, rrule: "FREQ=WEEKLY" }), expected)
    })

    it("a bare period rule on a plain task with no due date is refused; with a due date it is a weekly task", async () => {
      await refused(
        () => user.api.post("/api/tasks", { title: "Weekly review", rrule: "FREQ=WEEKLY" }),
        invalid(
          { rrule: "A bare period rule is valid only on a quota (set progress_target or is_tracked)" },
          "A bare period rule is valid only on a quota (set progress_target or is_tracked)"
        )
      )
      const weekly = await createTask(user.api, { title: "Weekly review", rrule: "FREQ=WEEKLY", due_at: "2026-11-27T16:00:00Z" })
      expect(weekly).toMatchObject({ rrule: "FREQ=WEEKLY", is_recurring: true, progress_target: 1, is_tracked: false })
      await user.api.delete(`/api/tasks/${weekly.id}`)
    })

    it("a quota cannot be a reminder", async () => {
      await refused(
        () => user.api.post("/api/tasks", { title: "Water", progress_target: 8, rrule: "FREQ=DAILY", is_reminder: true }),
        invalid({ is_reminder: "A quota cannot be a reminder" }, "A quota cannot be a reminder")
      )
      await refused(
        () => user.api.post("/api/tasks", { title: "Water", is_tracked: true, rrule: "FREQ=DAILY", is_reminder: true }),
        invalid({ is_reminder: "A quota cannot be a reminder" }, "A quota cannot be a reminder")
      )
    })

    it("a well-formed quota is created without dates", async () => {
      const created = await createTask(user.api, { title: "Push-ups", progress_target: 3, rrule: "FREQ=DAILY;INTERVAL=2" })
      expect(created).toMatchObject({
        progress_target: 3,
        progress_current: 0,
        rrule: "FREQ=DAILY;INTERVAL=2",
        due_at: null,
        original_due_at: null,
        is_recurring: false,
        is_reminder: false
      })
      await user.api.delete(`/api/tasks/${created.id}`)
    })
  })

  describe("body size", () => {
    it("a body over 1 MiB is a 413 on POST and PATCH", async () => {
      const huge = { title: "big", notes: "x".repeat(ONE_MIB) }
      const tooLarge = { status: 413, code: "PAYLOAD_TOO_LARGE", details: {} }
      await refused(() => user.api.post("/api/tasks", huge), tooLarge)
      await refused(() => user.api.patch(`/api/tasks/${task.id}`, huge), tooLarge)
    })

    it("a streamed body over 1 MiB without a Content-Length is a 413", async () => {
      const chunk = new TextEncoder().encode("x".repeat(64 * 1024))
      let sent = 0
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("{\"title\":\"big\",\"notes\":\""))
        },
        pull(controller) {
          if (sent >= ONE_MIB + chunk.length) {
            controller.enqueue(new TextEncoder().encode("\"}"))
            controller.close()
            return
          }
          sent += chunk.length
          controller.enqueue(chunk)
        }
      })
      const before = await snapshot(service)
      // Past 1 MiB the service answers 413 and drains the rest, so the client gets the answer.
      const outcome = await fetch(`${service.baseUrl}/api/tasks`, {
        method: "POST",
        headers: { authorization: `Bearer ${user.token}`, "content-type": "application/json" },
        body: stream,
        duplex: "half"
      } as RequestInit).then(
        async (res) => ({ status: res.status, body: JSON.parse(await res.text()) }),
        (error: Error) => ({ status: 0, body: String((error.cause as Error | undefined)?.message ?? error.message) })
      )
      expect(outcome).toEqual({ status: 413, body: expect.objectContaining({ code: "PAYLOAD_TOO_LARGE" }) })
      expect(await snapshot(service)).toEqual(before)
      // The service is still there afterwards.
      expect((await user.api.get(`/api/tasks/${task.id}`)).status).toBe(200)
    })

    it("a body just under 1 MiB is read normally (and its notes are then too long)", async () => {
      const res = await refused(
        () => user.api.post("/api/tasks", { title: "big", notes: "x".repeat(ONE_MIB - 100) }),
        invalid({ notes: "must be at most 10000 characters" })
      )
      expect(res.status).toBe(400)
    })
  })

  describe("authentication", () => {
    const unauthorized = (error: string) => ({ status: 401, code: "UNAUTHORIZED", error, details: {} })

    it("no credentials is a 401 on every task endpoint, even with a malformed id or body", async () => {
      const anon = service.anonymous
      const sends: ReadonlyArray<() => Promise<Response>> = [
        () => anon.get("/api/tasks"),
        () => anon.get("/api/tasks/counts"),
        () => anon.get("/api/trash"),
        () => anon.post("/api/tasks", { title: "anonymous" }),
        () => anon.get(`/api/tasks/${task.id}`),
        () => anon.patch(`/api/tasks/${task.id}`, { title: "anonymous" }),
        () => anon.delete(`/api/tasks/${task.id}`),
        () => anon.post(`/api/tasks/${task.id}/restore`),
        () => anon.post(`/api/tasks/${task.id}/reprocess`),
        () => anon.get("/api/tasks/abc"),
        () => anon.request("POST", "/api/tasks", "{bad json", { "content-type": "application/json" })
      ]
      for (const send of sends) await refused(send, unauthorized("Missing credentials: send Authorization: Bearer <token>"))
    })

    it("an invalid or malformed token is a 401, never a fall-through", async () => {
      const wrong = service.client({ authorization: `Bearer ${"0".repeat(64)}` })
      await refused(() => wrong.get("/api/tasks"), unauthorized("Invalid API token"))
      await refused(() => wrong.post("/api/tasks", { title: "intruder" }), unauthorized("Invalid API token"))
      await refused(() => wrong.delete(`/api/tasks/${task.id}`), unauthorized("Invalid API token"))
      const truncated = service.client({ authorization: `Bearer ${user.token.slice(0, 63)}` })
      await refused(() => truncated.patch(`/api/tasks/${task.id}`, { title: "intruder" }), unauthorized("Invalid API token"))
      const basic = service.client({ authorization: "Basic dXNlcjpwYXNz" })
      await refused(() => basic.get("/api/tasks"), unauthorized("Malformed Authorization header; expected Bearer <token>"))
      // What `curl -H "Authorization: Bearer $TOKEN"` sends when TOKEN is empty: said to be missing.
      for (const empty of ["Bearer", "Bearer ", ""]) {
        const blank = service.client({ authorization: empty })
        await refused(() => blank.get("/api/tasks"), unauthorized("Missing token: the Authorization header has no Bearer token"))
      }
      // A valid token still works afterwards.
      expect((await user.api.get(`/api/tasks/${task.id}`)).body.data).toEqual(task)
    })
  })
})
