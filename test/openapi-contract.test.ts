import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Yaml from "yaml"
import { startService, type TestService, type TestUser } from "./support/service.js"

/** The served document is the contract: every status, content type and constraint in it. */
describe("GET /api/openapi is the contract", () => {
  let service: TestService
  let user: TestUser
  let doc: any

  beforeAll(async () => {
    service = await startService()
    user = await service.user("contract")
    doc = Yaml.parse((await service.anonymous.get("/api/openapi")).text)
  })
  afterAll(async () => {
    await service.stop()
  })

  const operations = () =>
    Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
      Object.entries(ops).map(([method, op]) => ({ path, method: method.toUpperCase(), op }))
    )
  const resolve = (schema: any) =>
    schema?.$ref === undefined ? schema : doc.components.schemas[schema.$ref.replace("#/components/schemas/", "")]
  const statuses = (path: string, method: string) => Object.keys(doc.paths[path][method].responses).sort()

  it("declares the statuses answered around the handlers on every operation, each with the error envelope", () => {
    expect(operations().length).toBeGreaterThan(50)
    for (const { path, method, op } of operations()) {
      for (const status of ["400", "413", "431", "500", "503"]) {
        const response = op.responses[status]
        expect(response, `${method} ${path} ${status}`).toBeDefined()
        const schemas = response.content["application/json"].schema
        const members = schemas.anyOf ?? [schemas]
        const envelope = members.map(resolve).find((s: any) => s.required?.includes("code"))
        expect(envelope, `${method} ${path} ${status}`).toMatchObject({
          type: "object",
          required: ["error", "code", "details"]
        })
      }
    }
  })

  it("declares concrete statuses on a few operations", () => {
    const errors = ["400", "401", "403", "404", "409", "413", "431", "500", "503"]
    expect(statuses("/api/tasks/{id}", "get")).toEqual(["200", ...errors])
    // A write that takes an Idempotency-Key also answers 422 for a key reused on another request.
    expect(statuses("/api/tasks", "post")).toEqual(["201", ...errors, "422"].sort())
    expect(statuses("/api/trash", "get")).toEqual(["200", ...errors])
    expect(statuses("/api/health", "get")).toEqual(["200", ...errors])
  })

  it("ids in paths are integers from 1 to 2^31 - 1, and the server refuses exactly what lies outside", async () => {
    const idParams = operations().flatMap(({ path, method, op }) =>
      (op.parameters ?? []).filter((p: any) => p.in === "path").map((p: any) => ({ path, method, p }))
    )
    expect(idParams.length).toBeGreaterThan(15)
    for (const { p } of idParams) {
      expect(p.schema).toEqual({ type: "integer", minimum: 1, maximum: 2_147_483_647 })
      expect(p.required).toBe(true)
    }
    const invalid = { error: "Invalid request", code: "VALIDATION_ERROR" }
    for (const [path, rest] of [["/api/tasks/", ""], ["/api/projects/", ""], ["/api/webhooks/", "/deliveries"]]) {
      const zero = await user.api.get(`${path}0${rest}`)
      expect(zero.status, `${path}0${rest}`).toBe(400)
      expect(zero.body).toEqual({ ...invalid, details: { id: "must be a positive integer" } })
      const past = await user.api.get(`${path}2147483648${rest}`)
      expect(past.status).toBe(400)
      expect(past.body).toEqual({ ...invalid, details: { id: "is out of range" } })
    }
    expect((await user.api.get("/api/tasks/2147483647")).status).toBe(404)
    expect((await user.api.get("/api/tasks/1")).status).toBe(404)
  })

  it("integer query parameters carry their bounds, and one past them is a 400 naming the parameter", async () => {
    const bounded = operations().filter(({ method }) => method === "GET").flatMap(({ path, op }) =>
      (op.parameters ?? []).filter((p: any) => p.in === "query" && p.schema.type === "integer").map((p: any) => ({ path, p }))
    )
    expect(bounded.map(({ path, p }) => `${path}?${p.name}`)).toEqual(expect.arrayContaining([
      "/api/tasks?limit",
      "/api/tasks?offset",
      "/api/trash?limit",
      "/api/trash?offset",
      "/api/completions?limit",
      "/api/completions?offset",
      "/api/completions?task_id"
    ]))
    for (const { path, p } of bounded) {
      const { minimum, maximum } = p.schema
      expect(typeof minimum).toBe("number")
      expect(typeof maximum).toBe("number")
      for (const outside of [minimum - 1, maximum + 1]) {
        const res = await user.api.get(`${path}?${p.name}=${outside}`)
        expect(res.status, `${path}?${p.name}=${outside}`).toBe(400)
        expect(Object.keys(res.body.details)).toEqual([p.name])
      }
      for (const inside of [minimum, maximum]) {
        expect((await user.api.get(`${path}?${p.name}=${inside}`)).status, `${path}?${p.name}=${inside}`).toBe(200)
      }
    }
    expect(doc.paths["/api/completions"].get.parameters.find((p: any) => p.name === "limit").schema)
      .toEqual({ type: "integer", minimum: 1, maximum: 1000, description: "page size, default 200" })
  })

  it("strings that refuse \"\" declare minLength 1 and their maxLength; no string admits NUL", () => {
    const create = doc.components.schemas.TaskCreate.properties
    expect(create.title).toMatchObject({ type: "string", minLength: 1, maxLength: 10_000 })
    expect(create.notes).toMatchObject({ type: "string", maxLength: 10_000 })
    expect(create.notes.minLength).toBeUndefined()
    expect(create.labels).toMatchObject({ maxItems: 50, items: { minLength: 1, maxLength: 100 } })
    const body = (path: string, method = "post") => resolve(doc.paths[path][method].requestBody.content["application/json"].schema)
    expect(body("/api/tokens").properties.name).toMatchObject({ minLength: 1, maxLength: 100 })
    expect(body("/api/projects").properties.name).toMatchObject({ minLength: 1, maxLength: 200 })
    expect(body("/api/time-slots").properties.label).toMatchObject({ minLength: 1, maxLength: 100 })
    expect(body("/api/webhooks").properties.url).toMatchObject({ minLength: 1, maxLength: 2000 })
    expect(body("/api/user/preferences", "patch").properties.timezone).toMatchObject({ minLength: 1 })
    const noNul = JSON.stringify(create.title)
    expect(noNul).toContain("^[^\\\\u0000]*$")
  })

  it("date-times are documented as RFC 3339 from 1970 on, as the parser refuses earlier years", async () => {
    expect(doc.components.schemas.DateTime).toMatchObject({ type: "string", format: "date-time" })
    const pattern = new RegExp(doc.components.schemas.DateTime.pattern)
    expect(pattern.test("1970-01-01T00:00:00Z")).toBe(true)
    expect(pattern.test("1969-12-31T23:59:59Z")).toBe(false)
    const res = await user.api.post("/api/tasks", { title: "x", due_at: "1969-12-31T23:59:59Z" })
    expect(res.status).toBe(400)
    expect(res.body.details).toEqual({ due_at: "must be an ISO 8601 date-time" })
  })

  it("request bodies admit unknown fields, which the server ignores; responses stay exact", async () => {
    expect(doc.components.schemas.TaskCreate.additionalProperties).toBeUndefined()
    expect(doc.components.schemas.TaskPatch.additionalProperties).toBeUndefined()
    expect(doc.components.schemas.Task.additionalProperties).toBe(false)
    const created = await user.api.post("/api/tasks", { title: "with extras", not_a_field: { nested: true } })
    expect(created.status).toBe(201)
    expect(created.body.data.title).toBe("with extras")
    expect(Object.keys(created.body.data)).not.toContain("not_a_field")
  })

  it("operations behind authentication name the Bearer token and the session cookie", async () => {
    expect(doc.components.securitySchemes).toEqual({
      bearer: { type: "http", scheme: "bearer", description: "An API token (64 hex characters)" },
      session: { type: "apiKey", in: "cookie", name: "steady_session", description: "Minted by POST /api/auth/session" },
      calendar_key: { type: "apiKey", in: "query", name: "key", description: "Made by POST /api/calendar/key" }
    })
    expect(doc.paths["/api/tasks"].get.security).toEqual([{ bearer: [] }, { session: [] }])
    expect(doc.paths["/api/auth/session"].post.security).toEqual([{ bearer: [] }])
    expect(doc.paths["/api/health"].get.security).toEqual([])
    const open = operations().filter(({ op }) => op.security.length === 0).map(({ path, method }) => `${method} ${path}`)
    expect(open.sort()).toEqual([
      "DELETE /api/auth/session",
      "GET /api/health",
      // Readiness is for load balancers, like health; /metrics is guarded by SERVICE_METRICS_TOKEN when set.
      "GET /api/health/ready",
      "GET /api/openapi",
      "GET /api/push/vapid-key",
      "GET /metrics",
      "POST /api/notifications/actions"
    ])
    for (const { path, method } of operations().filter(({ op, path }) => op.security.length > 0 && !path.includes("{"))) {
      if (method !== "GET") continue
      const res = await service.anonymous.get(path)
      expect(res.status, `${method} ${path}`).toBe(401)
    }
  })

  it("the event stream is described per event (data, id), as OpenAPI tools validate text/event-stream", () => {
    const events = doc.paths["/api/events"].get.responses["200"].content["text/event-stream"].schema
    expect(events.type).toBe("object")
    expect(events.required).toEqual(["data"])
    expect(Object.keys(events.properties).sort()).toEqual(["data", "event", "id", "retry"])
  })

  it("export declares its CSV answer, and sends it", async () => {
    const ok = doc.paths["/api/export"].get.responses["200"].content
    expect(Object.keys(ok).sort()).toEqual(["application/json", "text/csv"])
    expect(ok["text/csv"].schema.type).toBe("string")
    const csv = await user.api.get("/api/export?format=csv&type=projects")
    expect(csv.status).toBe(200)
    expect(csv.headers.get("content-type")).toContain("text/csv")
  })

  it("the document describes itself as an object in YAML, and every reference resolves", () => {
    const self = doc.paths["/api/openapi"].get.responses["200"].content
    expect(Object.keys(self)).toEqual(["text/yaml"])
    expect(self["text/yaml"].schema).toMatchObject({ type: "object", required: ["openapi", "info", "paths"] })
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!)
    for (const name of refs) expect(doc.components.schemas[name], name).toBeDefined()
    expect(Object.keys(doc.components.schemas)).not.toContain("Issue")
  })
})
