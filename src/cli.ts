import { NodeRuntime } from "@effect/platform-node"
import { ConfigError, Data, Effect, Layer, Logger, LogLevel } from "effect"
import { isValidTimeZone } from "./domain/TimeZone.js"
import { MigratedDatabaseLive } from "./Program.js"
import { AppConfig, formatConfigError } from "./services/AppConfig.js"
import { Credentials } from "./services/Credentials.js"
import { DataDirLocked } from "./services/DataDirLock.js"
import { ServiceClockLive } from "./services/ServiceClock.js"
import { Users } from "./services/Users.js"

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

/** Creates the user if needed (Inbox, default slots) and prints the raw token last. */
const createToken = (flags: Record<string, string>) =>
  Effect.gen(function*() {
    const username = flags.user?.trim()
    if (!username) return yield* Effect.fail(new UsageError({ message: "--user is required" }))
    if (username.length > 100) return yield* Effect.fail(new UsageError({ message: "--user must be at most 100 characters" }))
    const config = yield* AppConfig
    const timezone = flags.timezone ?? config.defaultTimezone
    if (!isValidTimeZone(timezone)) return yield* Effect.fail(new UsageError({ message: `Unknown time zone "${timezone}"` }))
    const name = (flags.name ?? "cli").trim()
    if (name.length === 0 || name.length > 100) return yield* Effect.fail(new UsageError({ message: "--name must be 1-100 characters" }))
    const users = yield* Users
    const credentials = yield* Credentials
    const user = yield* users.findOrCreate(username, timezone)
    const token = yield* credentials.createToken(user.id, name)
    console.error(`Created token "${token.name}" (id ${token.id}) for user ${user.username} (id ${user.id})`)
    console.log(token.token)
  })

const listUsers = Effect.gen(function*() {
  const users = yield* Users
  for (const user of yield* users.list) console.log(`${user.id}\t${user.username}\t${user.timezone}\t${user.created_at}`)
})

const [command, ...rest] = process.argv.slice(2)

const program = Effect.gen(function*() {
  const flags = yield* Effect.try({ try: () => parseFlags(rest), catch: (e) => e as UsageError })
  switch (command) {
    case "create-token":
      return yield* createToken(flags)
    case "migrate":
      return yield* Effect.sync(() => console.error("Migrations are up to date"))
    case "list-users":
      return yield* listUsers
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
  Effect.catchIf((e): e is UsageError => e instanceof UsageError, (e) => fail(`${e.message}\n\n${USAGE}`)),
  Effect.catchIf(ConfigError.isConfigError, (e) => fail(formatConfigError(e).map((l) => `Invalid configuration: ${l}`).join("\n"))),
  Effect.catchIf((e): e is DataDirLocked => e instanceof DataDirLocked, (e) => fail(e.message)),
  Effect.catchAll((e) => fail(`Failed: ${String((e as { message?: string }).message ?? e)}`)),
  Logger.withMinimumLogLevel(LogLevel.Warning),
  NodeRuntime.runMain({ disableErrorReporting: true })
)
