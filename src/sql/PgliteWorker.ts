import { createRequire } from "node:module"
import { pathToFileURL } from "node:url"
import { Worker } from "node:worker_threads"

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

type Request =
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
  }
  | { readonly op: "exec"; readonly text: string }
  | { readonly op: "close" }

type Reply =
  | { readonly type: "ready" }
  | { readonly type: "failed"; readonly error: Record<string, unknown> }
  | { readonly id: number; readonly ok: true; readonly result: WorkerResult }
  | { readonly id: number; readonly ok: false; readonly error: Record<string, unknown> }

interface WorkerData {
  readonly pgliteUrl: string
  readonly dataDir: string | undefined
}

/**
 * The worker's program, as JavaScript source: a Worker cannot load our TypeScript module
 * under every loader we run with (tsx, vitest, the built `dist`), and a stringified function
 * would carry the loaders' helpers with it. `workerData` is a `WorkerData`; each request is a
 * `Request` plus its `id`, each answer a `Reply`.
 */
const workerProgram = `
const { parentPort, workerData } = require("node:worker_threads");

// PGlite's errors carry PostgreSQL's fields (code, detail, constraint…) as own properties,
// which structured cloning would drop: send them as a plain object.
const plain = (error) => {
  if (typeof error !== "object" || error === null) return { message: String(error) };
  const out = {};
  for (const [key, value] of Object.entries(error)) {
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") out[key] = value;
  }
  out.name = error.name;
  out.message = error.message;
  return out;
};

const answer = (result) => ({ rows: result?.rows ?? [], fields: result?.fields ?? [], affectedRows: result?.affectedRows });

// Held statements, the statement and COMMIT are all handed to PGlite at once, so its queue
// keeps them together; the answer is the first failure in that order, else the statement's
// rows. After a failure COMMIT finds the transaction aborted and rolls it back, which is what
// the caller's ROLLBACK would have done.
const pipelined = (db, message) => {
  // One simple-query call for all of them: each call into PGlite costs its own protocol work.
  const steps = message.before !== undefined && message.before.length > 0 ? [db.exec(message.before.join("; "))] : [];
  const main = db.query(message.text, message.params, message.rowMode ? { rowMode: message.rowMode } : undefined);
  const all = [...steps, main, ...(message.commit ? [db.exec("COMMIT")] : [])];
  return Promise.allSettled(all).then((settled) => {
    const failed = settled.find((s) => s.status === "rejected");
    if (failed) throw failed.reason;
    return answer(settled[steps.length].value);
  });
};

// Named statements go by the wire protocol itself (PGlite's query() always parses and plans
// an unnamed one): the first run parses and describes the statement, later runs send only
// Bind, Execute and Sync. Planning was most of the cost of a write's commit statement here
// (measured on a create: 3.8 ms a statement unnamed, 1.1 ms prepared).
let wire;
const described = new Map();
const join = (parts) => {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
};

// Every message of one request goes to PGlite in one call; PostgreSQL runs them all in order
// even after an error (it skips to the next Sync), and the call then throws the first error.
const send = (db, parts) => db.execProtocolStream(join(parts), { syncToFs: false });

// The rows are parsed as PGlite's query() parses them, from the statement's own messages
// only (BEGIN and COMMIT sent in the same call answer too).
const named = (db, message) => db.runExclusive(async () => {
  const S = wire.serialize;
  const parts = [];
  for (const name of message.close ?? []) {
    parts.push(S.close({ type: "S", name }));
    described.delete(name);
  }
  if (parts.length > 0) parts.push(S.sync());
  if (message.before !== undefined && message.before.length > 0) parts.push(S.query(message.before.join("; ")));
  let statement = described.get(message.name);
  if (statement === undefined) {
    parts.push(S.parse({ name: message.name, text: message.text, types: [] }), S.describe({ type: "S", name: message.name }), S.sync());
    let messages;
    try {
      messages = await send(db, parts);
    } catch (error) {
      if (message.commit) await send(db, [S.query("COMMIT")]).catch(() => undefined);
      throw error;
    }
    const types = messages.find((m) => m.name === "parameterDescription")?.dataTypeIDs ?? [];
    const fields = (messages.find((m) => m.name === "rowDescription")?.fields ?? []).map((f) => ({ name: f.name, dataTypeID: f.dataTypeID }));
    statement = { types, fields };
    described.set(message.name, statement);
    parts.length = 0;
  }
  const values = message.params.map((value, i) => {
    if (value === null || value === undefined) return null;
    const serialize = db.serializers[statement.types[i]];
    return serialize ? serialize(value) : value.toString();
  });
  parts.push(S.bind({ statement: message.name, values }), S.execute({}), S.sync());
  if (message.commit) parts.push(S.query("COMMIT"));
  const messages = await send(db, parts);
  const { fields } = statement;
  const parse = (value, i) => {
    if (value === null) return null;
    const parser = db.parsers[fields[i].dataTypeID];
    return parser ? parser(value, fields[i].dataTypeID) : value;
  };
  const rows = [];
  let affectedRows = 0;
  for (let i = messages.findIndex((m) => m.name === "bindComplete") + 1; i < messages.length; i++) {
    const m = messages[i];
    if (m.name === "readyForQuery") break;
    if (m.name === "dataRow") {
      rows.push(message.rowMode === "array" ? m.fields.map(parse) : Object.fromEntries(m.fields.map((value, j) => [fields[j].name, parse(value, j)])));
    } else if (m.name === "commandComplete") {
      const words = m.text.split(" ");
      if (["INSERT", "UPDATE", "DELETE", "COPY", "MERGE"].includes(words[0])) affectedRows += parseInt(words[words.length - 1], 10);
    }
  }
  return { rows, fields, affectedRows };
});

// Requests run one after another in the order they arrived. PGlite's own methods do not
// queue in call order among themselves (query() and exec() wait a tick before taking their
// lock, runExclusive() does not), so the order is kept here.
let last = Promise.resolve();
const inOrder = (run) => {
  const result = last.then(run);
  last = result.catch(() => undefined);
  return result;
};

const serve = (db) => (message) => {
  const { id } = message;
  const pending = inOrder(() =>
    message.op === "close"
      ? db.close().then(() => answer(undefined))
      // Multi-statement scripts answer with the last statement's rows.
      : message.op === "exec"
      ? db.exec(message.text).then((results) => answer(results.at(-1)))
      : message.name !== undefined
      ? named(db, message)
      : pipelined(db, message)
  );
  pending.then(
    (result) => parentPort.postMessage({ id, ok: true, result }),
    (error) => parentPort.postMessage({ id, ok: false, error: plain(error) })
  );
};

import(workerData.pgliteUrl)
  .then(async ({ PGlite, protocol }) => {
    wire = protocol;
    const db = new PGlite(workerData.dataDir);
    await db.waitReady;
    await db.exec("SET TIME ZONE 'UTC'");
    parentPort.on("message", serve(db));
    parentPort.postMessage({ type: "ready" });
  })
  .catch((error) => parentPort.postMessage({ type: "failed", error: plain(error) }));
`

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
export const startPgliteWorker = (dataDir: string | undefined): Promise<PgliteWorker> =>
  new Promise((resolve, reject) => {
    const pgliteUrl = pathToFileURL(createRequire(import.meta.url).resolve("@electric-sql/pglite")).href
    const worker = new Worker(workerProgram, { eval: true, workerData: { pgliteUrl, dataDir } satisfies WorkerData })
    const pending = new Map<number, (error: Error | undefined, result: WorkerResult | undefined) => void>()
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
      for (const done of pending.values()) done(gone, undefined)
      pending.clear()
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
      const done = pending.get(reply.id)
      if (done === undefined) return
      pending.delete(reply.id)
      if (reply.ok) done(undefined, reply.result)
      else done(revive(reply.error), undefined)
    })

    const send: PgliteWorker["send"] = (request, done) => {
      if (gone !== undefined) {
        done(gone, undefined)
        return () => {}
      }
      const id = nextId++
      try {
        worker.postMessage({ ...request, id })
      } catch (error) {
        // A parameter that cannot be copied to the thread (a function, a class with private state).
        done(error instanceof Error ? error : new Error(String(error)), undefined)
        return () => {}
      }
      pending.set(id, done)
      return () => {
        pending.delete(id)
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
