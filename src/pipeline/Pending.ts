import type * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import * as Crypto from "node:crypto"

/**
 * What only the commit statement knows while a mutation's body runs: the wire JSON of the
 * row it writes last (`Tx.updateAtCommit`, `Tx.insertAtCommit`) and the id of a row it
 * inserts. A body holds them as `Pending<W>` and `PendingId`, which the type checker keeps
 * from being read as a `W` or a number: they are passed on (into events, into the body's
 * result) and serialise to markers that the commit statement replaces in SQL. The markers
 * hold a per-process random part, and JSON.stringify escapes quotes inside strings, so user
 * text can never contain one.
 */
const NONCE = Crypto.randomBytes(8).toString("hex")
const PENDING_WIRE_KEY = `@@steady-pending-wire-${NONCE}`
/** How a marker key shows in a JSON text that has it as a member (`{…, "key":true, …}`). */
const memberOf = (key: string) => JSON.stringify({ [key]: true }).slice(1, -1)
/** The member a `Pending` serialises with, standing for the wire's members. */
export const PENDING_WIRE_MEMBER = memberOf(PENDING_WIRE_KEY)
/** The member an inserted row's undo record carries, standing for the row as inserted. */
export const PENDING_ROW_KEY = `@@steady-pending-row-${NONCE}`
export const PENDING_ROW_MEMBER = memberOf(PENDING_ROW_KEY)
const PENDING_ID = `@@steady-pending-id-${NONCE}`
/** How a `PendingId` shows in JSON text. */
export const PENDING_ID_JSON = JSON.stringify(PENDING_ID)

/** The id of the row the commit statement inserts, known once it has run. */
export class PendingId {
  toJSON(): string {
    return PENDING_ID
  }
  toString(): string {
    return PENDING_ID
  }
}

/**
 * A value of wire type `W` the commit statement renders: the row's wire JSON, followed by
 * the members added with `with`. The pipeline resolves a body's result that is a `Pending`
 * into its `W` once the statement has run.
 */
export class Pending<W> {
  /** Never set: carries `W` for the type checker, and keeps a `Pending<W>` from passing for a `W`. */
  private declare readonly value: W

  constructor(private readonly extra: Readonly<Record<string, unknown>> = {}) {}

  /** The wire with `extra`'s members after its own (later members win, as in a spread). */
  with<X extends Record<string, unknown>>(extra: X): Pending<Omit<W, keyof X> & X> {
    return new Pending({ ...this.extra, ...extra })
  }

  /** The marker member first, then the extra members: the statement puts the wire's members in the marker's place. */
  toJSON(): Record<string, unknown> {
    return { [PENDING_WIRE_KEY]: true, ...this.extra }
  }

  /** The value, given the wire JSON text the commit statement rendered. */
  resolve(wireText: string): W {
    return { ...JSON.parse(wireText), ...this.extra }
  }
}

/** The members of a JSON object's text (what goes in place of a marker member), in SQL. */
export const membersSql = (sql: SqlClient.SqlClient, json: Fragment) =>
  sql`(SELECT substr(j, 2, length(j) - 2) FROM (SELECT ${json} AS j) AS s)`

/** A JSON text in SQL with every `Pending`'s marker member replaced by the members of `wire` (SQL of a JSON object's text). */
export const withWireSql = (sql: SqlClient.SqlClient, text: Fragment, wire: Fragment): Fragment =>
  sql`replace(${text}, ${PENDING_WIRE_MEMBER}::text, ${membersSql(sql, wire)})`

/** The same in TypeScript, for a JSON text and the wire text the statement answered. */
export const withWire = (text: string, wire: string): string =>
  text.includes(PENDING_WIRE_MEMBER) ? text.split(PENDING_WIRE_MEMBER).join(wire.slice(1, -1)) : text

/** Whether a JSON text holds a `Pending`. */
export const holdsPending = (text: string): boolean => text.includes(PENDING_WIRE_MEMBER)
