import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"
import * as V8 from "node:v8"
import { Worker } from "node:worker_threads"
import { DEFAULT_SHARED_BUFFERS } from "../kernel/AppConfig.js"
import { type AnswerRing, makeAnswerRing, RingReader, type RingSlot } from "./AnswerRing.js"
import { type Field, parsersOf, readAnswer } from "./BackendMessages.js"

/**
 * PGlite on a worker thread of its own, so SQL runs on one core while the event loop serves
 * HTTP and JSON on the other. The worker owns the only PGlite instance; the main thread sends
 * it statements (text and parameters) and gets rows back, one answer per request.
 *
 * A worker receives messages in the order they were posted and runs each request after the
 * one before it, so statements run in the order the main thread sends them: a
 * transaction's BEGIN, statements and COMMIT or ROLLBACK keep their order on the one
 * connection. A caller that stops waiting (an interrupted fiber) does not stop the statement,
 * exactly as with an in-thread PGlite: its answer is dropped.
 */

/** What a statement answers: the rows (objects, or arrays in "array" row mode) and PGlite's extras. */
export interface WorkerResult {
  readonly rows: Array<any>
  readonly fields: ReadonlyArray<{ readonly name: string; readonly dataTypeID: number }>
  readonly affectedRows: number | undefined
}

export type Request =
  | {
    readonly op: "query"
    readonly text: string
    readonly params: ReadonlyArray<unknown>
    readonly rowMode: "array" | undefined
    /** Held statements (BEGIN, SAVEPOINT) run first, in the same message. */
    readonly before?: ReadonlyArray<string> | undefined
    /** COMMIT runs right after the statement, in the same message. */
    readonly commit?: boolean | undefined
    /**
     * The statement's prepared name (`PreparedStatements`): prepared by its first run, then
     * only bound and executed. Without one the statement is parsed and planned afresh.
     */
    readonly name?: string | undefined
    /** Prepared statements to drop first (evicted or renewed by the main thread's cache). */
    readonly close?: ReadonlyArray<string> | undefined
    /** Send the named statement's fields with its answer (this side does not know them). */
    readonly describe?: boolean | undefined
  }
  | { readonly op: "exec"; readonly text: string }
  /** The thread's V8 heap spaces (`v8.getHeapSpaceStatistics()`), as rows. */
  | { readonly op: "heap" }
  | { readonly op: "close" }

/**
 * A named statement's answer: PostgreSQL's messages as they came, read on this side, in the
 * answer ring (`AnswerRing`) or, when they did not fit there, in a buffer handed over.
 */
export interface RawResult {
  readonly raw: Uint8Array<ArrayBuffer> | RingSlot
  /** The statement's fields, when it was described for this answer or asked for. */
  readonly fields: ReadonlyArray<Field> | undefined
}

export type Reply =
  | { readonly type: "ready" }
  | { readonly type: "failed"; readonly error: Record<string, unknown> }
  | { readonly id: number; readonly ok: true; readonly result: WorkerResult }
  | ({ readonly id: number; readonly ok: true } & RawResult)
  | { readonly id: number; readonly ok: false; readonly error: Record<string, unknown> }

export interface WorkerData {
  readonly dataDir: string | undefined
  /** PostgreSQL settings (`name=value`) PGlite starts with, after its own defaults. */
  readonly settings: ReadonlyArray<string>
  /** Where the thread leaves named statements' answers. */
  readonly ring: AnswerRing
}

/**
 * How much of PostgreSQL's memory the embedded database may hold. PGlite's WebAssembly heap
 * only ever grows, and PostgreSQL's buffer pool (`shared_buffers`, 128MB in a new data
 * directory's postgresql.conf) is zero-filled when PGlite starts, so the whole pool is
 * resident from the start. Pages beyond the pool are read from the data directory's files,
 * which the OS keeps cached.
 */
export interface EmbeddedMemory {
  /** PostgreSQL's `shared_buffers`, in its units (`16MB`, `128MB`, `8192kB`). */
  readonly sharedBuffers: string
}

/** What `EMBEDDED_SHARED_BUFFERS` defaults to, for callers that start PGlite without the configuration (tests, embedding programs). */
export const DEFAULT_EMBEDDED_MEMORY: EmbeddedMemory = { sharedBuffers: DEFAULT_SHARED_BUFFERS }

/**
 * Rows `ANALYZE` samples per table: 300 × this (PostgreSQL's default 100 samples up to 30,000).
 * The sample is held whole in PGlite's heap while the table is analyzed, and that heap never
 * shrinks: analyzing 10,000 tasks (~1.5 KB a row with its wire column) grew it by ~20 MiB for
 * good (docs/performance.md, "Memory"). 3,000 rows still give the planner what it asks of these
 * tables (how many rows a user, a project or a due range holds): `../shared/tools/plans.mjs`
 * compares the plans before and after analysis.
 */
export const EMBEDDED_STATISTICS_TARGET = 10

/** The `-c` settings for PGlite's start. */
export const embeddedSettings = (memory: EmbeddedMemory): ReadonlyArray<string> => [
  `shared_buffers=${memory.sharedBuffers}`,
  `default_statistics_target=${EMBEDDED_STATISTICS_TARGET}`
]

/**
 * tsx's documented ESM API (`tsx/esm/api`, whose `register()` installs its loader in the
 * calling thread), as an `import` resolves it: from tsx's export map, since a CommonJS
 * `require.resolve` would find its CommonJS build, and vitest offers no `import.meta.resolve`.
 */
const tsxEsmApi = (): string => {
  const require = createRequire(import.meta.url)
  const manifest = require("tsx/package.json") as { readonly exports: Record<string, { readonly import: { readonly default: string } }> }
  return new URL(manifest.exports["./esm/api"]!.import.default, pathToFileURL(require.resolve("tsx/package.json"))).href
}

/**
 * The database thread's young generation, in MiB. The process may run with a large
 * `--max-semi-space-size` for the main thread's request garbage (64 with
 * `SERVICE_SEMI_SPACE_MB=64`; `npm start` gives 16), and a V8 flag reaches
 * every isolate: the thread grew a 128 MiB young generation of its own (76 MiB resident
 * measured under a mixed load) for what is mostly rows in transit, and nothing collects it
 * when idle (the idle collector runs on the main thread). At 16 the thread's heap was 33–36 MiB
 * resident under the bench's mixed load, at 8 25 MiB, at the same speed (docs/performance.md,
 * "Memory").
 */
export const DATABASE_THREAD_YOUNG_MB = 8

/**
 * Starts the thread's program, `PgliteWorkerThread`, compiled like every other module: beside
 * this file is its twin with this file's extension, `.js` in the built `dist/`, `.ts` where
 * the sources run as they are (tsx, vitest). Node 20 runs no TypeScript in a worker and
 * ignores loader flags in a worker's `execArgv` (`--import tsx` there still fails on ".ts"),
 * so a `.ts` thread starts from one line that registers tsx's loader in the thread first.
 */
const startWorker = (data: WorkerData): Worker => {
  const fromSources = import.meta.url.endsWith(".ts")
  const thread = new URL(`./PgliteWorkerThread${fromSources ? ".ts" : ".js"}`, import.meta.url)
  // The flag, when given, wins over `resourceLimits` in every isolate created after it; 0 is
  // V8's "not given". The main thread's heap keeps the size it was created with.
  V8.setFlagsFromString("--max-semi-space-size=0")
  const options = { workerData: data, resourceLimits: { maxYoungGenerationSizeMb: DATABASE_THREAD_YOUNG_MB } }
  if (!fromSources) return new Worker(thread, options)
  const boot = `import(${JSON.stringify(tsxEsmApi())}).then((tsx) => { tsx.register(); return import(${
    JSON.stringify(thread.href)
  }) })`
  return new Worker(boot, { ...options, eval: true })
}

/** An error from the worker, with PostgreSQL's fields (code, detail, constraint…) as own properties. */
const revive = (fields: Record<string, unknown>): Error =>
  Object.assign(new Error(String(fields.message ?? "embedded database error")), fields)

export interface PgliteWorker {
  /** Sends one request; `done` is called once with its answer, unless `cancel` ran first. */
  readonly send: (request: Request, done: (error: Error | undefined, result: WorkerResult | undefined) => void) => () => void
  /** Closes PGlite (flushing its files) and ends the thread. */
  readonly close: () => Promise<void>
}

/** Starts the worker and waits until PGlite is open in `dataDir` (in memory when undefined). */
export const startPgliteWorker = (
  dataDir: string | undefined,
  memory: EmbeddedMemory = DEFAULT_EMBEDDED_MEMORY
): Promise<PgliteWorker> =>
  new Promise((resolve, reject) => {
    const ring = makeAnswerRing()
    const reader = new RingReader(ring)
    const worker = startWorker({ dataDir, settings: embeddedSettings(memory), ring })
    type Done = (error: Error | undefined, result: WorkerResult | undefined) => void
    /** A request waiting for its answer; `done` is dropped when its caller stops waiting. */
    type Waiting = { done: Done | undefined; readonly request: Request }
    const pending = new Map<number, Waiting>()
    /** Each named statement's fields and their parsers, from the answer that described it. */
    const statements = new Map<string, { readonly fields: ReadonlyArray<Field>; readonly parsers: ReturnType<typeof parsersOf> }>()
    let nextId = 1
    let ready = false
    let gone: Error | undefined

    // A dead thread fails everything waiting on it, and everything sent after.
    const fail = (error: Error) => {
      gone ??= error
      if (!ready) {
        reject(error)
        void worker.terminate()
      }
      for (const { done } of pending.values()) done?.(gone, undefined)
      pending.clear()
    }
    const answered = (reply: Exclude<Reply, { readonly type: unknown }>, waiting: Waiting) => {
      pending.delete(reply.id)
      const { done, request } = waiting
      // What the answer tells of named statements counts even when nobody waits for it any more.
      if (request.op === "query") {
        // The thread dropped these before running this request, and every request sent before
        // it (which may still have used them) has answered by now: answers come in order.
        for (const name of request.close ?? []) statements.delete(name)
        if (reply.ok && "raw" in reply && reply.fields !== undefined && request.name !== undefined) {
          statements.set(request.name, { fields: reply.fields, parsers: parsersOf(reply.fields) })
        }
      }
      if (done === undefined) return
      if (!reply.ok) return done(revive(reply.error), undefined)
      if ("result" in reply) return done(undefined, reply.result)
      const statement = request.op === "query" && request.name !== undefined ? statements.get(request.name) : undefined
      if (statement === undefined || request.op !== "query") {
        return done(new Error("An embedded statement answered without its fields"), undefined)
      }
      const raw = reply.raw instanceof Uint8Array ? reply.raw : reader.bytes(reply.raw)
      const answer = readAnswer(raw, statement.fields, statement.parsers, request.rowMode)
      if ("error" in answer) return done(revive(answer.error), undefined)
      done(undefined, { rows: answer.rows, fields: statement.fields, affectedRows: answer.affectedRows })
    }

    worker.on("error", fail)
    worker.on("exit", (code) => fail(new Error(`The embedded database's thread exited (code ${code})`)))
    worker.on("message", (reply: Reply) => {
      if ("type" in reply) {
        if (reply.type === "ready") {
          ready = true
          resolve(handle)
        } else {
          fail(revive(reply.error))
        }
        return
      }
      const waiting = pending.get(reply.id)
      // An answer in the ring is read now or never: the thread may write over it once released.
      const inRing = reply.ok && "raw" in reply && !(reply.raw instanceof Uint8Array) ? reply.raw : undefined
      try {
        if (waiting !== undefined) answered(reply, waiting)
      } finally {
        if (inRing !== undefined) reader.release(inRing)
      }
    })

    const send: PgliteWorker["send"] = (request, done) => {
      if (gone !== undefined) {
        done(gone, undefined)
        return () => {}
      }
      const id = nextId++
      // A statement whose fields this side has not had yet (its first run, or that run's answer
      // is still on its way) asks for them.
      if (request.op === "query" && request.name !== undefined && !statements.has(request.name)) {
        request = { ...request, describe: true }
      }
      try {
        worker.postMessage({ ...request, id })
      } catch (error) {
        // A parameter that cannot be copied to the thread (a function, a class with private state).
        done(error instanceof Error ? error : new Error(String(error)), undefined)
        return () => {}
      }
      const waiting: Waiting = { done, request }
      pending.set(id, waiting)
      return () => {
        waiting.done = undefined
      }
    }

    const close = async () => {
      if (gone === undefined) {
        await new Promise<void>((closed) => send({ op: "close" }, () => closed()))
      }
      await worker.terminate()
    }

    const handle: PgliteWorker = { send, close }
  })
