import * as SqlClient from "@effect/sql/SqlClient"
import type { Connection } from "@effect/sql/SqlConnection"
import type { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { Context, Effect, Exit, FiberRef, Scope } from "effect"
import { type Local, locallyAll } from "../kernel/FiberLocals.js"
import { answersAtOnce } from "./PgGuard.js"
import { retryingConflicts, runAgainAfter } from "./TransactionConflicts.js"

/**
 * Statements that run straight on their connection while nothing watches them. Run as an
 * effect, an `@effect/sql` statement opens a span, a scope and a second fiber-runtime step
 * around the query: about 0.05 ms of CPU per statement, twice what the `pg` query itself
 * costs, and one to three statements are all most requests send. Our connections need neither:
 * the acquirer of both clients (`PgClient`'s and `PgliteClient`'s) holds nothing a scope would
 * release, and with tracing off the span is a no-op. So a statement of this client compiles
 * itself and runs on the connection the library would have handed it (the transaction's, or
 * one from the pool), with the same rows, errors and interruption.
 *
 * It takes the library's own path whenever someone looks: with tracing on (the statement's
 * span) and under a statement transformer (`Statement.withTransformer`, which the plan
 * tests use to capture statements).
 */

/** What a statement of `@effect/sql` carries besides its public interface. */
interface Primitive {
  readonly acquirer: Effect.Effect<Connection, unknown>
  readonly transformRows: (<A extends object>(rows: ReadonlyArray<A>) => ReadonlyArray<A>) | undefined
  readonly compile: () => readonly [string, ReadonlyArray<unknown>]
}

const isPrimitive = (value: unknown): value is Primitive =>
  typeof value === "object" && value !== null && "acquirer" in value && "compile" in value &&
  Effect.isEffect((value as { acquirer: unknown }).acquirer)

type Committable = Primitive & { commit: () => Effect.Effect<unknown, unknown> }

/** The statement as the library runs it: its class's `commit`, past the own one set below. */
const viaLibrary = (statement: Committable) => (Object.getPrototypeOf(statement) as Committable).commit.call(statement)

const run = (statement: Committable) =>
  Effect.withFiberRuntime<unknown, unknown>((fiber) => {
    if (fiber.getFiberRef(FiberRef.currentTracerEnabled) || fiber.getFiberRef(Statement.currentTransformer)._tag === "Some") {
      return viaLibrary(statement)
    }
    const [text, params] = statement.compile()
    return Effect.flatMap(statement.acquirer, (connection) => connection.execute(text, params, statement.transformRows))
  })

/** Has `statement` (a statement or anything else the client's tag returns) run lean when committed. */
const lean = <S>(statement: S): S => {
  if (!isPrimitive(statement)) return statement
  const self = statement as unknown as Committable
  // An own property shadows the class's `commit`, which the runtime calls to run it. Assigned,
  // not defined: every statement then takes the same cached shape transition.
  ;(self as { commit: () => Effect.Effect<unknown, unknown> }).commit = () => run(self)
  return statement
}

/**
 * The context setting (for `locallyAll`) under which statements run on `connection`, inside a
 * transaction `depth` savepoints deep, where the library looks for it.
 */
export const onTransactionConnection = (context: Context.Context<never>, connection: Connection, depth: number): Local =>
  [FiberRef.currentContext, Context.add(context, SqlClient.TransactionConnection, [connection, depth] as const)]

const NO_ROWS: Effect.Effect<ReadonlyArray<never>> = Effect.succeed([])

/**
 * A transaction's control statement (BEGIN, SAVEPOINT, COMMIT, ROLLBACK, ROLLBACK TO) on its
 * connection. Most need no round trip (held for the next statement, or already sent with the
 * last one: `TransactionPipeline`), and the connection says so at once, which spares the
 * query's timer, callback and asynchronous resume: a write has two or three of them.
 * The connection is asked when this is called, so call it where the statement runs (inside
 * the step that runs it), not ahead.
 */
export const control = (connection: Connection, text: string): Effect.Effect<ReadonlyArray<unknown>, SqlError> =>
  answersAtOnce(connection, text) ? NO_ROWS : connection.executeUnprepared(text, [], undefined)

/**
 * `withTransaction` while nothing watches: the library's steps without its span (tracing off,
 * a no-op costing about a tenth of a small write's fiber-runtime steps).
 * - Outermost: BEGIN, the body with the connection as its `TransactionConnection`, COMMIT or
 *   ROLLBACK, the connection released with the scope it was reserved in.
 * - Nested: `SAVEPOINT effect_sql_<depth>`, the body one level deeper, and on failure
 *   `ROLLBACK TO` it (on success nothing, as the library does). A keyed write's own
 *   transaction is one (`Idempotency.run` holds the outer one).
 * A traced one takes the library's path; both find the connection where the library puts
 * it, under the same savepoint names, so they nest in either. An outermost one that
 * PostgreSQL ends for a conflict (a deadlock) runs again (`TransactionConflicts`).
 */
const leanTransaction = (client: SqlClient.SqlClient): SqlClient.SqlClient["withTransaction"] => {
  const library = client.withTransaction
  return <R, E, A>(effect: Effect.Effect<A, E, R>) =>
    Effect.withFiberRuntime<A, E | SqlError, R>((fiber) => {
      const context = fiber.currentContext
      const outer = Context.getOption(context, SqlClient.TransactionConnection)
      if (fiber.getFiberRef(FiberRef.currentTracerEnabled)) {
        return outer._tag === "Some" ? library(effect) : retryingConflicts(library(effect))
      }
      if (outer._tag === "Some") {
        const [connection, depth] = outer.value
        const name = `effect_sql_${depth + 1}`
        return Effect.uninterruptibleMask((restore) =>
          control(connection, `SAVEPOINT ${name}`).pipe(
            Effect.zipRight(Effect.exit(locallyAll(restore(effect), () => [onTransactionConnection(context, connection, depth + 1)]))),
            Effect.flatMap((exit) =>
              Exit.isSuccess(exit) ? exit : Effect.zipRight(Effect.orDie(control(connection, `ROLLBACK TO SAVEPOINT ${name}`)), exit)
            )
          )
        )
      }
      return Effect.uninterruptibleMask((restore) => {
        const attempt = (n: number): Effect.Effect<A, E | SqlError, R> =>
          Effect.flatMap(Scope.make(), (scope) =>
            Effect.flatMap(Scope.extend(client.reserve, scope), (connection) =>
              control(connection, "BEGIN").pipe(
                Effect.zipRight(locallyAll(restore(effect), () => [onTransactionConnection(context, connection, 0)])),
                Effect.exit,
                Effect.flatMap((exit) =>
                  Effect.zipRight(
                    Effect.ensuring(Effect.orDie(control(connection, Exit.isSuccess(exit) ? "COMMIT" : "ROLLBACK")), Scope.close(scope, exit)),
                    Exit.isSuccess(exit)
                      ? exit
                      : Effect.flatMap(runAgainAfter(exit.cause, n), (again) => again ? attempt(n + 1) : exit)
                  )
                )
              )
            ))
        return attempt(0)
      })
    })
}

/** The client with every statement it makes (tagged template and `unsafe`) running lean, and its transactions. */
export const withLeanStatements = (client: SqlClient.SqlClient): SqlClient.SqlClient => {
  const tag = ((...args: ReadonlyArray<unknown>) => lean((client as unknown as (...a: ReadonlyArray<unknown>) => unknown)(...args)))
  return Object.assign(tag, client, {
    unsafe: (...args: Parameters<SqlClient.SqlClient["unsafe"]>) => lean(client.unsafe(...args)),
    withTransaction: leanTransaction(client)
  }) as unknown as SqlClient.SqlClient
}
