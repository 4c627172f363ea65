import * as SqlClient from "@effect/sql/SqlClient"
import * as Statement from "@effect/sql/Statement"
import { Effect, RuntimeFlags, RuntimeFlagsPatch, Supervisor, Tracer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { databaseKind } from "./support/database.js"
import { startService, type TestService } from "./support/service.js"

/*
 * The service's statements run straight on their connection (no span, no
 * scope around each query) unless tracing is on or a transformer watches. Same rows, same
 * errors, same transaction; fewer runtime steps.
 */

/** Counts the runtime's steps while an effect runs. */
class StepCounter extends Supervisor.AbstractSupervisor<void> {
  steps = 0
  readonly value = Effect.void
  override onEffect() {
    this.steps++
  }
}

describe(`lean statements (${databaseKind()})`, () => {
  let service: TestService

  beforeAll(async () => {
    service = await startService()
    await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE lean_notes (id int PRIMARY KEY, note text NOT NULL)`))
  })
  afterAll(async () => {
    await service?.stop()
  })

  const withSql = <A, E>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) => service.run(Effect.flatMap(SqlClient.SqlClient, f))

  it("answers rows, parameters included, from the template and from unsafe", async () => {
    expect(await withSql((sql) => sql<{ n: number; s: string }>`SELECT ${41}::int + 1 AS n, ${"a'b"}::text AS s`)).toEqual([{ n: 42, s: "a'b" }])
    expect(await withSql((sql) => sql.unsafe<{ n: number }>("SELECT $1::int * 2 AS n", [21]))).toEqual([{ n: 42 }])
  })

  it("fails with the SqlError the library gives", async () => {
    const error = await withSql((sql) => Effect.flip(sql`SELECT * FROM no_such_table`))
    expect(error._tag).toBe("SqlError")
    expect(String((error.cause as { message?: unknown }).message)).toMatch(/no_such_table/)
  })

  it("runs inside the transaction: its writes are seen there and rolled back with it", async () => {
    const seen = await withSql((sql) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* Effect.orDie(sql`INSERT INTO lean_notes (id, note) VALUES (${1}, ${"inside"})`)
        const rows = yield* Effect.orDie(sql<{ note: string }>`SELECT note FROM lean_notes WHERE id = ${1}`)
        return yield* Effect.fail({ rows })
      })).pipe(Effect.catchTag("SqlError", Effect.die), Effect.flip)
    )
    expect(seen.rows).toEqual([{ note: "inside" }])
    expect(await withSql((sql) => sql`SELECT note FROM lean_notes`)).toEqual([])
  })

  it("a transaction commits what its body wrote; a savepoint inside it rolls back alone", async () => {
    await withSql((sql) => sql`DELETE FROM lean_notes`)
    const inner = await withSql((sql) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* Effect.orDie(sql`INSERT INTO lean_notes (id, note) VALUES (${2}, ${"outer"})`)
        // The nested one is a savepoint on the connection the outer one reserved.
        return yield* sql.withTransaction(Effect.gen(function*() {
          yield* Effect.orDie(sql`INSERT INTO lean_notes (id, note) VALUES (${3}, ${"inner"})`)
          return yield* Effect.fail("inner gives up" as const)
        })).pipe(Effect.flip)
      })).pipe(Effect.orDie)
    )
    expect(inner).toBe("inner gives up")
    expect(await withSql((sql) => sql`SELECT id, note FROM lean_notes ORDER BY id`)).toEqual([{ id: 2, note: "outer" }])
  })

  it("savepoints nest: a failed statement two levels down rolls back to its own savepoint only", async () => {
    await withSql((sql) => sql`DELETE FROM lean_notes`)
    const outcome = await withSql((sql) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* Effect.orDie(sql`INSERT INTO lean_notes (id, note) VALUES (${10}, ${"outer"})`)
        const middle = yield* sql.withTransaction(Effect.gen(function*() {
          yield* Effect.orDie(sql`INSERT INTO lean_notes (id, note) VALUES (${11}, ${"middle"})`)
          // A duplicate key: the server aborts the transaction until the savepoint is rolled back to.
          const failed = yield* sql.withTransaction(sql`INSERT INTO lean_notes (id, note) VALUES (${10}, ${"again"})`).pipe(Effect.flip)
          yield* Effect.orDie(sql`INSERT INTO lean_notes (id, note) VALUES (${12}, ${"after"})`)
          return failed._tag
        }))
        return middle
      })).pipe(Effect.orDie)
    )
    expect(outcome).toBe("SqlError")
    expect(await withSql((sql) => sql`SELECT id, note FROM lean_notes ORDER BY id`)).toEqual([
      { id: 10, note: "outer" },
      { id: 11, note: "middle" },
      { id: 12, note: "after" }
    ])
  })

  it("an interrupted savepoint rolls back alone and the transaction goes on", async () => {
    await withSql((sql) => sql`DELETE FROM lean_notes`)
    const rows = await withSql((sql) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* Effect.orDie(sql`INSERT INTO lean_notes (id, note) VALUES (${20}, ${"kept"})`)
        yield* sql.withTransaction(Effect.zipRight(Effect.orDie(sql`INSERT INTO lean_notes (id, note) VALUES (${21}, ${"gone"})`), Effect.never)).pipe(
          Effect.timeout("20 millis"),
          Effect.ignore
        )
        return yield* Effect.orDie(sql<{ id: number }>`SELECT id FROM lean_notes ORDER BY id`)
      })).pipe(Effect.orDie)
    )
    expect(rows).toEqual([{ id: 20 }])
    expect(await withSql((sql) => sql`SELECT id FROM lean_notes ORDER BY id`)).toEqual([{ id: 20 }])
  })

  it("an interrupted transaction rolls back and gives its connection back", async () => {
    await withSql((sql) => sql`DELETE FROM lean_notes`)
    // More than the pool holds (10): a connection kept by any of them would stall the last.
    for (let i = 0; i < 15; i++) {
      await withSql((sql) =>
        sql.withTransaction(Effect.zipRight(Effect.orDie(sql`INSERT INTO lean_notes (id, note) VALUES (${100 + i}, ${"gone"})`), Effect.never)).pipe(
          Effect.timeout("20 millis"),
          Effect.ignore
        )
      )
    }
    const rows = await withSql((sql) =>
      sql.withTransaction(sql<{ n: number }>`SELECT count(*)::int AS n FROM lean_notes`).pipe(Effect.timeout("5 seconds"), Effect.orDie)
    )
    expect(rows).toEqual([{ n: 0 }])
  })

  it("a traced transaction takes the library's path, with its span", async () => {
    const spans: Array<string> = []
    const watched = <A, E, R>(effect: Effect.Effect<A, E, R>, enabled: boolean) =>
      Effect.flatMap(Effect.tracer, (native) =>
        effect.pipe(
          Effect.withTracer(Tracer.make({
            span: (name, ...rest) => {
              spans.push(name)
              return native.span(name, ...rest)
            },
            context: (f, fiber) => native.context(f, fiber)
          })),
          Effect.withTracerEnabled(enabled)
        ))
    await withSql((sql) => watched(sql.withTransaction(sql`SELECT 1`), true))
    expect(spans).toContain("sql.transaction")
    spans.length = 0
    await withSql((sql) => watched(sql.withTransaction(sql`SELECT 1`), false))
    expect(spans).toEqual([])
  })

  it("a transformer still sees every statement", async () => {
    const captured: Array<string> = []
    const rows = await withSql((sql) =>
      Statement.withTransformer(
        sql<{ n: number }>`SELECT ${7}::int AS n`,
        (self) =>
          Effect.sync(() => {
            captured.push(self.compile()[0])
            return self
          })
      )
    )
    expect(rows).toEqual([{ n: 7 }])
    expect(captured).toEqual(["SELECT $1::int AS n"])
  })

  it("takes far fewer runtime steps than the library's path", async () => {
    const steps = async (watched: boolean) => {
      const counter = new StepCounter()
      await withSql((sql) => {
        const query = sql<{ n: number }>`SELECT ${1}::int AS n`
        return (watched ? Statement.withTransformer(query, Effect.succeed) : query).pipe(
          Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision)),
          Effect.supervised(counter)
        )
      })
      return counter.steps
    }
    const lean = await steps(false)
    const library = await steps(true)
    expect(lean, `lean ${lean} steps, library ${library}`).toBeLessThan(library / 2)
  })
})
