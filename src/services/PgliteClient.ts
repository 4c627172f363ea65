import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Scope, Stream } from "effect"
import { CommitWithNext } from "./TransactionPipeline.js"
import { type PgliteWorker, startPgliteWorker, type WorkerResult } from "./PgliteWorker.js"

/**
 * An `SqlClient` over the embedded PostgreSQL (PGlite), which runs on a worker thread of its
 * own (see `PgliteWorker.ts`). Statements compile with the PostgreSQL compiler of
 * `@effect/sql-pg`, so the same SQL runs here and on a server.
 *
 * PGlite has a single connection. A transaction takes the only permit for its whole
 * lifetime, so no other statement can interleave with it; plain statements wait for it.
 */
/** Statements that change nothing until a later one runs, so they can wait to go with it. */
const HOLDABLE = /^(BEGIN|SAVEPOINT \w+)$/
const ROLLBACK_TO = /^ROLLBACK TO SAVEPOINT (\w+)$/
const NOTHING: WorkerResult = { rows: [], fields: [], affectedRows: undefined }

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

    /**
     * BEGIN and SAVEPOINTs are held and sent in one message with the next statement, and
     * COMMIT with the statement a caller names as its last (`commitWithNextStatement`), as
     * `TransactionPipeline` does on a server: each message to the thread and back is a wake-up
     * of both threads. Transactions hold the only permit, so one state serves the connection.
     */
    let held: Array<string> = []
    let commitNext = false
    let committed = false

    const query = (text: string, params: ReadonlyArray<unknown>, rowMode?: "array") => {
      const before = held
      held = []
      const commit = commitNext
      commitNext = false
      const sent = run(db, { op: "query", text, params, rowMode, before, commit })
      return commit
        ? Effect.tap(sent, () => {
          committed = true
        })
        : sent
    }

    const exec = (text: string) => run(db, { op: "exec", text })

    /** Statements without parameters, by the simple-query path (several in one text). */
    const unprepared = (text: string): Effect.Effect<WorkerResult, SqlError> => {
      if (HOLDABLE.test(text)) {
        if (text === "BEGIN") committed = false
        held.push(text)
        return Effect.succeed(NOTHING)
      }
      const rollbackTo = ROLLBACK_TO.exec(text)
      if (rollbackTo !== null) {
        const at = held.lastIndexOf(`SAVEPOINT ${rollbackTo[1]}`)
        if (at >= 0) {
          // The savepoint never went out, so nothing happened after it.
          held = held.slice(0, at + 1)
          return Effect.succeed(NOTHING)
        }
      }
      if (text === "COMMIT" || text === "ROLLBACK") {
        commitNext = false
        const before = held
        held = []
        // A transaction none of whose statements went out: nothing to end.
        if (before[0] === "BEGIN") return Effect.succeed(NOTHING)
        if (committed && text === "COMMIT") {
          committed = false
          return Effect.succeed(NOTHING)
        }
        committed = false
        return exec(text)
      }
      const before = held
      held = []
      return exec([...before, text].join(";\n"))
    }

    const execute = (
      text: string,
      params: ReadonlyArray<unknown>,
      transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
    ) =>
      Effect.map(query(text, params), (result) => transformRows ? transformRows(result.rows) : result.rows)

    const connection: Connection & { readonly [CommitWithNext]: () => boolean } = {
      [CommitWithNext]: () => {
        commitNext = true
        return true
      },
      execute,
      executeRaw: (text, params) => query(text, params),
      executeValues: (text, params) => Effect.map(query(text, params, "array"), (result) => result.rows),
      // Migrations and other multi-statement scripts go through PGlite's simple-query path.
      executeUnprepared: (text, params, transformRows) =>
        params.length > 0
          ? execute(text, params, transformRows)
          : Effect.map(unprepared(text), (result) => transformRows ? transformRows(result.rows) : result.rows),
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
