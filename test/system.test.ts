import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Yaml from "yaml"
import { startService, type TestService } from "./support/service.js"

describe("system endpoints", () => {
  let service: TestService
  beforeAll(async () => {
    service = await startService()
  })
  afterAll(async () => {
    await service.stop()
  })

  it("answers the health check without authentication", async () => {
    const res = await service.anonymous.get("/api/health")
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ status: "ok" })
  })

  it("serves an OpenAPI 3.1 YAML document, version 1.0.0, listing the task endpoints", async () => {
    const res = await service.anonymous.get("/api/openapi")
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("text/yaml")
    const doc = Yaml.parse(res.text)
    expect(doc.openapi).toBe("3.1.0")
    expect(doc.info.version).toBe("1.0.0")
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/api/tasks", "/api/tasks/{id}", "/api/health", "/api/openapi"]))
    expect(res.text).not.toContain("HttpApiDecodeError")
  })

  it("answers unknown routes with a 404 envelope", async () => {
    const res = await service.anonymous.get("/api/does-not-exist")
    expect(res.status).toBe(404)
    expect(res.body).toEqual({ error: "No such endpoint", code: "NOT_FOUND", details: {} })
  })
})
