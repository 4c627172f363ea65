import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Fiber } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Yaml from "yaml"
import { Liveness } from "../src/system/Liveness.js"
import { MIGRATIONS_TABLE } from "../src/sql/Migrations.js"
import { startService, type TestService } from "./support/service.js"

/** The migrations this code ships, `0001_foundation` …, in order. */
const shipped = Fs.readdirSync(Path.join(import.meta.dirname, "..", "migrations"))
  .filter((file) => /^\d+_.+\.sql$/.test(file))
  .sort()
  .map((file) => file.replace(/\.sql$/, ""))

describe("GET /api/health/ready", () => {
  let service: TestService
  beforeAll(async () => {
    service = await startService()
  })
  afterAll(async () => {
    await service?.stop()
  })

  it("is 200 with the database, every migration and the background fibers", async () => {
    const res = await service.anonymous.get("/api/health/ready")
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      status: "ready",
      database: { status: "ok" },
      migrations: { applied: shipped.length, latest: shipped.at(-1), pending: [] },
      fibers: {
        quota_rollover: "running",
        reminder_roll_forward: "running",
        webhook_dispatcher: "running",
        // No AI provider configured: the queue worker is off by design, not down.
        enrichment: "disabled",
        ai_maintenance: "running",
        purges: "running"
      }
    })
  })

  it("leaves GET /api/health as it was", async () => {
    const res = await service.anonymous.get("/api/health")
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ status: "ok" })
  })

  it("is declared in the OpenAPI document, with /metrics", async () => {
    const doc = Yaml.parse((await service.anonymous.get("/api/openapi")).text)
    expect(Object.keys(doc.paths["/api/health/ready"].get.responses)).toEqual(expect.arrayContaining(["200", "503"]))
    expect(doc.paths["/metrics"].get).toBeDefined()
  })

  it("is 503 when a migration the code ships is not recorded as applied", async () => {
    const last = shipped.at(-1)!
    const id = Number(last.split("_")[0])
    const [row] = await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ name: string; created_at: string }>`
        DELETE FROM ${sql(MIGRATIONS_TABLE)} WHERE migration_id = ${id} RETURNING name, created_at::text AS created_at`))
    try {
      const res = await service.anonymous.get("/api/health/ready")
      expect(res.status).toBe(503)
      expect(res.body.status).toBe("not_ready")
      expect(res.body.migrations).toEqual({ applied: shipped.length - 1, latest: shipped.at(-2), pending: [last] })
      expect(res.body.database).toEqual({ status: "ok" })
    } finally {
      await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`INSERT INTO ${sql(MIGRATIONS_TABLE)} (migration_id, name, created_at)
            VALUES (${id}, ${row!.name}, ${row!.created_at}::timestamptz)`))
    }
    expect((await service.anonymous.get("/api/health/ready")).status).toBe(200)
  })

  it("is 503 naming the fiber when a background fiber has stopped", async () => {
    await service.run(Effect.gen(function*() {
      const registry = yield* Liveness
      const ended = yield* Effect.fork(Effect.void)
      yield* Fiber.await(ended)
      registry.register("purges", ended)
    }))
    const res = await service.anonymous.get("/api/health/ready")
    expect(res.status).toBe(503)
    expect(res.body.status).toBe("not_ready")
    expect(res.body.fibers.purges).toBe("stopped")
    expect(res.body.fibers.quota_rollover).toBe("running")
  })
})

describe("readiness with webhook dispatch turned off", () => {
  let service: TestService
  beforeAll(async () => {
    service = await startService({ webhookDispatch: false })
  })
  afterAll(async () => {
    await service?.stop()
  })

  it("reports the dispatcher as disabled and is still ready", async () => {
    const res = await service.anonymous.get("/api/health/ready")
    expect(res.status).toBe(200)
    expect(res.body.fibers.webhook_dispatcher).toBe("disabled")
  })
})
