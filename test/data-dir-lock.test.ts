import { spawn, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { Effect, Exit, Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { lockDataDir } from "../src/sql/DataDirLock.js"

const dirs: Array<string> = []
const tempDir = () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "steady-lock-"))
  dirs.push(dir)
  return dir
}
afterAll(() => dirs.forEach((dir) => Fs.rmSync(dir, { recursive: true, force: true })))

/** Takes the lock in a scope of its own; the scope is closed by `release`. */
const take = async (dir: string) => {
  const scope = Effect.runSync(Scope.make())
  const exit = await Effect.runPromiseExit(Scope.extend(lockDataDir(dir), scope))
  return { exit, release: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

const lockFile = (dir: string) => Path.join(dir, "steady.lock")
const startTicks = (pid: number) => {
  const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]!
}
const message = (exit: Exit.Exit<unknown, { readonly message: string }>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? exit.cause.error.message : undefined

describe("the embedded data directory lock", () => {
  it("a stale lock naming this very process's pid is taken over (a container restart with node as pid 1)", async () => {
    const dir = tempDir()
    Fs.writeFileSync(lockFile(dir), String(process.pid))
    const lock = await take(dir)
    expect(Exit.isSuccess(lock.exit)).toBe(true)
    expect(Fs.readFileSync(lockFile(dir), "utf8").split(" ")[0]).toBe(String(process.pid))
    await lock.release()
    expect(Fs.existsSync(lockFile(dir))).toBe(false)
  })

  it("a second open in the same process is refused while the first holds it, and allowed after", async () => {
    const dir = tempDir()
    const first = await take(dir)
    expect(Exit.isSuccess(first.exit)).toBe(true)
    const second = await take(dir)
    expect(message(second.exit)).toContain("is already open in this process")
    await first.release()
    const third = await take(dir)
    expect(Exit.isSuccess(third.exit)).toBe(true)
    await third.release()
  })

  it.skipIf(!Fs.existsSync("/proc/self/stat"))("a live process holds it; the same pid with another start time is a reused pid and is taken over", async () => {
    const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], { stdio: "ignore" })
    try {
      const pid = child.pid!
      const held = tempDir()
      Fs.writeFileSync(lockFile(held), `${pid} ${startTicks(pid)}`)
      const refused = await take(held)
      expect(message(refused.exit)).toContain(`in use by another Steady process (pid ${pid})`)
      expect(Fs.readFileSync(lockFile(held), "utf8")).toBe(`${pid} ${startTicks(pid)}`)

      const reused = tempDir()
      Fs.writeFileSync(lockFile(reused), `${pid} 1`)
      const taken = await take(reused)
      expect(Exit.isSuccess(taken.exit)).toBe(true)
      await taken.release()
    } finally {
      child.kill("SIGKILL")
    }
  })

  it("a forced exit while holding the lock (process.exit, as on a late second stop signal) leaves no lock behind", () => {
    const dir = tempDir()
    const module = Path.resolve("src/sql/DataDirLock.ts")
    const code = `
      import { Effect } from "effect"
      import { lockDataDir } from ${JSON.stringify(module)}
      Effect.runPromise(Effect.scoped(Effect.zipRight(lockDataDir(${JSON.stringify(dir)}), Effect.sync(() => {
        console.log("locked")
        process.exit(3)
      }))))`
    const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { encoding: "utf8", timeout: 30_000 })
    expect(child.stdout, child.stderr).toContain("locked")
    expect(child.status).toBe(3)
    expect(Fs.existsSync(lockFile(dir))).toBe(false)
  })
})
