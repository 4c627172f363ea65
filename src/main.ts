import { Cause, ConfigError, Effect, Exit, Fiber, Layer, Logger, LogLevel } from "effect"
import { performance } from "node:perf_hooks"
import * as V8 from "node:v8"
import * as Vm from "node:vm"
import { drainServers } from "./http/GracefulStop.js"
import { formatConfigError } from "./kernel/AppConfig.js"
import { DataDirLocked } from "./sql/DataDirLock.js"
import { ServiceLive } from "./Program.js"

const LOG_LEVEL_ALIASES: Record<string, string> = { warning: "warn", err: "error", critical: "fatal", off: "none" }

/** `LOG_LEVEL` by Effect's names (debug, info, warn, error, …) or the usual aliases (warning). */
const logLevel = (name: string | undefined) => {
  const wanted = (name ?? "info").trim().toLowerCase()
  const label = LOG_LEVEL_ALIASES[wanted] ?? wanted
  return LogLevel.allLevels.find((level) => level.label.toLowerCase() === label) ?? LogLevel.Info
}

/** Requests in flight get this long to finish after a stop signal (up to 10 s). */
const DRAIN_GRACE_MS = 10_000
/** Whatever clients or a stuck finalizer do, the process is gone by then (within 12 s of the signal). */
const HARD_STOP_MS = 11_500
/** A second signal this soon is the same stop relayed by npm/npx/tsx, not an operator's insistence. */
const ECHO_MS = 3_000

const withLogging = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  self.pipe(
    Effect.provide(Logger.json),
    // LOG_LEVEL is read once here: the logger has to exist before the configuration layer does.
    Logger.withMinimumLogLevel(logLevel(process.env.LOG_LEVEL))
  )

const program = Layer.launch(ServiceLive).pipe(
  Effect.catchIf(ConfigError.isConfigError, (error) =>
    Effect.sync(() => {
      for (const line of formatConfigError(error)) console.error(`Invalid configuration: ${line}`)
      process.exitCode = 1
    })),
  Effect.catchIf((e): e is DataDirLocked => e instanceof DataDirLocked, (error) =>
    Effect.sync(() => {
      console.error(error.message)
      process.exitCode = 1
    })),
  Effect.tapErrorCause((cause) =>
    Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError("Steady stopped on an unexpected failure", cause)),
  withLogging
)

// Our own runner rather than NodeRuntime.runMain: runMain interrupts the program on the first
// signal, which stops the request handler before the server has drained (see GracefulStop).
const main = Effect.runFork(program)
const keepAlive = setInterval(() => {}, 2 ** 31 - 1)
main.addObserver((exit) => {
  clearInterval(keepAlive)
  const failed = Exit.isFailure(exit) && !Cause.isInterruptedOnly(exit.cause)
  process.exit(failed ? 1 : process.exitCode ?? 0)
})

/**
 * Memory back once the service goes quiet. Under load V8 lets its old generation grow to
 * about twice the live heap before it collects, and after a collection it keeps the pages
 * the survivors are scattered over; its own idle "memory reducer" judges idleness by the
 * allocation rate it saw at its last collection, so after a burst it can wait minutes. So:
 * every 2 s, if the event loop was under 1 % busy for the last 10 s and the heap holds
 * 16 MiB more than after the last collection run here, one full collection that also
 * compacts every page (survivors moved together, the emptied pages handed back: measured on
 * the loaded service's heap, old space 154 → 65 MiB where a plain full collection left 99).
 * It costs about twice a plain collection's pause, and only runs while no request is coming.
 * Off with SERVICE_IDLE_GC=off.
 */
const startIdleCollector = () => {
  if (/^(off|0|false|no)$/i.test((process.env.SERVICE_IDLE_GC ?? "").trim())) return
  let collect: (() => void) | undefined
  try {
    const exposed = (globalThis as { gc?: unknown }).gc
    if (typeof exposed === "function") collect = exposed as () => void
    else {
      // `--expose-gc` after start-up reaches new contexts only: take `gc` from one.
      V8.setFlagsFromString("--expose-gc")
      const fromContext: unknown = Vm.runInNewContext("gc")
      if (typeof fromContext === "function") collect = fromContext as () => void
    }
  } catch {
    collect = undefined
  }
  if (collect === undefined) return
  const CHECK_MS = 2_000
  const QUIET_CHECKS = 5
  const QUIET_UTILIZATION = 0.01
  const GROWTH_BYTES = 16 * 1024 * 1024
  let last = performance.eventLoopUtilization()
  let quietChecks = 0
  let baseline = V8.getHeapStatistics().total_physical_size
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization()
    const utilization = performance.eventLoopUtilization(now, last).utilization
    last = now
    quietChecks = utilization < QUIET_UTILIZATION ? quietChecks + 1 : 0
    if (quietChecks < QUIET_CHECKS) return
    const heap = V8.getHeapStatistics().total_physical_size
    if (heap < baseline + GROWTH_BYTES) {
      // Shrunk meanwhile (V8's own collections): grow from there.
      baseline = Math.min(baseline, heap)
      return
    }
    // `--compact-on-every-full-gc` for this one collection only (V8 reads it when the
    // collection starts; Node leaves flags writable after start-up).
    V8.setFlagsFromString("--compact-on-every-full-gc")
    try {
      collect()
    } finally {
      V8.setFlagsFromString("--no-compact-on-every-full-gc")
    }
    baseline = V8.getHeapStatistics().total_physical_size
    quietChecks = 0
    // The collection's own time shows as a busy loop in the next window; start it afresh.
    last = performance.eventLoopUtilization()
  }, CHECK_MS)
  timer.unref()
}
startIdleCollector()

let stopAt: number | undefined
const stop = (signal: NodeJS.Signals) => {
  const now = performance.now()
  if (stopAt !== undefined) {
    if (now - stopAt > ECHO_MS) process.exit(signal === "SIGINT" ? 130 : 143)
    return
  }
  stopAt = now
  setTimeout(() => {
    Effect.runSync(withLogging(Effect.logWarning(`Still stopping ${HARD_STOP_MS} ms after ${signal}: exiting now`)))
    process.exit(0)
  }, HARD_STOP_MS).unref()
  Effect.runSync(withLogging(Effect.logInfo(`${signal}: draining connections, then stopping`)))
  void drainServers(DRAIN_GRACE_MS).then(() => Effect.runFork(Fiber.interrupt(main)))
}
process.on("SIGINT", stop)
process.on("SIGTERM", stop)
