import type * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import * as Crypto from "node:crypto"

/**
 * Stand-ins for what only the commit statement knows: the wire JSON of its deferred row
 * (`updateAtCommit`) and the id of the row it inserts with it. The key holds a per-process
 * random part, and JSON.stringify escapes quotes inside strings, so user text can never
 * contain the stand-in's serialized form.
 */
const NONCE = Crypto.randomBytes(8).toString("hex")
const PENDING_WIRE_KEY = `@@steady-pending-wire-${NONCE}`
export const PENDING_WIRE_JSON = JSON.stringify({ [PENDING_WIRE_KEY]: true })
/** How a stand-in key shows in a JSON text that spread it into an object (`{…, "key":true, …}`). */
const memberOf = (key: string) => JSON.stringify({ [key]: true }).slice(1, -1)
const PENDING_WIRE_MEMBER = memberOf(PENDING_WIRE_KEY)
export const PENDING_ROW_KEY = `@@steady-pending-row-${NONCE}`
export const PENDING_ROW_MEMBER = memberOf(PENDING_ROW_KEY)
export const PENDING_ID = `@@steady-pending-id-${NONCE}`
export const PENDING_ID_JSON = JSON.stringify(PENDING_ID)
/**
 * The stand-in where a row id is typed: only serialized (undo entry, events, feed) before the
 * commit statement replaces it, never compared or sent as a parameter.
 */
export const STAND_IN_ID = PENDING_ID as unknown as number
/** The stand-in where a row's wire JSON is typed: only spread into the body's result or put in events' data. */
export const standInWire = <W>(): W => ({ [PENDING_WIRE_KEY]: true }) as W

/** The body's result with the pending wire spread into it replaced by the rendered one. */
export const resolvePending = <A>(result: A, wire: Record<string, unknown> | undefined): A => {
  if (wire === undefined || typeof result !== "object" || result === null || !(PENDING_WIRE_KEY in result)) return result
  const { [PENDING_WIRE_KEY]: _pending, ...rest } = result as Record<string, unknown>
  return { ...wire, ...rest } as A
}

/** The members of a JSON object's text (what goes in place of a stand-in member), in SQL. */
export const membersSql = (sql: SqlClient.SqlClient, json: Fragment) => sql`(SELECT substr(j, 2, length(j) - 2) FROM ${json} AS s(j))`

/**
 * A JSON text (an answer's body) rendered from a result that still held the stand-in of a
 * handed-over commit statement, with the members of `wire` (the JSON text the statement
 * rendered) in its place; `spliceWireSql` does the same in SQL, for the record of the answer
 * written by that statement.
 */
export const spliceWire = (text: string, wire: string | null): string =>
  wire === null || !text.includes(PENDING_WIRE_MEMBER) ? text : text.split(PENDING_WIRE_MEMBER).join(wire.slice(1, -1))

export const spliceWireSql = (sql: SqlClient.SqlClient, text: string, wire: Fragment | undefined): Fragment =>
  wire === undefined || !text.includes(PENDING_WIRE_MEMBER)
    ? sql`${text}::text`
    : sql`replace(${text}::text, ${PENDING_WIRE_MEMBER}::text, ${membersSql(sql, wire)})`
