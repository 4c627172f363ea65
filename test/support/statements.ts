import { HttpServerRequest } from "@effect/platform"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Statement from "@effect/sql/Statement"
import { Context, Effect, FiberRef, FiberRefs, type Layer, Option } from "effect"

/** The request header that names the requests whose statements a test counts. */
export const STATEMENT_TAG_HEADER = "x-test-statement-tag"

export interface LoggedStatement {
  /** The tag header of the HTTP request whose fiber sent it; undefined for background work. */
  readonly tag: string | undefined
  /** Sent while serving an HTTP request (not by background work). */
  readonly inRequest: boolean
  /** The HTTP method of that request. */
  readonly method: string | undefined
  readonly sql: string
  /**
   * The transaction (or savepoint) it ran in, as `SqlClient.TransactionConnection` names it:
   * one object per transaction, compared by identity; undefined outside a transaction.
   */
  readonly transaction: object | undefined
}

/**
 * Observes every statement the service sends through its SqlClient (a statement
 * transformer, so both databases and every query style are seen), attributed to the HTTP
 * request that sent it. BEGIN and COMMIT do not pass through statements and are not listed.
 */
export const statementLog = (): { readonly layer: Layer.Layer<never>; readonly entries: Array<LoggedStatement> } => {
  const entries: Array<LoggedStatement> = []
  const layer = Statement.setTransformer((statement, _sql, refs) =>
    Effect.sync(() => {
      const context = FiberRefs.getOrDefault(refs, FiberRef.currentContext)
      const request = Context.getOption(context, HttpServerRequest.HttpServerRequest)
      const tag = Option.isSome(request) ? request.value.headers[STATEMENT_TAG_HEADER] : undefined
      const transaction = Context.getOption(context, SqlClient.TransactionConnection)
      entries.push({
        transaction: Option.isSome(transaction) ? transaction.value : undefined,
        tag,
        inRequest: Option.isSome(request),
        method: Option.isSome(request) ? request.value.method : undefined,
        sql: statement.compile()[0]
      })
      return statement
    })
  )
  return { layer, entries }
}
