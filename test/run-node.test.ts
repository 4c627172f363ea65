import * as ChildProcess from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

/**
 * `scripts/run-node.sh`, the command `npm start` and the image run node through: the memory
 * settings it gives node (README, "Memory") and the one process it leaves.
 */
const ROOT = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const SCRIPT = Path.join(ROOT, "scripts", "run-node.sh")

/** The environment without anything that would choose for the script. */
const envWith = (extra: Record<string, string>): NodeJS.ProcessEnv => {
  const env: NodeJS.ProcessEnv = { ...process.env }
  for (const key of ["DATABASE_URL", "SERVICE_SEMI_SPACE_MB", "SERVICE_HEAP_GROWING_PERCENT", "GLIBC_TUNABLES", "NODE_OPTIONS"]) {
    delete env[key]
  }
  return { ...env, ...extra }
}

/** What node itself sees when started through the script: its flags, the tunables, its pid. */
const probe = (extra: Record<string, string>) =>
  new Promise<{ spawned: number; seen: { argv: Array<string>; tunables: string | null; pid: number } }>((resolve, reject) => {
    const child = ChildProcess.spawn(
      "sh",
      [SCRIPT, "-e", "console.log(JSON.stringify({ argv: process.execArgv, tunables: process.env.GLIBC_TUNABLES ?? null, pid: process.pid }))"],
      { env: envWith(extra), stdio: ["ignore", "pipe", "inherit"] }
    )
    let out = ""
    child.stdout.on("data", (d) => (out += d))
    child.on("error", reject)
    child.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`exit ${code}: ${out}`))
      resolve({ spawned: child.pid!, seen: JSON.parse(out) })
    })
  })

describe("scripts/run-node.sh", () => {
  it("runs the service with a small young generation and capped heap growth, on either database", async () => {
    for (const extra of [{}, { DATABASE_URL: "postgres://nobody@127.0.0.1:1/none" }]) {
      const { seen } = await probe(extra)
      expect(seen.argv).toEqual(["--max-semi-space-size=16", "--heap-growing-percent=50", "--no-allocation-site-pretenuring", "-e", expect.any(String)])
      expect(seen.tunables).toBeNull()
    }
  })

  it("takes the operator's settings over its own", async () => {
    const { seen } = await probe({ SERVICE_SEMI_SPACE_MB: "8", SERVICE_HEAP_GROWING_PERCENT: "20", GLIBC_TUNABLES: "glibc.malloc.arena_max=1" })
    expect(seen.argv.slice(0, 2)).toEqual(["--max-semi-space-size=8", "--heap-growing-percent=20"])
    expect(seen.tunables).toBe("glibc.malloc.arena_max=1")
  })

  it("leaves node as the process that was started, so a signal to that pid reaches it", async () => {
    const { spawned, seen } = await probe({})
    expect(seen.pid).toBe(spawned)
  })
})
