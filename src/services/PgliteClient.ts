import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Scope, Stream } from "effect"
import { type PgliteWorker, startPgliteWorker, type WorkerResult } from "./PgliteWorker.js"

/**
 * An `SqlClient` over the embedded PostgreSQL (PGlite), which runs on a worker thread of its
 * own (see `PgliteWorker.ts`). Statements compile with the PostgreSQL compiler of
 * `@effect/sql-pg`, so the same SQL runs here and on a server.
 *
 * PGlite has a single connection. A transaction takes the only permit for its whole
 * lifetime, so no other statement can interleave with it; plain statements wait for it.
 */
export const makePgliteClient = (dataDir: string | undefined) =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => startPgliteWorker(dataDir),
        catch: (cause) => new SqlError({ cause, message: `Could not open the embedded database${dataDir ? ` in ${dataDir}` : ""}` })
      }),
      (worker) => Effect.promise(() => worker.close()).pipe(Effect.ignore)
    )

    const run = (worker: PgliteWorker, request: Parameters<PgliteWorker["send"]>[0]) =>
      Effect.async<WorkerResult, SqlError>((resume) =>
        // Interrupted, the caller stops waiting; the statement still runs, as PGlite cannot cancel one.
        Effect.sync(worker.send(request, (cause, result) =>
          resume(
            cause === undefined
              ? Effect.succeed(result!)
              : Effect.fail(new SqlError({ cause, message: "Failed to execute statement" }))
          )))
      )

    const query = (text: string, params: ReadonlyArray<unknown>, rowMode?: "array") =>
      run(db, { op: "query", text, params, rowMode })

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
          : Effect.map(run(db, { op: "exec", text }), (result) => transformRows ? transformRows(result.rows) : result.rows),
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
