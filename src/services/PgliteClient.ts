import { PGlite } from "@electric-sql/pglite"
import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Scope, Stream } from "effect"

/**
 * An `SqlClient` over the in-process PostgreSQL (PGlite). Statements compile with the
 * PostgreSQL compiler of `@effect/sql-pg`, so the same SQL runs here and on a server.
 *
 * PGlite has a single connection. A transaction takes the only permit for its whole
 * lifetime, so no other statement can interleave with it; plain statements wait for it.
 */
export const makePgliteClient = (dataDir: string | undefined) =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          const instance = new PGlite(dataDir)
          await instance.waitReady
          return instance
        },
        catch: (cause) => new SqlError({ cause, message: `Could not open the embedded database${dataDir ? ` in ${dataDir}` : ""}` })
      }),
      (instance) => Effect.promise(() => instance.close()).pipe(Effect.ignore)
    )
    yield* Effect.promise(() => db.exec("SET TIME ZONE 'UTC'"))

    const fail = (cause: unknown) => new SqlError({ cause, message: "Failed to execute statement" })

    const query = (text: string, params: ReadonlyArray<unknown>, rowMode?: "array") =>
      Effect.tryPromise({
        try: () => db.query<any>(text, params as Array<unknown>, rowMode ? { rowMode } : undefined),
        catch: fail
      })

    const execute = (
      text: string,
      params: ReadonlyArray<unknown>,
      transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
    ) =>
      Effect.map(query(text, params), (result) => transformRows ? transformRows(result.rows) : result.rows)

    const connection: Connection = {
      execute,
      executeRaw: (text, params) => query(text, params),
      executeValues: (text, params) => Effect.map(query(text, params, "array"), (result) => result.rows),
      // Migrations and other multi-statement scripts go through PGlite's simple-query path.
      executeUnprepared: (text, params, transformRows) =>
        params.length > 0
          ? execute(text, params, transformRows)
          : Effect.map(
            Effect.tryPromise({ try: () => db.exec(text), catch: fail }),
            (results) => {
              const rows = (results.at(-1)?.rows ?? []) as ReadonlyArray<any>
              return transformRows ? transformRows(rows) : rows
            }
          ),
      executeStream: (text, params, transformRows) =>
        Stream.flatMap(Stream.fromEffect(execute(text, params, transformRows)), Stream.fromIterable)
    }

    const permit = yield* Effect.makeSemaphore(1)
    const acquirer = permit.withPermits(1)(Effect.succeed(connection))
    const transactionAcquirer = Effect.uninterruptibleMask((restore) =>
      Effect.as(
        Effect.zipRight(
          restore(permit.take(1)),
          Effect.tap(Effect.scope, (scope) => Scope.addFinalizer(scope, permit.release(1)))
        ),
        connection
      )
    )

    return yield* SqlClient.make({
      acquirer,
      transactionAcquirer,
      compiler: PgClient.makeCompiler(),
      spanAttributes: [["db.system", "postgresql"], ["db.engine", "pglite"]]
    })
  })

export const layerPglite = (dataDir: string | undefined): Layer.Layer<SqlClient.SqlClient, SqlError> =>
  Layer.scoped(SqlClient.SqlClient, makePgliteClient(dataDir)).pipe(Layer.provide(Reactivity.layer))
