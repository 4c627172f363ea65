import type { PGlite, protocol as Protocol, Results } from "@electric-sql/pglite"
import * as V8 from "node:v8"
import { parentPort, workerData } from "node:worker_threads"
import { RingWriter } from "./AnswerRing.js"
import type { RawResult, Reply, Request, WorkerData, WorkerResult } from "./PgliteWorker.js"

/**
 * The embedded database's thread (started by `PgliteWorker.startPgliteWorker`, never imported
 * by anything else): it owns the only PGlite instance and answers the main thread's requests
 * one by one. `workerData` is a `WorkerData`; each request is a `Request` plus its `id`, each
 * answer a `Reply`. Only types come from `PgliteWorker.ts`, so nothing of the main thread's
 * module graph is loaded here.
 */

type Wire = typeof Protocol
type Serialize = Wire["serialize"]
type BackendMessage = Awaited<ReturnType<PGlite["execProtocolStream"]>>[number]
type Messages = Wire["messages"]
type ParameterDescription = InstanceType<Messages["ParameterDescriptionMessage"]>
type RowDescription = InstanceType<Messages["RowDescriptionMessage"]>
type Message = Request & { readonly id: number }
type QueryMessage = Extract<Message, { readonly op: "query" }>

/** What a named statement's first run learnt from its Describe. */
interface Described {
  readonly types: ReadonlyArray<number>
  readonly fields: WorkerResult["fields"]
}

// PGlite's errors carry PostgreSQL's fields (code, detail, constraint…) as own properties,
// which structured cloning would drop: send them as a plain object.
const plain = (error: unknown): Record<string, unknown> => {
  if (typeof error !== "object" || error === null) return { message: String(error) }
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(error)) {
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") out[key] = value
  }
  out.name = (error as { name?: unknown }).name
  out.message = (error as { message?: unknown }).message
  return out
}

const answer = (result: Partial<Results> | undefined): WorkerResult => ({
  rows: result?.rows ?? [],
  fields: result?.fields ?? [],
  affectedRows: result?.affectedRows
})

// Held statements, the statement and COMMIT are all handed to PGlite at once, so its queue
// keeps them together; the answer is the first failure in that order, else the statement's
// rows. After a failure COMMIT finds the transaction aborted and rolls it back, which is what
// the caller's ROLLBACK would have done.
const pipelined = (db: PGlite, message: QueryMessage): Promise<WorkerResult> => {
  // One simple-query call for all of them: each call into PGlite costs its own protocol work.
  const steps: Array<Promise<unknown>> = message.before !== undefined && message.before.length > 0
    ? [db.exec(message.before.join("; "))]
    : []
  const main = db.query(message.text, message.params as Array<unknown>, message.rowMode ? { rowMode: message.rowMode } : undefined)
  const all = [...steps, main, ...(message.commit ? [db.exec("COMMIT")] : [])]
  return Promise.allSettled(all).then((settled) => {
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected")
    if (failed) throw failed.reason
    return answer((settled[steps.length] as PromiseFulfilledResult<Results>).value)
  })
}

// Named statements go by the wire protocol itself (PGlite's query() always parses and plans
// an unnamed one): the first run parses and describes the statement, later runs send only
// Bind, Execute and Sync. Planning was most of the cost of a write's commit statement here
// (measured on a create: 3.8 ms a statement unnamed, 1.1 ms prepared).
const described = new Map<string, Described>()
const join = (parts: ReadonlyArray<Uint8Array>): Uint8Array<ArrayBuffer> => {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0))
  let at = 0
  for (const part of parts) {
    out.set(part, at)
    at += part.length
  }
  return out
}

// Every message of one request goes to PGlite in one call; PostgreSQL runs them all in order
// even after an error (it skips to the next Sync), and the call then throws the first error.
const send = (db: PGlite, parts: ReadonlyArray<Uint8Array>) => db.execProtocolStream(join(parts), { syncToFs: false })

/** The first message named `name`, as the class PGlite's parser made it. */
const first = <M>(messages: ReadonlyArray<BackendMessage>, name: BackendMessage["name"]): M | undefined =>
  messages.find((m) => m.name === name) as M | undefined

/**
 * The statement's answer as PGlite wrote it, unparsed: the main thread reads it
 * (`BackendMessages.readAnswer`), with the statement's fields, which go along when this call
 * described it or the main thread asks for them (`describe`).
 */
const rawOf = (db: PGlite, ring: RingWriter, parts: ReadonlyArray<Uint8Array>): Promise<RawResult["raw"]> => {
  // Into the answer ring while it fits, else (and from then on) copies of its own. The chunk
  // is a view into PGlite's memory, overwritten by the next one: copied either way.
  const chunks: Array<Uint8Array<ArrayBuffer>> = []
  let inRing = true
  ring.begin()
  const onRawData = (chunk: Uint8Array) => {
    if (inRing && ring.write(chunk)) return
    if (inRing) {
      inRing = false
      chunks.push(ring.abandon())
    }
    chunks.push(chunk.slice())
  }
  return db.execProtocolRawStream(join(parts), { syncToFs: false, onRawData }).then(
    () => inRing ? ring.finish() : chunks.length === 1 ? chunks[0]! : join(chunks),
    (error: unknown) => {
      if (inRing) ring.abandon()
      throw error
    }
  )
}

const named = (db: PGlite, S: Serialize, ring: RingWriter, message: QueryMessage, name: string): Promise<RawResult> =>
  db.runExclusive(async () => {
    const parts: Array<Uint8Array> = []
    for (const closed of message.close ?? []) {
      parts.push(S.close({ type: "S", name: closed }))
      described.delete(closed)
    }
    if (parts.length > 0) parts.push(S.sync())
    if (message.before !== undefined && message.before.length > 0) parts.push(S.query(message.before.join("; ")))
    let statement = described.get(name)
    const describing = statement === undefined
    if (statement === undefined) {
      parts.push(S.parse({ name, text: message.text, types: [] }), S.describe({ type: "S", name }), S.sync())
      let messages: ReadonlyArray<BackendMessage>
      try {
        messages = await send(db, parts)
      } catch (error) {
        if (message.commit) await send(db, [S.query("COMMIT")]).catch(() => undefined)
        throw error
      }
      const types = first<ParameterDescription>(messages, "parameterDescription")?.dataTypeIDs ?? []
      const fields = (first<RowDescription>(messages, "rowDescription")?.fields ?? []).map((f) => ({
        name: f.name,
        dataTypeID: f.dataTypeID
      }))
      statement = { types, fields }
      described.set(name, statement)
      parts.length = 0
    }
    const { types, fields } = statement
    const values = message.params.map((value, i) => {
      if (value === null || value === undefined) return null
      const serialize: ((x: unknown) => string) | undefined = db.serializers[types[i]!]
      return serialize ? serialize(value) : (value as { toString(): string }).toString()
    })
    parts.push(S.bind({ statement: name, values }), S.execute({}), S.sync())
    if (message.commit) parts.push(S.query("COMMIT"))
    const raw = await rawOf(db, ring, parts)
    return { raw, fields: describing || message.describe === true ? fields : undefined }
  })

// Requests run one after another in the order they arrived. PGlite's own methods do not
// queue in call order among themselves (query() and exec() wait a tick before taking their
// lock, runExclusive() does not), so the order is kept here.
let last: Promise<unknown> = Promise.resolve()
const inOrder = <A>(run: () => Promise<A>): Promise<A> => {
  const result = last.then(run)
  last = result.catch(() => undefined)
  return result
}

const serve = (port: NonNullable<typeof parentPort>, db: PGlite, S: Serialize, ring: RingWriter) => (message: Message) => {
  const { id } = message
  const pending = inOrder<WorkerResult | RawResult>(() =>
    message.op === "close"
      ? db.close().then(() => answer(undefined))
      // Multi-statement scripts answer with the last statement's rows.
      : message.op === "exec"
      ? db.exec(message.text).then((results) => answer(results.at(-1)))
      : message.op === "heap"
      ? Promise.resolve(answer({ rows: V8.getHeapSpaceStatistics() }))
      : message.name !== undefined
      ? named(db, S, ring, message, message.name)
      : pipelined(db, message)
  )
  pending.then(
    (result) =>
      "raw" in result
        ? port.postMessage(
          { id, ok: true, raw: result.raw, fields: result.fields } satisfies Reply,
          // Handed over, not copied: such a buffer is this answer's alone.
          result.raw instanceof Uint8Array ? [result.raw.buffer] : []
        )
        : port.postMessage({ id, ok: true, result } satisfies Reply),
    (error) => port.postMessage({ id, ok: false, error: plain(error) } satisfies Reply)
  )
}

const start = (port: NonNullable<typeof parentPort>, data: WorkerData) =>
  import("@electric-sql/pglite")
    .then(async ({ PGlite, protocol }) => {
      // After PGlite's own start parameters; `-c` on the command line wins over postgresql.conf,
      // and the data directory's files are left as they are.
      const db = new PGlite(data.dataDir, {
        startParams: [...PGlite.defaultStartParams, ...(data.settings ?? []).flatMap((setting) => ["-c", setting])]
      })
      await db.waitReady
      await db.exec("SET TIME ZONE 'UTC'")
      port.on("message", serve(port, db, protocol.serialize, new RingWriter(data.ring)))
      port.postMessage({ type: "ready" } satisfies Reply)
    })
    .catch((error: unknown) => port.postMessage({ type: "failed", error: plain(error) } satisfies Reply))

// Loaded as a worker only; imported anywhere else (a canary test, a type check) it does nothing.
if (parentPort !== null) void start(parentPort, workerData as WorkerData)
