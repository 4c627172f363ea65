import { Data, Effect, Layer, Option, Runtime } from "effect"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Path from "node:path"
import { isValidTimeZone } from "../kernel/TimeZone.js"
import { AppConfig } from "../kernel/AppConfig.js"
import { Credentials } from "./Credentials.js"
import { Users } from "./Users.js"

/**
 * The command line's way in while a server holds the embedded database. PGlite has one
 * process at a time, so `db:create-token` cannot open the data directory the server runs on;
 * it asks the server instead, over a Unix socket in that directory that only the
 * directory's owner can open (mode 0600, bound in a private directory and renamed into
 * place, so it is never reachable with looser rights). One JSON line each way.
 */

export const SOCKET_NAME = "steady.sock"
export const socketPath = (dataDir: string) => Path.join(dataDir, SOCKET_NAME)

export class ControlError extends Data.TaggedError("ControlError")<{ readonly message: string }> {}

export type ControlRequest =
  | { readonly command: "create-token"; readonly user: string; readonly name?: string; readonly timezone?: string }
  | { readonly command: "list-users" }

export interface IssuedToken {
  readonly token: string
  readonly id: number
  readonly name: string
  readonly userId: number
  readonly username: string
}

/** Checks a create-token request the same way wherever it runs (CLI or server). */
export const tokenRequest = (flags: { readonly user?: string; readonly name?: string; readonly timezone?: string }, defaultTimezone: string) => {
  const username = flags.user?.trim()
  if (!username) return Effect.fail(new ControlError({ message: "--user is required" }))
  if (username.length > 100) return Effect.fail(new ControlError({ message: "--user must be at most 100 characters" }))
  const timezone = flags.timezone ?? defaultTimezone
  if (!isValidTimeZone(timezone)) return Effect.fail(new ControlError({ message: `Unknown time zone "${timezone}"` }))
  const name = (flags.name ?? "cli").trim()
  if (name.length === 0 || name.length > 100) return Effect.fail(new ControlError({ message: "--name must be 1-100 characters" }))
  return Effect.succeed({ username, timezone, name })
}

/** Creates the user if needed (Inbox, default slots) and a token for them. */
export const issueToken = Effect.fnUntraced(function*(flags: { readonly user?: string; readonly name?: string; readonly timezone?: string }) {
  const config = yield* AppConfig
  const { name, timezone, username } = yield* tokenRequest(flags, config.defaultTimezone)
  const user = yield* (yield* Users).findOrCreate(username, timezone)
  const token = yield* (yield* Credentials).createToken(user.id, name)
  return { token: token.token, id: token.id, name: token.name, userId: user.id, username: user.username } satisfies IssuedToken
})

export const listUsers = Effect.flatMap(Users, (users) => users.list)

/** Bounded: a request is a few hundred bytes; anything longer is not ours. */
const MAX_LINE = 4096

const answer = Effect.fnUntraced(function*(line: string) {
  const request = yield* Effect.try({
    try: () => JSON.parse(line) as ControlRequest,
    catch: () => new ControlError({ message: "not a JSON request" })
  })
  switch (request?.command) {
    case "create-token":
      return yield* issueToken(request)
    case "list-users":
      return yield* listUsers
    default:
      return yield* Effect.fail(new ControlError({ message: "unknown command" }))
  }
})

/** Listens on DATA_DIR/steady.sock while the embedded database is open; nothing on PostgreSQL. */
export const LocalControlLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const config = yield* AppConfig
    if (Option.isSome(config.databaseUrl)) return
    const run = Runtime.runPromise(yield* Effect.runtime<AppConfig | Users | Credentials>())
    const final = socketPath(config.dataDir)
    const server = Net.createServer((socket) => {
      let buffered = ""
      socket.setEncoding("utf8")
      socket.setTimeout(10_000, () => socket.destroy())
      socket.on("error", () => socket.destroy())
      socket.on("data", (chunk: string) => {
        buffered += chunk
        const end = buffered.indexOf("\n")
        if (end < 0) {
          if (buffered.length > MAX_LINE) socket.destroy()
          return
        }
        socket.pause()
        run(
          answer(buffered.slice(0, end)).pipe(
            Effect.map((data) => ({ data })),
            Effect.catchAll((e) => Effect.succeed({ error: e.message })),
            Effect.catchAllDefect(() => Effect.succeed({ error: "the service could not do that; see its log" }))
          )
        ).then((reply) => socket.end(`${JSON.stringify(reply)}\n`))
      })
    })
    yield* Effect.acquireRelease(
      Effect.async<void, ControlError>((resume) => {
        // Bound where nobody else can reach it, then moved into place with its rights set.
        let privateDir: string
        try {
          privateDir = Fs.mkdtempSync(Path.join(config.dataDir, ".control-"))
        } catch (e) {
          return resume(Effect.fail(new ControlError({ message: String(e) })))
        }
        const bound = Path.join(privateDir, SOCKET_NAME)
        server.once("error", (e) => resume(Effect.fail(new ControlError({ message: String(e) }))))
        server.listen(bound, () => {
          Fs.chmodSync(bound, 0o600)
          Fs.rmSync(final, { force: true })
          Fs.renameSync(bound, final)
          Fs.rmdirSync(privateDir)
          resume(Effect.void)
        })
      }),
      () =>
        Effect.sync(() => {
          server.close()
          Fs.rmSync(final, { force: true })
        })
    ).pipe(
      // A service without its local channel still serves; the CLI then says to stop it first.
      Effect.catchAll((e) => Effect.logWarning(`No local control socket: ${e.message}`))
    )
  })
)

/** Sends one request to a running service's socket; fails when none answers there. */
export const askService = (dataDir: string, request: ControlRequest) =>
  Effect.async<unknown, ControlError>((resume) => {
    const socket = Net.createConnection(socketPath(dataDir))
    let reply = ""
    socket.setEncoding("utf8")
    socket.setTimeout(15_000, () => socket.destroy(new Error("no answer")))
    socket.on("connect", () => socket.write(`${JSON.stringify(request)}\n`))
    socket.on("data", (chunk: string) => (reply += chunk))
    socket.on("error", (e) => resume(Effect.fail(new ControlError({ message: `no running service answered: ${e.message}` }))))
    socket.on("end", () => {
      try {
        const parsed = JSON.parse(reply) as { data?: unknown; error?: string }
        resume(parsed.error !== undefined ? Effect.fail(new ControlError({ message: parsed.error })) : Effect.succeed(parsed.data))
      } catch {
        resume(Effect.fail(new ControlError({ message: "the running service sent no answer" })))
      }
    })
  })
