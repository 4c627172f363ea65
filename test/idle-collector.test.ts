import { describe, expect, it } from "vitest"
import { spawnSync } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const MiB = 1024 * 1024

describe("the idle collector", () => {
  it("gives back the young generation a burst grew, at a 64 MiB semi-space (SERVICE_SEMI_SPACE_MB=64), once quiet", () => {
    // A process of its own: the young generation's size is set when the process starts.
    const run = spawnSync(
      process.execPath,
      ["--max-semi-space-size=64", "--import", "tsx", Path.join(ROOT, "test/support/idle-collector-child.ts")],
      { cwd: ROOT, encoding: "utf8", timeout: 60_000, env: { ...process.env, SERVICE_IDLE_GC: "" } }
    )
    expect(run.status, run.stderr).toBe(0)
    const { after, grown, ms } = JSON.parse(run.stdout.trim().split("\n").at(-1)!) as {
      readonly grown: number
      readonly after: number
      readonly ms: number
    }
    // The burst filled both semi-spaces (2 × 64 MiB).
    expect(grown).toBeGreaterThanOrEqual(100 * MiB)
    // Down to a few MiB: with only the full collection it stayed at its full size.
    expect(after).toBeLessThanOrEqual(8 * MiB)
    // Three quiet checks, the full collection, then a scavenge a check (1 s each here).
    expect(ms).toBeLessThan(15_000)
  }, 70_000)
})
