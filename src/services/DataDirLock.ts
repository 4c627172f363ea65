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
 * PGlite does not lock its directory and two writers corrupt it, so the service holds a
 * lock file there for as long as the scope lives. A lock left by a dead process is taken over.
 */
export const lockDataDir = (dataDir: string) =>
  Effect.acquireRelease(
    Effect.try({
      try: () => {
        Fs.mkdirSync(dataDir, { recursive: true })
        const file = Path.join(dataDir, "steady.lock")
        for (let attempt = 0; attempt < 2; attempt++) {
          try {
            Fs.writeFileSync(file, String(process.pid), { flag: "wx" })
            return file
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error
            const holder = Number(Fs.readFileSync(file, "utf8").trim())
            // Our own pid means a second open in this very process: as harmful as another process.
            if (Number.isInteger(holder) && holder > 0 && isAlive(holder)) {
              throw new DataDirLocked({
                message: holder === process.pid
                  ? `The data directory ${Path.resolve(dataDir)} is already open in this process.`
                  : `The data directory ${Path.resolve(dataDir)} is in use by another Steady process (pid ${holder}). ` +
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
    (file) => Effect.sync(() => Fs.rmSync(file, { force: true }))
  )
