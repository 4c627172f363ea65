import { Data, Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"

export class DataDirLocked extends Data.TaggedError("DataDirLocked")<{ readonly message: string }> {}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"
  }
}

/**
 * When a process started (clock ticks since boot, /proc/PID/stat field 22), or undefined where
 * /proc is not there. With the pid it names one process: a pid alone is reused, and after a
 * container restart the new node process (pid 1 again) meets its own pid in the stale lock.
 */
const startTimeOf = (pid: number): string | undefined => {
  try {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]
  } catch {
    return undefined
  }
}

/** Lock files this process holds right now. */
const heldHere = new Set<string>()

/**
 * A forced exit (a second stop signal, `process.exit`) skips the scope's release; the lock
 * would then wait for the next start to find its holder gone. Dropping it on `exit` says at
 * once that nobody holds the directory, which is true from that moment.
 */
let exitHookInstalled = false
const releaseOnExit = () => {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.once("exit", () => {
    for (const file of heldHere) Fs.rmSync(file, { force: true })
  })
}

interface Holder {
  readonly pid: number
  readonly started: string | undefined
}

const parseHolder = (text: string): Holder | undefined => {
  const [pid, started] = text.trim().split(/\s+/)
  const n = Number(pid)
  return Number.isInteger(n) && n > 0 ? { pid: n, started } : undefined
}

/** Whether the lock's holder is a live process other than a dead one whose pid was reused. */
const holds = (holder: Holder) => {
  if (holder.pid === process.pid) return false
  if (!isAlive(holder.pid)) return false
  if (holder.started === undefined) return true
  const started = startTimeOf(holder.pid)
  return started === undefined || started === holder.started
}

/**
 * PGlite does not lock its directory and two writers corrupt it, so the service holds a
 * lock file there for as long as the scope lives. The file names the holder by pid and start
 * time; a lock left by a process that is gone (even if its pid lives on in another process,
 * or in this one) is taken over.
 */
export const lockDataDir = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        Fs.mkdirSync(dataDir, { recursive: true })
        const file = Path.join(dataDir, "steady.lock")
        const key = Path.resolve(file)
        // A second open in this very process is as harmful as another process.
        if (heldHere.has(key)) {
          throw new DataDirLocked({ message: `The data directory ${Path.resolve(dataDir)} is already open in this process.` })
        }
        const me = [process.pid, startTimeOf(process.pid)].filter((x) => x !== undefined).join(" ")
        for (let attempt = 0; attempt < 2; attempt++) {
          try {
            Fs.writeFileSync(file, me, { flag: "wx" })
            heldHere.add(key)
            releaseOnExit()
            return key
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
            const holder = parseHolder(Fs.readFileSync(file, "utf8"))
            if (holder !== undefined && holds(holder)) {
              throw new DataDirLocked({
                message: `The data directory ${Path.resolve(dataDir)} is in use by another Steady process (pid ${holder.pid}). ` +
                  "Stop it first, or point DATA_DIR elsewhere."
              })
            }
            Fs.rmSync(file, { force: true })
          }
        }
        throw new DataDirLocked({ message: `Could not take the lock on ${Path.resolve(dataDir)}` })
      },
      catch: (error) =>
        error instanceof DataDirLocked
          ? error
          : new DataDirLocked({ message: `Could not lock the data directory ${Path.resolve(dataDir)}: ${String(error)}` })
    }),
    (file) =>
      Effect.sync(() => {
        heldHere.delete(file)
        Fs.rmSync(file, { force: true })
      })
  )
