import Pg from "pg"

/**
 * PostgreSQL's answer to one request of the embedded database's thread, read on the main
 * thread from the raw protocol bytes (frontend/backend protocol 3.0, "Message Formats").
 *
 * The thread hands a named statement's answer over as it came out of PGlite, without parsing
 * it (`PgliteWorkerThread.named`): under a write load that thread is the bottleneck (one
 * connection, PostgreSQL in WebAssembly) while the main thread waits on it about a quarter of
 * the time, and parsing the messages, building the rows and copying them across as objects
 * was a tenth of the thread's work. The bytes cross as a transferred buffer, not a copy.
 *
 * Values are parsed with `pg`'s text parsers, the ones a PostgreSQL server's rows go through,
 * so a named statement answers the same JavaScript values on both databases.
 */

export interface Field {
  readonly name: string
  readonly dataTypeID: number
}

/** The rows of one statement and what its command tags counted. */
export interface Answer {
  readonly rows: Array<unknown>
  readonly affectedRows: number
}

/** PostgreSQL's error fields under the names `pg` and PGlite give them (ErrorResponse codes). */
const ERROR_FIELDS: Readonly<Record<string, string>> = {
  S: "severity",
  C: "code",
  M: "message",
  D: "detail",
  H: "hint",
  P: "position",
  p: "internalPosition",
  q: "internalQuery",
  W: "where",
  s: "schema",
  t: "table",
  c: "column",
  d: "dataType",
  n: "constraint",
  F: "file",
  L: "line",
  R: "routine"
}

/** Command tags whose last word counts rows (INSERT 0 n, UPDATE n, …). */
const AFFECTING = new Set(["INSERT", "UPDATE", "DELETE", "COPY", "MERGE"])

const BIND_COMPLETE = 0x32 // '2'
const COMMAND_COMPLETE = 0x43 // 'C'
const DATA_ROW = 0x44 // 'D'
const ERROR_RESPONSE = 0x45 // 'E'
const READY_FOR_QUERY = 0x5a // 'Z'

type Parse = (text: string) => unknown

/** One text parser per field, as `pg` picks them by type. */
export const parsersOf = (fields: ReadonlyArray<Field>): ReadonlyArray<Parse> =>
  fields.map((field) => Pg.types.getTypeParser(field.dataTypeID, "text") as Parse)

/** The fields of an ErrorResponse whose body runs from `at` to `end`. */
const errorAt = (bytes: Buffer, at: number, end: number): Record<string, string> => {
  const error: Record<string, string> = { name: "error" }
  while (at < end && bytes[at] !== 0) {
    const code = String.fromCharCode(bytes[at]!)
    const stop = bytes.indexOf(0, at + 1)
    const value = bytes.toString("utf8", at + 1, stop < 0 ? end : stop)
    const key = ERROR_FIELDS[code]
    if (key !== undefined) error[key] = value
    at = stop < 0 ? end : stop + 1
  }
  return error
}

/**
 * Reads the answer of a request whose own statement is the first Bind in it: what comes
 * before (a CloseComplete, a held BEGIN's answer) and after its ReadyForQuery (a COMMIT's) is
 * not its rows. A request fails with the first ErrorResponse anywhere in it, as PGlite's own
 * reading did: PostgreSQL skips the rest of a failed pipeline up to its Sync, and a COMMIT
 * after that finds the transaction aborted.
 */
export const readAnswer = (
  raw: Uint8Array,
  fields: ReadonlyArray<Field>,
  parsers: ReadonlyArray<Parse>,
  rowMode: "array" | undefined
): Answer | { readonly error: Record<string, string> } => {
  const bytes = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)
  const rows: Array<unknown> = []
  let affectedRows = 0
  // before: ahead of the statement's BindComplete; in: its rows; after: past its ReadyForQuery.
  let stage: "before" | "in" | "after" = "before"
  let at = 0
  while (at + 5 <= bytes.length) {
    const type = bytes[at]!
    const end = at + 1 + bytes.readInt32BE(at + 1)
    const body = at + 5
    if (type === ERROR_RESPONSE) return { error: errorAt(bytes, body, end) }
    if (stage === "before") {
      if (type === BIND_COMPLETE) stage = "in"
    } else if (stage === "in") {
      if (type === DATA_ROW) {
        const count = bytes.readInt16BE(body)
        let p = body + 2
        const values: Array<unknown> = new Array(count)
        for (let i = 0; i < count; i++) {
          const length = bytes.readInt32BE(p)
          p += 4
          if (length < 0) {
            values[i] = null
          } else {
            values[i] = parsers[i]!(bytes.toString("utf8", p, p + length))
            p += length
          }
        }
        if (rowMode === "array") {
          rows.push(values)
        } else {
          const row: Record<string, unknown> = {}
          for (let i = 0; i < count; i++) row[fields[i]!.name] = values[i]
          rows.push(row)
        }
      } else if (type === COMMAND_COMPLETE) {
        const tag = bytes.toString("utf8", body, end - 1)
        const words = tag.split(" ")
        if (AFFECTING.has(words[0]!)) affectedRows += parseInt(words[words.length - 1]!, 10)
      } else if (type === READY_FOR_QUERY) {
        stage = "after"
      }
    }
    at = end
  }
  return { rows, affectedRows }
}
