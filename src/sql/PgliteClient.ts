import * as Reactivity from "@effect/experimental/Reactivity"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import { SqlError } from "@effect/sql/SqlError"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Deferred, Effect, Layer, Scope, Stream } from "effect"
import { DEFAULT_EMBEDDED_MEMORY, type EmbeddedMemory, type PgliteWorker, startPgliteWorker, type WorkerResult } from "./PgliteWorker.js"
import { afterFailure, DEFAULT_CAPACITY, namedQuery, StatementCache } from "./PreparedStatements.js"
import { AnswersAtOnce, CommitWithNext, HeldStatements } from "./TransactionPipeline.js"

/**
 * An `SqlClient` over the embedded PostgreSQL (PGlite), which runs on a worker thread of its
 * own (see `PgliteWorker.ts`). Statements compile with the PostgreSQL compiler of
 * `@effect/sql-pg`, so the same SQL runs here and on a server.
 *
 * PGlite has a single connection. A transaction takes the only permit until its COMMIT is
 * sent, so no other statement can interleave with it; plain statements wait for it.
 *
 * That connection keeps its parameterized statements prepared, with the same bounds and
 * renewal as a server connection (`PreparedStatements`): this side names them, the thread
 * prepares a name on its first run.
 */
const NOTHING: WorkerResult = { rows: [], fields: [], affectedRows: undefined }

export const makePgliteClient = (
  dataDir: string | undefined,
  preparedStatements: number = DEFAULT_CAPACITY,
  memory: EmbeddedMemory = DEFAULT_EMBEDDED_MEMORY
) =>
  Effect.gen(function*() {
    const db = yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () => startPgliteWorker(dataDir, memory),
        catch: (cause) => new SqlError({ cause, message: `Could not open the embedded database${dataDir ? ` in ${dataDir}` : ""}` })
      }),
      (worker) => Effect.promise(() => worker.close()).pipe(Effect.ignore)
    )

    /**
     * Sends a request; `posted` runs as soon as it is on its way to the thread (not when
     * a request that could not be copied there failed at once).
     */
    const run = (worker: PgliteWorker, request: Parameters<PgliteWorker["send"]>[0], posted?: () => void) =>
      Effect.async<WorkerResult, SqlError>((resume) => {
        let answered = false
        const cancel = worker.send(request, (cause, result) => {
          answered = true
          resume(
            cause === undefined
              ? Effect.succeed(result!)
              : Effect.fail(new SqlError({ cause, message: "Failed to execute statement" }))
          )
        })
        if (!answered) posted?.()
        // Interrupted, the caller stops waiting; the statement still runs, as PGlite cannot cancel one.
        return Effect.sync(cancel)
      })

    const exec = (text: string) => run(db, { op: "exec", text })

    const statements = new StatementCache(preparedStatements)
    /** Statements the cache let go of, dropped by the thread before the next named one runs. */
    const dropped: Array<string> = []
    const drop = (name: string) => {
      dropped.push(name)
    }

    const permit = yield* Effect.makeSemaphore(1)

    /**
     * A connection for statements run one at a time, or for one transaction.
     *
     * BEGIN and SAVEPOINTs are held and sent in one message with the next statement, and
     * COMMIT with the statement a caller names as its last (`commitWithNextStatement`), as
     * `TransactionPipeline` does on a server: each message to the thread and back is a wake-up
     * of both threads.
     *
     * A transaction holds the only permit, so nothing interleaves with it, but only from its
     * first statement that goes out (with the held BEGIN) until its COMMIT is on its way:
     * - before that first statement nothing has happened in the database, so the work a
     *   keyed request does before its first statement (routing, decoding) waits for nobody;
     * - the thread runs messages in the order they were posted, so whatever is sent after the
     *   COMMIT runs after it, and after it the connection is out of the transaction whatever
     *   happened (a failed statement leaves the transaction aborted, and the COMMIT behind it
     *   rolls it back). The caller's own COMMIT or ROLLBACK after that is answered here.
     * On a write path that is one wake-up of both threads less inside the only permit.
     */
    const makeConnection = (claim: Effect.Effect<void>, letGo: () => void) => {
      const held = new HeldStatements()
      let commitNext = false
      let ended = false

      /** Sends what `request` makes of the held statements, once this connection holds the permit. */
      const send = (request: (before: ReadonlyArray<string>) => Effect.Effect<WorkerResult, SqlError>, commits = false) =>
        ended
          ? Effect.fail(new SqlError({ message: "The embedded database's transaction has already ended" }))
          : Effect.zipRight(claim, Effect.suspend(() => request(held.take(commits))))

      const query = (text: string, params: ReadonlyArray<unknown>, rowMode?: "array") =>
        Effect.suspend(() => {
          const commit = commitNext
          commitNext = false
          return send((before) => runQuery(text, params, rowMode, before, commit), commit)
        })

      const runQuery = (
        text: string,
        params: ReadonlyArray<unknown>,
        rowMode: "array" | undefined,
        before: ReadonlyArray<string>,
        commit: boolean
      ) => {
        const named = namedQuery(statements, text, params, drop)
        return run(
          db,
          { op: "query", text, params, rowMode, before, commit, name: named?.name, close: named && dropped.splice(0) },
          commit
            ? () => {
              ended = true
              letGo()
            }
            : undefined
        ).pipe(
          Effect.tapError((error) => Effect.sync(() => named && afterFailure(statements, named, error.cause, undefined, drop)))
        )
      }

      /**
       * A control statement that needs nothing sent: a BEGIN or SAVEPOINT (held), a ROLLBACK TO
       * one never sent, a COMMIT or ROLLBACK after the COMMIT already went out with the last
       * statement, or of a transaction none of whose statements did.
       */
      const answersAtOnce = (text: string): boolean => {
        if (held.absorbs(text)) return true
        if (text !== "COMMIT" && text !== "ROLLBACK") return false
        if (!held.startsUnsent() && !ended) return false
        commitNext = false
        held.take()
        return true
      }

      /** Statements without parameters, by the simple-query path (several in one text). */
      const unprepared = (text: string): Effect.Effect<WorkerResult, SqlError> => {
        if (answersAtOnce(text)) return Effect.succeed(NOTHING)
        if (text === "COMMIT" || text === "ROLLBACK") {
          commitNext = false
          held.take()
          return send(() => exec(text))
        }
        return send((before) => exec([...before, text].join(";\n")))
      }

      const execute = (
        text: string,
        params: ReadonlyArray<unknown>,
        transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
      ) => Effect.map(query(text, params), (result) => transformRows ? transformRows(result.rows) : result.rows)

      const connection: Connection & {
        readonly [CommitWithNext]: () => boolean
        readonly [AnswersAtOnce]: (text: string) => boolean
      } = {
        [CommitWithNext]: () => {
          commitNext = true
          return true
        },
        [AnswersAtOnce]: answersAtOnce,
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
      return connection
    }

    // Statements outside a transaction wait for the permit only to be sent after it.
    const plain = makeConnection(Effect.void, () => {})
    const acquirer = permit.withPermits(1)(Effect.succeed(plain))
    const transactionAcquirer = Effect.gen(function*() {
      const scope = yield* Effect.scope
      const claimed = yield* Deferred.make<void>()
      let state: "free" | "claiming" | "holds" | "done" = "free"
      // Statements of one transaction sent side by side wait for the same permit.
      const claim: Effect.Effect<void> = Effect.suspend(() => {
        switch (state) {
          case "holds":
            return Effect.void
          case "claiming":
            return Deferred.await(claimed)
          case "done":
            return Effect.dieMessage("A statement of an embedded transaction that has ended")
        }
        state = "claiming"
        return Effect.uninterruptibleMask((restore) =>
          Effect.zipRight(
            restore(permit.take(1)),
            Effect.suspend((): Effect.Effect<unknown> => {
              // Let go of meanwhile (its scope closed while waiting): hand it straight back.
              if (state === "done") return permit.release(1)
              state = "holds"
              return Deferred.succeed(claimed, undefined)
            })
          ).pipe(
            Effect.onInterrupt(() => {
              state = "done"
              return Deferred.interrupt(claimed)
            }),
            Effect.asVoid
          )
        )
      })
      const letGo = () => {
        const holds = state === "holds"
        state = "done"
        if (holds) Effect.runSync(permit.release(1))
      }
      yield* Scope.addFinalizer(scope, Effect.sync(letGo))
      return makeConnection(claim, letGo)
    })

    return yield* SqlClient.make({
      acquirer,
      transactionAcquirer,
      compiler: PgClient.makeCompiler(),
      spanAttributes: [["db.system", "postgresql"], ["db.engine", "pglite"]]
    })
  })

export const layerPglite = (
  dataDir: string | undefined,
  preparedStatements?: number,
  memory?: EmbeddedMemory
): Layer.Layer<SqlClient.SqlClient, SqlError> =>
  Layer.scoped(SqlClient.SqlClient, makePgliteClient(dataDir, preparedStatements, memory)).pipe(Layer.provide(Reactivity.layer))
