/**
 * Preloaded into the service by the memory scenario (`node --import bench/memprobe.mjs`, only
 * when BENCH_MEMPROBE_FILE is set): every second each JavaScript thread appends one JSON line
 * of `process.memoryUsage()` and its V8 heap spaces' resident bytes to that file, so the
 * bench can tell the process's RSS apart (main thread's heap, the embedded database's
 * worker thread's heap, buffers). Preloads do not reach worker threads, so each one started
 * (the embedded database's) runs from source text that starts the same sampler first, then
 * its own code (or imports its module file).
 */
import { createRequire, syncBuiltinESMExports } from "node:module"

const file = process.env.BENCH_MEMPROBE_FILE

const sampler = (path) => `;(() => {
  const Fs = require("node:fs"), V8 = require("node:v8"), { threadId } = require("node:worker_threads");
  const mib = (n) => Math.round((n / 1048576) * 10) / 10;
  setInterval(() => {
    const m = process.memoryUsage();
    const spaces = {};
    for (const s of V8.getHeapSpaceStatistics()) spaces[s.space_name.replace(/_space$/, "")] = mib(s.physical_space_size);
    Fs.appendFileSync(${JSON.stringify(path)}, JSON.stringify({
      t: Date.now(), thread: threadId, rss: mib(m.rss), heapTotal: mib(m.heapTotal), heapUsed: mib(m.heapUsed),
      external: mib(m.external), arrayBuffers: mib(m.arrayBuffers), spaces
    }) + "\\n");
  }, 1000).unref();
})();
`

if (file !== undefined && file !== "") {
  const require = createRequire(import.meta.url)
  new Function("require", sampler(file))(require)
  const threads = require("node:worker_threads")
  const Worker = threads.Worker
  threads.Worker = class extends Worker {
    constructor(code, options) {
      if (options?.eval === true && typeof code === "string") super(sampler(file) + code, options)
      else {
        // A module file: started from source text that samples, then imports it.
        const href = code instanceof URL ? code.href : code.startsWith("file:") ? code : new URL(`file://${code}`).href
        super(`${sampler(file)}import(${JSON.stringify(href)});`, { ...options, eval: true })
      }
    }
  }
  syncBuiltinESMExports()
}
