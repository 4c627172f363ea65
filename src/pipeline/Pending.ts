import * as Crypto from "node:crypto"
import { type SqlText, sqlText } from "../sql/SqlText.js"

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
  with<X extends Record<string, unknown> & { readonly [K in keyof W]?: never }>(extra: X): Pending<W & X> {
    return new Pending({ ...this.extra, ...extra })
  }

  /** The marker member first, then the extra members: the statement puts the wire's members in the marker's place. */
  toJSON(): Record<string, unknown> {
    return { [PENDING_WIRE_KEY]: true, ...this.extra }
  }

  /**
   * The value, given the wire JSON text the commit statement rendered: that text with the
   * extra members after its own. `with` keeps them apart from the wire's members (its type
   * refuses a wire key), so appending them as text is the spread it stands for.
   */
  resolve(wireText: string): Rendered<W> {
    const extra = JSON.stringify(this.extra)
    return new Rendered(extra === "{}" ? wireText : `${wireText.slice(0, -1)},${extra.slice(1)}`)
  }
}

/**
 * A write's answer as the commit statement rendered it (a `Pending` resolved): its JSON text,
 * which the answer helpers send as it is (`http/Answer.ts`), and the value, parsed only when
 * something reads it. Parsing the text and writing it again cost a create ~25 µs of the
 * service's CPU (docs/performance.md, "The commit statement's text").
 */
export class Rendered<W> {
  private parsed: W | undefined
  constructor(readonly text: string) {}

  get value(): W {
    if (this.parsed === undefined) this.parsed = JSON.parse(this.text) as W
    return this.parsed
  }

  /** Inside a larger JSON answer it is its value. */
  toJSON(): W {
    return this.value
  }
}

/** The members of a JSON object's text (what goes in place of a marker member), in SQL. */
export const membersSql = (json: SqlText) => sqlText`(SELECT substr(j, 2, length(j) - 2) FROM (SELECT ${json} AS j) AS s)`

/** A JSON text in SQL with every `Pending`'s marker member replaced by the members of `wire` (SQL of a JSON object's text). */
export const withWireSql = (text: SqlText, wire: SqlText): SqlText =>
  sqlText`replace(${text}, ${PENDING_WIRE_MEMBER}::text, ${membersSql(wire)})`

/** The same in TypeScript, for a JSON text and the wire text the statement answered. */
export const withWire = (text: string, wire: string): string =>
  text.includes(PENDING_WIRE_MEMBER) ? text.split(PENDING_WIRE_MEMBER).join(wire.slice(1, -1)) : text

/** Whether a JSON text holds a `Pending`. */
export const holdsPending = (text: string): boolean => text.includes(PENDING_WIRE_MEMBER)
