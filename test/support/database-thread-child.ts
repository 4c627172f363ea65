/**
 * Run by test/embedded-thread-memory.test.ts in a process of its own with `npm start`'s
 * semi-space: the embedded database's thread builds large answers, the main thread allocates
 * as a burst of requests would, then one JSON line: each thread's young generation (V8's
 * new space, bytes).
 */
import * as V8 from "node:v8"
import { type Request, startPgliteWorker, type WorkerResult } from "../../src/sql/PgliteWorker.js"

const worker = await startPgliteWorker(undefined)
const ask = (request: Request) =>
  new Promise<WorkerResult>((resolve, reject) => {
    worker.send(request, (error, result) => error === undefined ? resolve(result!) : reject(error))
  })
const newSpace = (spaces: ReadonlyArray<{ readonly space_name: string; readonly space_size: number }>) =>
  spaces.find((space) => space.space_name === "new_space")!.space_size

// Unnamed statements: the thread turns their rows into objects, many at once in flight.
const rows = "SELECT g, repeat('x', 100) AS t FROM generate_series(1, 20000) g"
for (let round = 0; round < 4; round++) {
  await Promise.all(Array.from({ length: 8 }, () => ask({ op: "query", text: rows, params: [], rowMode: undefined })))
}
const thread = newSpace((await ask({ op: "heap" })).rows)

let kept: Array<ReadonlyArray<{ readonly n: number; readonly text: string }>> = []
for (let round = 0; round < 2_000; round++) {
  kept.push(Array.from({ length: 5_000 }, (_, n) => ({ n, text: `row ${n} of ${round}` })))
  if (kept.length > 200) kept = kept.slice(-200)
}
kept = []
const main = newSpace(V8.getHeapSpaceStatistics())
await worker.close()
console.log(JSON.stringify({ thread, main }))
