import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { ConfigError, Data, Effect, Layer, Logger, LogLevel, Option } from "effect"
import { MigratedDatabaseLive } from "./Program.js"
import { AppConfig, formatConfigError } from "./kernel/AppConfig.js"
import { Credentials } from "./accounts/Credentials.js"
import { DataDirLocked } from "./sql/DataDirLock.js"
import { askService, ControlError, type IssuedToken, issueToken, listUsers, tokenRequest } from "./accounts/LocalControl.js"
import { ServiceClockLive } from "./kernel/ServiceClock.js"
import { Users } from "./accounts/Users.js"

class UsageError extends Data.TaggedError("UsageError")<{ readonly message: string }> {}

const USAGE = `Usage:
  npm run --silent db:create-token -- --user <username> [--name <token name>] [--timezone <IANA zone>]
  npm run --silent db:migrate
  npm run --silent db:list-users`

const parseFlags = (args: ReadonlyArray<string>) => {
  const flags: Record<string, string> = {}
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(arg)
    if (match === null) throw new UsageError({ message: `Unexpected argument "${arg}"` })
    const value = match[2] ?? args[++i]
    if (value === undefined) throw new UsageError({ message: `--${match[1]} needs a value` })
    flags[match[1]!] = value
  }
  return flags
}

const printToken = (token: IssuedToken) => {
  console.error(`Created token "${token.name}" (id ${token.id}) for user ${token.username} (id ${token.userId})`)
  console.log(token.token)
}

/** Creates the user if needed (Inbox, default slots) and prints the raw token last. */
const createToken = (flags: Record<string, string>) => Effect.map(issueToken(flags), printToken)

const printUsers = (users: ReadonlyArray<{ id: number; username: string; timezone: string; created_at: string }>) => {
  for (const user of users) console.log(`${user.id}\t${user.username}\t${user.timezone}\t${user.created_at}`)
}

const listUsersCommand = Effect.map(listUsers, printUsers)

/**
 * While a server holds the embedded database, the same commands go to it over its local
 * socket (LocalControl); what it answers is printed as if run here.
 */
const viaRunningService = (locked: DataDirLocked) =>
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (Option.isSome(config.databaseUrl)) return yield* Effect.fail(locked)
    const flags = yield* Effect.try({ try: () => parseFlags(rest), catch: (e) => e as UsageError })
    switch (command) {
      case "create-token": {
        yield* tokenRequest(flags, config.defaultTimezone)
        const answer = yield* askService(config.dataDir, { command: "create-token", user: flags.user!, name: flags.name, timezone: flags.timezone })
        return printToken(answer as IssuedToken)
      }
      case "list-users":
        return printUsers((yield* askService(config.dataDir, { command: "list-users" })) as Parameters<typeof printUsers>[0])
      case "migrate":
        // The running service migrated the database when it started.
        return yield* Effect.sync(() => console.error("Migrations are up to date (applied by the running service)"))
      default:
        return yield* Effect.fail(locked)
    }
  }).pipe(
    Effect.catchIf((e): e is ControlError => e instanceof ControlError && e.message.startsWith("no running service"), () => Effect.fail(locked)),
    Effect.provide(AppConfig.Live)
  )

const [command, ...rest] = process.argv.slice(2)

const program = Effect.gen(function*() {
  const flags = yield* Effect.try({ try: () => parseFlags(rest), catch: (e) => e as UsageError })
  switch (command) {
    case "create-token":
      return yield* createToken(flags)
    case "migrate":
      return yield* Effect.sync(() => console.error("Migrations are up to date"))
    case "list-users":
      return yield* listUsersCommand
    default:
      return yield* Effect.fail(new UsageError({ message: command ? `Unknown command "${command}"` : "A command is required" }))
  }
})

const CliLive = Layer.mergeAll(Users.Default, Credentials.Default).pipe(
  Layer.provideMerge(MigratedDatabaseLive),
  Layer.provideMerge(ServiceClockLive),
  Layer.provideMerge(AppConfig.Live)
)

const fail = (message: string) =>
  Effect.sync(() => {
    console.error(message)
    process.exitCode = 1
  })

program.pipe(
  Effect.provide(CliLive),
  Effect.catchIf((e): e is DataDirLocked => e instanceof DataDirLocked, viaRunningService),
  Effect.catchIf((e): e is ControlError => e instanceof ControlError, (e) => fail(e.message.startsWith("--") ? `${e.message}\n\n${USAGE}` : e.message)),
  Effect.catchIf((e): e is UsageError => e instanceof UsageError, (e) => fail(`${e.message}\n\n${USAGE}`)),
  Effect.catchIf(ConfigError.isConfigError, (e) => fail(formatConfigError(e).map((l) => `Invalid configuration: ${l}`).join("\n"))),
  Effect.catchIf((e): e is DataDirLocked => e instanceof DataDirLocked, (e) => fail(e.message)),
  Effect.catchAll((e) => fail(`Failed: ${String((e as { message?: string }).message ?? e)}`)),
  Logger.withMinimumLogLevel(LogLevel.Warning),
  NodeRuntime.runMain({ disableErrorReporting: true })
)
