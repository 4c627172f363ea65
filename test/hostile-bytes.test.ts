import { request as httpRequest } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { snapshot } from "./support/rows.js"
import { type Response, startService, type TestService, type TestUser } from "./support/service.js"
import { createTask } from "./support/tasks.js"

const STORABLE = "must not contain NUL (\\u0000) or unpaired surrogate characters"
const ONE_MIB = 1024 * 1024

/** Raw JSON text, so `\u0000` and `\ud800` reach the server as JSON escapes. */
const raw = (fields: string) => `{${fields}}`

interface RawResponse {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly body: any
}

/** node:http, for what fetch cannot send: TRACE, oversized headers, a chunked body of our own. */
const rawRequest = (
  baseUrl: string,
  options: { method: string; path: string; headers?: Record<string, string>; chunks?: ReadonlyArray<string> }
) =>
  new Promise<RawResponse>((resolve, reject) => {
    const url = new URL(options.path, baseUrl)
    const req = httpRequest(
      { host: url.hostname, port: url.port, method: options.method, path: url.pathname + url.search, headers: options.headers ?? {} },
      (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (chunk: string) => (text += chunk))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text === "" ? undefined : JSON.parse(text) }))
      }
    )
    req.on("error", reject)
    for (const chunk of options.chunks ?? []) req.write(chunk)
    req.end()
  })

describe("hostile bytes: NUL, lone surrogates, deep JSON, oversized bodies and headers, other methods", () => {
  let service: TestService
  let user: TestUser
  let task: Record<string, any>

  beforeAll(async () => {
    service = await startService()
    user = await service.user("hostile")
    task = await createTask(user.api, { title: "Untouched", notes: "as it was", labels: ["kept"] })
  })
  afterAll(async () => {
    await service.stop()
  })

  /** 400, the envelope, the field named with its reason, and no row changed. */
  const refusedNaming = async (send: () => Promise<Response>, field: string, reason = STORABLE) => {
    const before = await snapshot(service)
    const res = await send()
    expect(res.status, res.text).toBe(400)
    expect(res.body).toEqual({ error: "Invalid request", code: "VALIDATION_ERROR", details: { [field]: reason } })
    expect(await snapshot(service)).toEqual(before)
  }
  const post = (path: string, body: string) => user.api.request("POST", path, body)
  const patch = (path: string, body: string) => user.api.request("PATCH", path, body)

  describe("a NUL in any stored or queried string is a 400 naming the field", () => {
    it.each([
      ["title", raw(`"title":"a\\u0000b"`), "title"],
      ["notes", raw(`"title":"x","notes":"\\u0000"`), "notes"],
      ["a label", raw(`"title":"x","labels":["ok","a\\u0000"]`), "labels.1"],
      ["a quota prompt number key", raw(`"title":"x","quota_prompt_config":{"numbers":{"1\\u0000":2}}`), "quota_prompt_config.numbers"]
    ])("POST /api/tasks with NUL in %s", async (_name, body, field) => {
      await refusedNaming(() => post("/api/tasks", body), field, field.startsWith("quota") ? `keys ${STORABLE}` : STORABLE)
    })

    it.each([
      ["title", raw(`"title":"a\\u0000b"`), "title"],
      ["notes", raw(`"notes":"\\u0000"`), "notes"],
      ["labels", raw(`"labels":["\\u0000"]`), "labels.0"]
    ])("PATCH /api/tasks/{id} with NUL in %s leaves the task as it was", async (_name, body, field) => {
      await refusedNaming(() => patch(`/api/tasks/${task.id}`, body), field)
      expect((await user.api.get(`/api/tasks/${task.id}`)).body.data).toEqual(task)
    })

    it("a project name", async () => {
      await refusedNaming(() => post("/api/projects", raw(`"name":"p\\u0000"`)), "name")
    })

    it("a time-slot label, a token name and a webhook URL; none of them created", async () => {
      const slots = (await user.api.get("/api/time-slots")).body.data
      const tokens = (await user.api.get("/api/tokens")).body.data
      const hooks = (await user.api.get("/api/webhooks")).body.data
      await refusedNaming(() => post("/api/time-slots", raw(`"label":"s\\u0000","start_time":"06:30"`)), "label")
      await refusedNaming(() => post("/api/tokens", raw(`"name":"t\\u0000"`)), "name")
      await refusedNaming(
        () => post("/api/webhooks", raw(`"url":"http://127.0.0.1:9/\\u0000","events":["task.created"]`)),
        "url"
      )
      expect((await user.api.get("/api/time-slots")).body.data).toEqual(slots)
      expect((await user.api.get("/api/tokens")).body.data).toEqual(tokens)
      expect((await user.api.get("/api/webhooks")).body.data).toEqual(hooks)
    })

    it("preferences", async () => {
      const before = (await user.api.get("/api/user/preferences")).body.data
      await refusedNaming(() => patch("/api/user/preferences", raw(`"default_snooze_option":"\\u0000"`)), "default_snooze_option")
      await refusedNaming(() => patch("/api/user/preferences", raw(`"ai_context":"x\\u0000"`)), "ai_context")
      expect((await user.api.get("/api/user/preferences")).body.data).toEqual(before)
    })

    it.each(["search", "label"])("the %s query parameter of GET /api/tasks", async (param) => {
      await refusedNaming(() => user.api.get(`/api/tasks?${param}=a%00b`), param)
    })
  })

  describe("a lone surrogate is a 400, never stored as U+FFFD", () => {
    it.each([
      ["a lone high surrogate", raw(`"title":"\\ud800"`)],
      ["a lone low surrogate", raw(`"title":"x\\udfffy"`)],
      ["a reversed pair", raw(`"title":"\\ude00\\ud83d"`)]
    ])("POST /api/tasks with %s in the title", async (_name, body) => {
      await refusedNaming(() => post("/api/tasks", body), "title")
    })

    it("a surrogate pair (an emoji) is fine", async () => {
      const res = await post("/api/tasks", raw(`"title":"\\ud83d\\ude00 ok"`))
      expect(res.status).toBe(201)
      expect(res.body.data.title).toBe("\u{1F600} ok")
      await user.api.delete(`/api/tasks/${res.body.data.id}`)
    })

    it("PATCH title and a preference", async () => {
      await refusedNaming(() => patch(`/api/tasks/${task.id}`, raw(`"title":"\\ud800"`)), "title")
      expect((await user.api.get(`/api/tasks/${task.id}`)).body.data).toEqual(task)
      await refusedNaming(() => patch("/api/user/preferences", raw(`"default_grouping":"\\ud800"`)), "default_grouping")
    })
  })

  describe("deeply nested JSON is a 400 before decoding", () => {
    const deep = (levels: number) => "[".repeat(levels) + "]".repeat(levels)

    it.each([
      ["POST, 10,000 levels in notes", () => post("/api/tasks", raw(`"title":"x","notes":${deep(10_000)}`))],
      ["POST, 10,000 levels bare", () => post("/api/tasks", deep(10_000))],
      ["POST, 100,000 levels", () => post("/api/tasks", raw(`"title":"x","notes":${deep(100_000)}`))],
      ["PATCH, 10,000 levels", () => patch(`/api/tasks/${task.id}`, raw(`"notes":${deep(10_000)}`))]
    ])("%s", async (_name, send) => {
      await refusedNaming(send, "body", "JSON nested deeper than 32 levels")
    })

    it("without credentials it is a 401: bodies are read only after authentication", async () => {
      const res = await service.anonymous.request("POST", "/api/tasks", raw(`"title":"x","notes":${deep(10_000)}`))
      expect(res.status).toBe(401)
      expect(res.body.code).toBe("UNAUTHORIZED")
    })

    it("brackets inside strings do not count", async () => {
      const res = await post("/api/tasks", JSON.stringify({ title: "[[[[", notes: "{".repeat(1000) }))
      expect(res.status).toBe(201)
      await user.api.delete(`/api/tasks/${res.body.data.id}`)
    })
  })

  describe("oversized requests get the envelope", () => {
    it("a chunked body over 1 MiB is a 413, not a reset connection; nothing stored", async () => {
      const before = await snapshot(service)
      const chunk = "x".repeat(64 * 1024)
      const chunks = ["{\"title\":\"big\",\"notes\":\"", ...Array.from({ length: 18 }, () => chunk), "\"}"] // ~1.1 MiB
      expect(chunks.join("").length).toBeGreaterThan(ONE_MIB + 64 * 1024)
      const res = await rawRequest(service.baseUrl, {
        method: "POST",
        path: "/api/tasks",
        headers: { authorization: `Bearer ${user.token}`, "content-type": "application/json", "transfer-encoding": "chunked" },
        chunks
      })
      expect(res.status).toBe(413)
      expect(res.body).toEqual({ error: `The request body is larger than ${ONE_MIB} bytes`, code: "PAYLOAD_TOO_LARGE", details: {} })
      expect(await snapshot(service)).toEqual(before)
      expect((await user.api.get(`/api/tasks/${task.id}`)).status).toBe(200)
    })

    it("a chunked body under the limit is read as usual", async () => {
      const res = await rawRequest(service.baseUrl, {
        method: "POST",
        path: "/api/tasks",
        headers: { authorization: `Bearer ${user.token}`, "content-type": "application/json", "transfer-encoding": "chunked" },
        chunks: ["{\"title\":", "\"chunked\"}"]
      })
      expect(res.status).toBe(201)
      expect(res.body.data.title).toBe("chunked")
      await user.api.delete(`/api/tasks/${res.body.data.id}`)
    })

    it("a chunked body (no Content-Length) nested too deep is still refused before it is parsed", async () => {
      const before = await snapshot(service)
      const deep = `{"title":"deep","notes":${"[".repeat(5_000)}${"]".repeat(5_000)}}`
      const res = await rawRequest(service.baseUrl, {
        method: "POST",
        path: "/api/tasks",
        headers: { authorization: `Bearer ${user.token}`, "content-type": "application/json", "transfer-encoding": "chunked" },
        chunks: [deep.slice(0, 4_000), deep.slice(4_000)]
      })
      expect(res.status).toBe(400)
      expect(res.body).toEqual({ error: "Invalid request", code: "VALIDATION_ERROR", details: { body: "JSON nested deeper than 32 levels" } })
      expect(await snapshot(service)).toEqual(before)
    })

    it("a request with neither Content-Length nor Transfer-Encoding has no body: a create without one is a 400", async () => {
      const before = await snapshot(service)
      const res = await rawRequest(service.baseUrl, {
        method: "POST",
        path: "/api/tasks",
        headers: { authorization: `Bearer ${user.token}`, "content-type": "application/json" },
        chunks: []
      })
      expect(res.status).toBe(400)
      expect(res.body.code).toBe("VALIDATION_ERROR")
      expect(await snapshot(service)).toEqual(before)
    })

    it("a 20 KB header is a 431 with the envelope", async () => {
      const res = await rawRequest(service.baseUrl, {
        method: "GET",
        path: "/api/tasks",
        headers: { authorization: `Bearer ${"x".repeat(20_000)}` }
      })
      expect(res.status).toBe(431)
      expect(res.headers["content-type"]).toBe("application/json")
      expect(res.body).toEqual({ error: "The request headers are too large", code: "HEADERS_TOO_LARGE", details: {} })
      expect((await user.api.get(`/api/tasks/${task.id}`)).status).toBe(200)
    })
  })

  describe("a method the path does not serve is a 405 naming the ones it does", () => {
    it.each([
      ["TRACE", "/api/tasks", "GET, HEAD, POST"],
      ["PUT", "/api/tasks/1", "GET, HEAD, PATCH, DELETE"],
      ["PUT", `/api/tasks/1/done`, "POST"],
      ["DELETE", "/api/health", "GET, HEAD"],
      // A path that is a route of its own has that route's methods, not those of /{id}.
      ["TRACE", "/api/projects/reorder", "PATCH"],
      ["GET", "/api/projects/reorder", "PATCH"],
      ["PATCH", "/api/tasks/counts", "GET, HEAD"],
      ["DELETE", "/api/tasks/counts", "GET, HEAD"]
    ])("%s %s", async (method, path, allow) => {
      const before = await snapshot(service)
      const res = await rawRequest(service.baseUrl, { method, path, headers: { authorization: `Bearer ${user.token}` } })
      expect(res.status).toBe(405)
      expect(res.headers.allow).toBe(allow)
      expect(res.body).toEqual({ error: `${method} is not served here; use ${allow}`, code: "METHOD_NOT_ALLOWED", details: {} })
      expect(await snapshot(service)).toEqual(before)
    })

    it("a path the API does not serve at all is still a 404", async () => {
      const res = await rawRequest(service.baseUrl, { method: "PUT", path: "/api/nothing-here" })
      expect(res.status).toBe(404)
      expect(res.body).toEqual({ error: "No such endpoint", code: "NOT_FOUND", details: {} })
    })
  })
})
