import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { startService, type TestService, type TestUser } from "./support/service.js"

/**
 * Every response carries `X-Request-Id` (a sane incoming one is kept, else one is made), and
 * the log line of a 500 names the method, the path and that same id, not only the stack.
 */
describe("request ids", () => {
  let service: TestService
  let user: TestUser
  const GENERATED = /^[0-9a-f]{8}-[0-9a-z]+$/

  beforeAll(async () => {
    service = await startService()
    user = await service.user("request-id")
  })
  afterAll(async () => {
    await service.stop()
  })

  it("every response carries one, successes, refusals and unknown routes alike; each request its own", async () => {
    const responses = [
      await service.anonymous.get("/api/health"),
      await service.anonymous.get("/api/health"),
      await user.api.get("/api/tasks"),
      await service.anonymous.get("/api/tasks"),
      await user.api.post("/api/tasks", { title: "" }),
      await user.api.get("/api/no-such-thing")
    ]
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 401, 400, 404])
    const ids = responses.map((r) => r.headers.get("x-request-id"))
    for (const id of ids) expect(id).toMatch(GENERATED)
    expect(new Set(ids).size).toBe(ids.length)
  })

  it("a sane incoming id is kept; anything else is replaced by a fresh one", async () => {
    const send = (id: string) => service.client({ "x-request-id": id }).get("/api/health")
    expect((await send("proxy-7f3a.12:9_Z")).headers.get("x-request-id")).toBe("proxy-7f3a.12:9_Z")
    for (const odd of ["has space", "x".repeat(65), "quote\"d", "new\\nline", "ünï"]) {
      expect((await send(odd)).headers.get("x-request-id"), odd).toMatch(GENERATED)
    }
  })

  it("the log line of a 500 names the method, the path (without the query) and the response's id", async () => {
    const exec = (statement: string) => service.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(statement)))
    await exec(`CREATE OR REPLACE FUNCTION steady_test_boom() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.name = 'Boom' THEN RAISE EXCEPTION 'boom'; END IF;
        RETURN NEW;
      END $$`)
    await exec(`CREATE TRIGGER steady_test_boom BEFORE INSERT ON projects FOR EACH ROW EXECUTE FUNCTION steady_test_boom()`)
    const lines: Array<string> = []
    const spy = vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => {
      lines.push(args.map(String).join(" "))
    })
    try {
      const res = await user.api.request("POST", "/api/projects?via=test", { name: "Boom" })
      expect(res.status).toBe(500)
      expect(res.body).toEqual({ error: "Internal server error", code: "INTERNAL_ERROR", details: {} })
      const id = res.headers.get("x-request-id")
      expect(id).toMatch(GENERATED)
      const logged = lines.filter((line) => line.includes("Unexpected failure"))
      expect(logged).toHaveLength(1)
      expect(logged[0]).toContain(`request_id=${id}`)
      expect(logged[0]).toContain("method=POST")
      expect(logged[0]).toContain("path=/api/projects")
      expect(logged[0]).not.toContain("via=test")
      expect(logged[0]).toContain("boom")
    } finally {
      spy.mockRestore()
      await exec(`DROP TRIGGER steady_test_boom ON projects`)
      await exec(`DROP FUNCTION steady_test_boom()`)
    }
  })
})
