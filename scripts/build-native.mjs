// `npm install`'s postinstall: builds native/malloc-trim, the addon through which the service
// hands malloc's free pages back to the system (src/system/MallocTrim.ts; README, Memory), with
// the node-gyp npm ships. It needs glibc (malloc_trim is glibc's) and a compiler (python3, make,
// g++); without them the install goes on and the service runs without the trim.
import { spawnSync } from "node:child_process"

const glibc = process.report.getReport().header.glibcVersionRuntime
if (glibc === undefined) process.exit(0)

const built = spawnSync("node-gyp", ["rebuild"], {
  cwd: new URL("../native/malloc-trim/", import.meta.url),
  stdio: ["ignore", "pipe", "pipe"],
  encoding: "utf8"
})
if (built.status !== 0) {
  const why = built.error?.message ?? built.stderr.trim().split("\n").filter((l) => /ERR!/.test(l)).slice(0, 3).join("; ")
  console.warn(`steady: native/malloc-trim was not built (${why || `exit ${built.status}`}); the service runs without ` +
    "handing malloc's free memory back (README, Memory)")
}
