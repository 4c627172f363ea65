import * as SqlClient from "@effect/sql/SqlClient"
import { ConfigProvider, Effect, Either, Layer } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { appConfig } from "../src/kernel/AppConfig.js"
import { layerPglite } from "../src/sql/PgliteClient.js"

/**
 * The embedded database's buffer pool is resident from PGlite's start (its WebAssembly heap
 * never shrinks), so its size is what the service's memory is planned by: 24MB unless
 * EMBEDDED_SHARED_BUFFERS says otherwise, where a new data directory's postgresql.conf says 128MB.
 */
const sharedBuffers = (layer: Layer.Layer<SqlClient.SqlClient, unknown>) =>
  Effect.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ shared_buffers: string }>`SHOW shared_buffers`).pipe(
      Effect.map((rows) => rows[0]!.shared_buffers),
      Effect.provide(Layer.orDie(layer))
    )
  )

// A data directory, as the service always has (PGlite in memory starts with its own settings).
const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "steady-test-memory-"))
afterAll(() => Fs.rmSync(dir, { recursive: true, force: true }))

const configFrom = (env: Record<string, string>) =>
  Effect.runPromise(Effect.either(Effect.withConfigProvider(appConfig, ConfigProvider.fromMap(new Map(Object.entries(env))))))

describe("the embedded database's memory", () => {
  it("starts with a 24MB buffer pool by default, and the size given otherwise", async () => {
    expect(await sharedBuffers(layerPglite(dir))).toBe("24MB")
    expect(await sharedBuffers(layerPglite(dir, undefined, { sharedBuffers: "8MB" }))).toBe("8MB")
  }, 180_000)

  it("analyzes from a sample of 3,000 rows, so ANALYZE holds a tenth of a large table in PGlite's heap", async () => {
    const stats = await Effect.runPromise(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.gen(function*() {
          const [target] = yield* sql<{ default_statistics_target: string }>`SHOW default_statistics_target`
          yield* sql`CREATE TABLE sampled (n int)`
          yield* sql`INSERT INTO sampled SELECT generate_series(1, 20000)`
          yield* sql`ANALYZE sampled`
          // Distinct values throughout: a histogram of target + 1 bounds, no common values.
          const [row] = yield* sql<{ bounds: number }>`
            SELECT array_length(histogram_bounds::text::int[], 1) AS bounds FROM pg_stats WHERE tablename = 'sampled'`
          yield* sql`DROP TABLE sampled`
          return { target: target!.default_statistics_target, bounds: row!.bounds }
        })).pipe(Effect.provide(Layer.orDie(layerPglite(dir))))
    )
    expect(stats).toEqual({ target: "10", bounds: 11 })
  }, 180_000)

  it("EMBEDDED_SHARED_BUFFERS is read and checked with the rest of the configuration", async () => {
    const byDefault = await configFrom({})
    expect(Either.isRight(byDefault) && byDefault.right.embeddedSharedBuffers).toBe("24MB")
    const set = await configFrom({ EMBEDDED_SHARED_BUFFERS: "64MB" })
    expect(Either.isRight(set) && set.right.embeddedSharedBuffers).toBe("64MB")
    for (const bad of ["16", "lots", "64KB", "2GB", "64kB"]) {
      const wrong = await configFrom({ EMBEDDED_SHARED_BUFFERS: bad })
      expect(Either.isLeft(wrong), bad).toBe(true)
    }
  })
})
