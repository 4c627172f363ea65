import { NodeRuntime } from "@effect/platform-node"
import { ConfigError, Effect, Layer, Logger, LogLevel } from "effect"
import { formatConfigError } from "./services/AppConfig.js"
import { DataDirLocked } from "./services/DataDirLock.js"
import { ServiceLive } from "./Program.js"

const logLevel = (name: string | undefined) =>
  LogLevel.allLevels.find((level) => level.label.toLowerCase() === (name ?? "info").toLowerCase()) ?? LogLevel.Info

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
