import * as ChildProcess from "node:child_process"
import { afterEach, describe, expect, it } from "vitest"
import { loadMallocTrim, mallocTrimAddon, startMallocTrim } from "../src/system/MallocTrim.js"

/** glibc's version where Node runs on glibc (the only libc with `malloc_trim`). */
const glibc = (process.report.getReport() as { readonly header?: { readonly glibcVersionRuntime?: string } }).header
  ?.glibcVersionRuntime

/**
 * A process that frees 240 MiB of malloc's memory in 4 KiB blocks, one block in 16 kept, so what
 * is freed lies between live blocks and malloc keeps it; then its RSS before and after a trim
 * (or none). `Buffer.allocUnsafeSlow` takes each block from malloc, as Node's buffers do.
 */
const CHILD = `
const [addon, trimIt] = process.argv.slice(1)
const mib = () => process.memoryUsage.rss() / 1048576
const blocks = []
for (let i = 0; i < 65536; i++) blocks.push(Buffer.allocUnsafeSlow(4096).fill(1))
const kept = blocks.filter((_, i) => i % 16 === 15)
blocks.length = 0
globalThis.gc()
globalThis.gc()
// V8 frees array buffers' memory on a helper thread after the collection.
setTimeout(() => {
  const before = mib()
  const released = trimIt === "yes" ? require(addon).trim() : false
  console.log(JSON.stringify({ before, after: mib(), released, kept: kept.length }))
}, 500)
`

const freeAndMeasure = (addon: string, trim: boolean) => {
  const out = ChildProcess.execFileSync(process.execPath, ["--expose-gc", "-e", CHILD, addon, trim ? "yes" : "no"], {
    encoding: "utf8",
    env: { ...process.env, NODE_OPTIONS: "" }
  })
  return JSON.parse(out) as { before: number; after: number; released: boolean; kept: number }
}

describe.runIf(glibc !== undefined)("malloc's free memory back to the system (glibc)", () => {
  const saved = process.env.SERVICE_MALLOC_TRIM
  afterEach(() => {
    if (saved === undefined) delete process.env.SERVICE_MALLOC_TRIM
    else process.env.SERVICE_MALLOC_TRIM = saved
  })

  it("npm install built the addon, and the service finds it", () => {
    expect(mallocTrimAddon()).toMatch(/native\/malloc-trim\/build\/Release\/malloc_trim\.node$/)
    expect(typeof loadMallocTrim()).toBe("function")
  })

  it("a trim hands back what was freed between live blocks; without one it stays resident", () => {
    const addon = mallocTrimAddon()!
    const kept = freeAndMeasure(addon, false)
    expect(kept.kept).toBe(4096)
    // Freed, yet resident: 240 MiB of blocks with live ones between them.
    expect(kept.before - kept.after).toBeLessThan(16)
    expect(kept.after).toBeGreaterThan(200)

    const trimmed = freeAndMeasure(addon, true)
    expect(trimmed.released).toBe(true)
    expect(trimmed.before).toBeGreaterThan(200)
    expect(trimmed.before - trimmed.after).toBeGreaterThan(150)
  }, 60_000)

  it("runs on the embedded database by default, on PostgreSQL when asked, on neither with off", () => {
    delete process.env.SERVICE_MALLOC_TRIM
    expect(startMallocTrim(true)).toBe(true)
    expect(startMallocTrim(false)).toBe(false)
    process.env.SERVICE_MALLOC_TRIM = "on"
    expect(startMallocTrim(false)).toBe(true)
    process.env.SERVICE_MALLOC_TRIM = "off"
    expect(startMallocTrim(true)).toBe(false)
  })
})
