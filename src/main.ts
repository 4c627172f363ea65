import { Cause, ConfigError, Effect, Exit, Fiber, Layer, Logger, LogLevel } from "effect"
import { performance } from "node:perf_hooks"
import { drainServers } from "./http/GracefulStop.js"
import { formatConfigError } from "./kernel/AppConfig.js"
import { DataDirLocked } from "./sql/DataDirLock.js"
import { ServiceLive } from "./Program.js"
import { startIdleCollector } from "./system/IdleCollector.js"
import { startMallocTrim } from "./system/MallocTrim.js"

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

startIdleCollector()
// The embedded database is the one without DATABASE_URL (AppConfig reads it the same way).
startMallocTrim((process.env.DATABASE_URL ?? "").trim() === "")

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
