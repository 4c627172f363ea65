import { NodeRuntime } from "@effect/platform-node"
import { ConfigError, Effect, Layer, Logger, LogLevel } from "effect"
import { formatConfigError } from "./services/AppConfig.js"
import { DataDirLocked } from "./services/DataDirLock.js"
import { ServiceLive } from "./Program.js"

const LOG_LEVEL_ALIASES: Record<string, string> = { warning: "warn", err: "error", critical: "fatal", off: "none" }

/** `LOG_LEVEL` by Effect's names (debug, info, warn, error, …) or the usual aliases (warning). */
const logLevel = (name: string | undefined) => {
  const wanted = (name ?? "info").trim().toLowerCase()
  const label = LOG_LEVEL_ALIASES[wanted] ?? wanted
  return LogLevel.allLevels.find((level) => level.label.toLowerCase() === label) ?? LogLevel.Info
}

/**
 * A stop signal often arrives twice: once from the terminal or service manager to the whole
 * process group, and again relayed by npm/npx/tsx. runMain handles the first and then lets
 * go, so the echo would kill the process mid-shutdown (embedded database still open, DATA_DIR
 * lock left behind). Echoes within a few seconds are absorbed; a later signal still forces exit.
 */
let firstStopSignal: number | undefined
const absorbEcho = (signal: NodeJS.Signals) => {
  const at = performance.now()
  if (firstStopSignal === undefined) firstStopSignal = at
  else if (at - firstStopSignal > 3_000) process.exit(signal === "SIGINT" ? 130 : 143)
}
process.on("SIGINT", absorbEcho)
process.on("SIGTERM", absorbEcho)

Layer.launch(ServiceLive).pipe(
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
  Effect.provide(Logger.json),
  // LOG_LEVEL is read once here: the logger has to exist before the configuration layer does.
  Logger.withMinimumLogLevel(logLevel(process.env.LOG_LEVEL)),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
