import { describe, expect, it } from "vitest"
import { spawnSync } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { DATABASE_THREAD_YOUNG_MB } from "../src/sql/PgliteWorker.js"

const ROOT = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const MiB = 1024 * 1024

describe("the embedded database's thread", () => {
  it("keeps a small young generation under a 64 MiB semi-space (SERVICE_SEMI_SPACE_MB=64), which the main thread keeps", () => {
    // A process of its own: heap sizes are set when a thread's isolate is created.
    const run = spawnSync(
      process.execPath,
      ["--max-semi-space-size=64", "--import", "tsx", Path.join(ROOT, "test/support/database-thread-child.ts")],
      { cwd: ROOT, encoding: "utf8", timeout: 120_000 }
    )
    expect(run.status, run.stderr).toBe(0)
    const { main, thread } = JSON.parse(run.stdout.trim().split("\n").at(-1)!) as { readonly thread: number; readonly main: number }
    // With the flag reaching the thread too, its answers grew it to 2 × 64 MiB.
    expect(thread).toBeLessThanOrEqual(DATABASE_THREAD_YOUNG_MB * MiB)
    expect(main).toBeGreaterThanOrEqual(100 * MiB)
  }, 130_000)
})
