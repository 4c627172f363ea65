import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"

/** Child processes and other resources the benchmark must release however it ends. */
const cleanups: Array<{ readonly name: string; readonly run: () => Promise<void> }> = []

/** Registers a cleanup; the returned function runs it early (and only once). */
export const onCleanup = (name: string, run: () => Promise<void>): (() => Promise<void>) => {
  let done = false
  const once = async () => {
    if (done) return
    done = true
    const index = cleanups.indexOf(entry)
    if (index >= 0) cleanups.splice(index, 1)
    await run()
  }
  const entry = { name, run: once }
  cleanups.push(entry)
  return once
}

/** Runs every pending cleanup, newest first; one failing does not stop the others. */
export const cleanupAll = async () => {
  while (cleanups.length > 0) {
    const entry = cleanups[cleanups.length - 1]!
    try {
      await entry.run()
    } catch (error) {
      cleanups.splice(cleanups.indexOf(entry), 1)
      console.error(`cleanup "${entry.name}" failed: ${String(error)}`)
    }
  }
}

export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port")))
    })
  })

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Runs a command to completion, failing on a non-zero exit or after `timeoutMs`. */
export const runCommand = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly env?: NodeJS.ProcessEnv; readonly timeoutMs: number; readonly cwd?: string }
) =>
  new Promise<string>((resolve, reject) => {
    const child = spawn(command, args, {
      env: options.env ?? process.env,
      cwd: options.cwd ?? process.cwd(),
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs)
    child.on("error", reject)
    child.on("exit", (code, signal) => {
      clearTimeout(timer)
      if (code === 0) resolve(output)
      else reject(new Error(`${command} ${args.join(" ")} failed (${signal ?? `exit ${code}`}):\n${output.slice(-4000)}`))
    })
  })

export interface Server {
  readonly name: string
  readonly pid: number
  readonly baseUrl: string
  /** Resident set size of the server process, in MiB, from /proc/<pid>/status. */
  readonly rssMiB: () => number | undefined
  /** User + system CPU time the process has used so far, in ms, from /proc/<pid>/stat. */
  readonly cpuMs: () => number | undefined
  /** Output of the process so far (the last few KiB), for diagnostics. */
  readonly output: () => string
  /** Lines the process logged at ERROR level (Effect's JSON logger), and the first of them. */
  readonly errors: () => { readonly count: number; readonly first: string | undefined }
  /** The logged errors by message and innermost cause, with how many times and when first and last. */
  readonly errorSummary: () => ReadonlyArray<string>
  readonly stop: () => Promise<void>
}

export const readRssMiB = (pid: number): number | undefined => {
  try {
    const status = Fs.readFileSync(`/proc/${pid}/status`, "utf8")
    const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status)
    return match === null ? undefined : Number(match[1]) / 1024
  } catch {
    return undefined
  }
}

/** Resident set size now and its peak so far (VmHWM), in MiB, from /proc/<pid>/status. */
/** RSS, its high-water mark, and its anonymous part (heaps, malloc, WebAssembly; not mapped files). */
export const readMemoryMiB = (
  pid: number
): { readonly rss: number; readonly hwm: number; readonly anon: number | undefined } | undefined => {
  try {
    const status = Fs.readFileSync(`/proc/${pid}/status`, "utf8")
    const rss = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status)
    const hwm = /^VmHWM:\s+(\d+)\s+kB$/m.exec(status)
    const anon = /^RssAnon:\s+(\d+)\s+kB$/m.exec(status)
    return rss === null || hwm === null
      ? undefined
      : { rss: Number(rss[1]) / 1024, hwm: Number(hwm[1]) / 1024, anon: anon === null ? undefined : Number(anon[1]) / 1024 }
  } catch {
    return undefined
  }
}

/** Linux reports utime/stime in clock ticks; USER_HZ is 100 on every mainstream kernel. */
const TICK_MS = 10

export const readCpuMs = (pid: number): number | undefined => {
  try {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS
  } catch {
    return undefined
  }
}

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null

/** SIGTERM, then SIGKILL if the process has not exited after `graceMs`. */
const terminate = (child: ChildProcess, graceMs: number) =>
  new Promise<void>((resolve) => {
    if (exited(child)) return resolve()
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs)
    child.once("exit", () => {
      clearTimeout(timer)
      resolve()
    })
    child.kill("SIGTERM")
  })

/**
 * Starts a server process and waits until `healthPath` answers 200. The process is killed
 * by `stop`, or by the global cleanup if the benchmark ends first.
 */
export const startServer = async (options: {
  readonly name: string
  readonly args: ReadonlyArray<string>
  readonly env: NodeJS.ProcessEnv
  readonly port: number
  readonly healthPath: string
  readonly startTimeoutMs: number
}): Promise<Server> => {
  const child = spawn(process.execPath, options.args, { env: options.env, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  let pending = ""
  let errorCount = 0
  let firstError: string | undefined
  const kinds = new Map<string, { count: number; first: string; last: string }>()
  const keep = (chunk: Buffer) => {
    const text = chunk.toString()
    output = (output + text).slice(-8192)
    const lines = (pending + text).split("\n")
    pending = lines.pop()!.slice(-65536)
    for (const line of lines) {
      if (!line.includes(`"logLevel":"ERROR"`)) continue
      errorCount++
      firstError ??= line.slice(0, 2000)
      let key = line.slice(0, 200)
      let at = ""
      try {
        const entry = JSON.parse(line) as { message?: unknown; timestamp?: unknown; cause?: unknown }
        const causes = [...String(entry.cause ?? "").matchAll(/(?:^|\n)\s*(?:\[cause\]: )?(\w*Error|error): ([^\n]*)/g)]
        const innermost = causes.at(-1)
        key = `${String(entry.message).replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, "<id>")}` +
          (innermost === undefined ? "" : ` (${innermost[1]}: ${innermost[2]!.slice(0, 160)})`)
        at = String(entry.timestamp ?? "").slice(11, 23)
      } catch {
        // not JSON: keep the line's start
      }
      const kind = kinds.get(key)
      if (kind === undefined) kinds.set(key, { count: 1, first: at, last: at })
      else {
        kind.count++
        kind.last = at
      }
    }
  }
  child.stdout!.on("data", keep)
  child.stderr!.on("data", keep)
  const stop = onCleanup(`stop ${options.name}`, () => terminate(child, 10_000))
  if (child.pid === undefined) {
    await stop()
    throw new Error(`could not start ${options.name}`)
  }
  const baseUrl = `http://127.0.0.1:${options.port}`
  const deadline = Date.now() + options.startTimeoutMs
  for (;;) {
    if (exited(child)) {
      await stop()
      throw new Error(`${options.name} exited during start-up:\n${output}`)
    }
    try {
      const res = await fetch(`${baseUrl}${options.healthPath}`, { signal: AbortSignal.timeout(1_000) })
      await res.arrayBuffer()
      if (res.status === 200) break
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`${options.name} did not become healthy within ${options.startTimeoutMs} ms:\n${output}`)
    }
    await sleep(200)
  }
  const pid = child.pid
  return {
    name: options.name,
    pid,
    baseUrl,
    rssMiB: () => readRssMiB(pid),
    cpuMs: () => readCpuMs(pid),
    output: () => output,
    errors: () => ({ count: errorCount, first: firstError }),
    errorSummary: () => [...kinds].map(([key, k]) => `${k.count} × ${key}, ${k.first}${k.count > 1 ? ` to ${k.last}` : ""}`),
    stop
  }
}

/**
 * CPU time (ms) of each PostgreSQL backend connected to `database`, by pid. Backends show
 * `postgres: <cluster>: <user> <database> <client> <state>` as their command line; /proc
 * reports their CPU time to any user.
 */
export const databaseBackendsCpuMs = (database: string): Map<number, number> => {
  const out = new Map<number, number>()
  let entries: Array<string> = []
  try {
    entries = Fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name))
  } catch {
    return out
  }
  for (const name of entries) {
    try {
      const cmdline = Fs.readFileSync(`/proc/${name}/cmdline`, "utf8")
      if (!cmdline.startsWith("postgres:") || !cmdline.split(/[\s\0]+/).includes(database)) continue
      const cpu = readCpuMs(Number(name))
      if (cpu !== undefined) out.set(Number(name), cpu)
    } catch {
      // the process ended meanwhile
    }
  }
  return out
}

/** CPU time the backends used between two `databaseBackendsCpuMs` readings. */
export const cpuDelta = (before: Map<number, number>, after: Map<number, number>) => {
  let total = 0
  for (const [pid, cpu] of after) total += cpu - (before.get(pid) ?? 0)
  return total
}
