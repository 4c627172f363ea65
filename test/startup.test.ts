import { PGlite } from "@electric-sql/pglite"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import Pg from "pg"
import { ConfigProvider, Effect, Either } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { appConfig, formatConfigError } from "../src/kernel/AppConfig.js"
import { freshDatabase, serverUrl, type TestDatabase } from "./support/database.js"
import { makeClient } from "./support/service.js"

const ROOT = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const TOKEN_LINE = /^[0-9a-f]{64}$/
const DEFAULT_SLOTS = [
  { label: "Early morning", start_time: "07:00" },
  { label: "Morning", start_time: "09:00" },
  { label: "Midday", start_time: "12:00" },
  { label: "Afternoon", start_time: "16:00" },
  { label: "Evening", start_time: "20:30" }
]

/** The parent's environment without anything that configures the service. */
const cleanEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined) continue
    if (/^(DATABASE_URL|TEST_DATABASE_URL|DATA_DIR|PORT|HOST|LOG_LEVEL|SERVICE_.*)$/.test(key)) continue
    env[key] = value
  }
  return env
}

interface Spawned {
  readonly child: ChildProcess
  readonly stdout: () => string
  readonly stderr: () => string
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>
  readonly stop: () => Promise<number | null>
}

const running = new Set<Spawned>()

/** Kills the whole process group (npx → tsx → node) the child leads. */
const signalGroup = (child: ChildProcess, signal: NodeJS.Signals) => {
  if (child.pid === undefined) return
  try {
    process.kill(-child.pid, signal)
  } catch {
    // already gone
  }
}

const groupAlive = (child: ChildProcess) => {
  if (child.pid === undefined) return false
  try {
    process.kill(-child.pid, 0)
    return true
  } catch {
    return false
  }
}

const start = (script: "src/main.ts" | "src/cli.ts", args: ReadonlyArray<string>, env: Record<string, string>): Spawned => {
  const child = spawn("npx", ["tsx", script, ...args], {
    cwd: ROOT,
    env: { ...cleanEnv(), LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true
  })
  let out = ""
  let err = ""
  child.stdout!.on("data", (chunk) => (out += String(chunk)))
  child.stderr!.on("data", (chunk) => (err += String(chunk)))
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  const spawned: Spawned = {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    stop: async () => {
      signalGroup(child, "SIGTERM")
      const code = await exited
      // npx may exit before the node process under it has finished shutting down (and
      // released DATA_DIR): wait for the whole group, then kill whatever is left. Generous, as
      // a machine running two test workers beside other load has taken over 15 s to stop tsx.
      const deadline = Date.now() + 30_000
      while (groupAlive(child) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
      signalGroup(child, "SIGKILL")
      return code
    }
  }
  running.add(spawned)
  void exited.then(() => running.delete(spawned))
  return spawned
}

/** Runs a command to completion, killing it after `timeoutMs`. */
const runToEnd = async (
  script: "src/main.ts" | "src/cli.ts",
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  timeoutMs = 60_000
) => {
  const proc = start(script, args, env)
  const timer = setTimeout(() => signalGroup(proc.child, "SIGKILL"), timeoutMs)
  const code = await proc.exited
  clearTimeout(timer)
  signalGroup(proc.child, "SIGKILL")
  return { code, stdout: proc.stdout(), stderr: proc.stderr() }
}

/** Starts the server on a free port and waits until it listens. */
const startServer = async (env: Record<string, string>, timeoutMs = 90_000) => {
  const proc = start("src/main.ts", [], { PORT: "0", HOST: "127.0.0.1", ...env })
  const deadline = Date.now() + timeoutMs
  let url: string | undefined
  while (url === undefined) {
    const match = /Listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(proc.stdout())
    if (match !== null) {
      url = match[1]!
      break
    }
    const code = await Promise.race([proc.exited, new Promise<"wait">((r) => setTimeout(() => r("wait"), 100))])
    if (code !== "wait") throw new Error(`server exited (${code}) before listening:\n${proc.stderr()}\n${proc.stdout()}`)
    if (Date.now() > deadline) {
      await proc.stop()
      throw new Error(`server did not start within ${timeoutMs} ms:\n${proc.stderr()}`)
    }
  }
  return { proc, url, client: (token?: string) => makeClient(url!, token ? { authorization: `Bearer ${token}` } : {}) }
}

/** The lines of stderr the program wrote itself (npm may add warnings of its own). */
const ownLines = (text: string) => text.split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("npm warn"))

const lastLine = (text: string) => {
  const lines = text.split("\n").filter((l) => l.trim() !== "")
  return lines[lines.length - 1]?.trim()
}

const tempDir = () => Fs.mkdtempSync(Path.join(Os.tmpdir(), "steady-startup-"))
const dirs: Array<string> = []
const databases: Array<TestDatabase> = []

afterAll(async () => {
  for (const proc of [...running]) await proc.stop()
  for (const db of databases) await db.drop().catch(() => undefined)
  for (const dir of dirs) Fs.rmSync(dir, { recursive: true, force: true })
})

/** Where the suite's database lives for a spawned process: a fresh server database, or a fresh DATA_DIR. */
const suiteDatabase = async (): Promise<{ env: Record<string, string>; query: (text: string, params?: Array<unknown>) => Promise<Array<any>> }> => {
  if (serverUrl() !== undefined) {
    const db = await freshDatabase()
    databases.push(db)
    return {
      env: { DATABASE_URL: db.url!, DATA_DIR: db.dataDir },
      query: async (text, params = []) => {
        const client = new Pg.Client({ connectionString: db.url! })
        await client.connect()
        try {
          return (await client.query(text, params)).rows
        } finally {
          await client.end()
        }
      }
    }
  }
  const dir = tempDir()
  dirs.push(dir)
  return {
    env: { DATA_DIR: dir },
    // Only while no Steady process holds the directory.
    query: async (text, params = []) => {
      const db = new PGlite(dir)
      try {
        await db.waitReady
        return (await db.query<any>(text, params)).rows
      } finally {
        await db.close()
      }
    }
  }
}

// Each case is its own short-lived process, so they run side by side.
describe.concurrent("bad configuration", () => {
  it("stops with one clear line per bad variable and a non-zero exit code", async () => {
    const dir = tempDir()
    dirs.push(dir)
    const { code, stdout, stderr } = await runToEnd("src/main.ts", [], {
      DATA_DIR: dir,
      PORT: "0",
      DATABASE_URL: "notaurl",
      SERVICE_NOW: "yesterday",
      SERVICE_PROXY_TRUSTED_IPS: "300.1.1.1/8",
      SERVICE_AI_PROVIDER: "foo"
    })
    expect(code).not.toBe(0)
    expect(code).not.toBeNull()
    const lines = ownLines(stderr)
    expect(lines, stderr).toHaveLength(4)
    for (const name of ["DATABASE_URL", "SERVICE_NOW", "SERVICE_PROXY_TRUSTED_IPS", "SERVICE_AI_PROVIDER"]) {
      const naming = lines.filter((l) => l.includes(name))
      // SERVICE_PROXY_TRUSTED_IPS does not contain another checked name, so each matches exactly one line.
      expect(naming, name).toHaveLength(1)
      expect(naming[0]).toMatch(new RegExp(`^Invalid configuration: ${name}: \\S`))
    }
    expect(lines.find((l) => l.includes("SERVICE_NOW"))).toContain("yesterday")
    expect(lines.find((l) => l.includes("SERVICE_PROXY_TRUSTED_IPS"))).toContain("300.1.1.1/8")
    expect(lines.find((l) => l.includes("SERVICE_AI_PROVIDER"))).toContain("foo")
    expect(stderr).not.toMatch(/\n\s+at /)
    expect(stdout).not.toContain("Listening")
    // Nothing was opened: no lock and no database files left behind.
    expect(Fs.readdirSync(dir)).toEqual([])
  }, 120_000)

  it.each([
    ["SERVICE_NOW", "2030-02-30T12:00:00Z"],
    ["PORT", "http"],
    ["SERVICE_DEFAULT_TIMEZONE", "Mars/Base"]
  ])("a single bad %s is named on one line", async (name, value) => {
    const dir = tempDir()
    dirs.push(dir)
    const { code, stderr } = await runToEnd("src/main.ts", [], { DATA_DIR: dir, PORT: "0", [name]: value })
    expect(code).not.toBe(0)
    const lines = ownLines(stderr)
    expect(lines, stderr).toHaveLength(1)
    expect(lines[0]).toMatch(new RegExp(`^Invalid configuration: ${name}: \\S`))
  })

  it("the CLI reports bad configuration the same way", async () => {
    const dir = tempDir()
    dirs.push(dir)
    const { code, stdout, stderr } = await runToEnd("src/cli.ts", ["create-token", "--user", "carol"], {
      DATA_DIR: dir,
      SERVICE_NOW: "soon",
      SERVICE_AI_PROVIDER: "foo"
    })
    expect(code).not.toBe(0)
    expect(stdout.trim()).toBe("")
    const lines = ownLines(stderr)
    expect(lines.filter((l) => l.includes("SERVICE_NOW"))).toHaveLength(1)
    expect(lines.filter((l) => l.includes("SERVICE_AI_PROVIDER"))).toHaveLength(1)
    expect(lines.every((l) => l.startsWith("Invalid configuration: "))).toBe(true)
  })
})

describe("configuration parsing", () => {
  const load = (vars: Record<string, string>) =>
    Effect.runSync(Effect.either(Effect.withConfigProvider(appConfig, ConfigProvider.fromMap(new Map(Object.entries(vars))))))

  it("reports every bad variable once, on its own line, named first", () => {
    const bad = {
      PORT: "99999",
      DATABASE_URL: "http://db.example/steady",
      SERVICE_PROXY_TRUSTED_IPS: "10.0.0.0/33",
      SERVICE_DEFAULT_TIMEZONE: "Europe/Atlantis",
      SERVICE_NOW: "2030-04-31T00:00:00Z",
      SERVICE_WEBHOOK_ALLOW_PRIVATE: "perhaps",
      SERVICE_AI_PROVIDER: "gemini"
    }
    const result = load(bad)
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isRight(result)) return
    const lines = formatConfigError(result.left)
    expect(lines).toHaveLength(Object.keys(bad).length)
    for (const name of Object.keys(bad)) {
      expect(lines.filter((l) => l.startsWith(`${name}: `)), name).toHaveLength(1)
    }
    for (const line of lines) expect(line).not.toContain("\n")
  })

  it.each([
    ["2030-06-15T12:00:00Z", "2030-06-15T12:00:00.000Z"],
    ["2030-06-15T12:00:00.250+02:00", "2030-06-15T10:00:00.250Z"],
    ["2028-02-29T00:00:00Z", "2028-02-29T00:00:00.000Z"]
  ])("SERVICE_NOW=%s is the instant %s", (value, instant) => {
    const result = load({ SERVICE_NOW: value })
    expect(Either.isRight(result)).toBe(true)
    if (Either.isLeft(result)) return
    expect(result.right.serviceNow._tag).toBe("Some")
    expect(result.right.serviceNow.pipe((o) => (o._tag === "Some" ? o.value.toISOString() : undefined))).toBe(instant)
  })

  it.each(["yesterday", "2030-02-30T00:00:00Z", "2030-02-29T00:00:00Z", "2030-06-15", "2030-06-15T12:00", "2030-06-15T25:00:00Z", "1718450000000"])(
    "SERVICE_NOW=%s is refused",
    (value) => {
      const result = load({ SERVICE_NOW: value })
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isRight(result)) return
      const lines = formatConfigError(result.left)
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(/^SERVICE_NOW: /)
    }
  )

  it("the defaults need no variables at all", () => {
    const result = load({})
    expect(Either.isRight(result)).toBe(true)
    if (Either.isLeft(result)) return
    expect(result.right).toMatchObject({
      port: 3000,
      host: "127.0.0.1",
      dataDir: "./data",
      defaultTimezone: "UTC",
      webhookAllowPrivate: true,
      aiProvider: "off",
      logLevel: "info"
    })
    expect(result.right.databaseUrl._tag).toBe("None")
    expect(result.right.proxyAuthHeader._tag).toBe("None")
    expect(result.right.proxyTrustedIpsSet).toBe(false)
    expect(result.right.serviceNow._tag).toBe("None")
    expect(result.right.proxyTrustedIps).toEqual([
      { address: "127.0.0.1", prefix: 8, family: "ipv4" },
      { address: "::1", prefix: 128, family: "ipv6" }
    ])
  })
})

describe("the embedded data directory", () => {
  it("the CLI creates a user and token; while a server runs, a second server is refused and the CLI asks the server", async () => {
    const dir = tempDir()
    dirs.push(dir)
    const env = { DATA_DIR: dir }

    // Before any server: the CLI creates the user with an Inbox and the default slots.
    const cli = await runToEnd("src/cli.ts", ["create-token", "--user", "carol"], env)
    expect(cli.code, cli.stderr).toBe(0)
    const token = lastLine(cli.stdout)
    expect(token).toMatch(TOKEN_LINE)
    expect(Fs.existsSync(Path.join(dir, "steady.lock"))).toBe(false)

    const db = new PGlite(dir)
    try {
      await db.waitReady
      const users = (await db.query<any>("SELECT id, username, timezone FROM users")).rows
      expect(users).toEqual([{ id: expect.any(Number), username: "carol", timezone: "UTC" }])
      const slots = (await db.query<any>("SELECT label, start_time FROM time_slots WHERE user_id = $1 ORDER BY start_time", [users[0].id]))
        .rows
      expect(slots).toEqual(DEFAULT_SLOTS)
      const projects = (await db.query<any>("SELECT name, is_inbox FROM projects WHERE owner_id = $1", [users[0].id])).rows
      expect(projects).toEqual([{ name: "Inbox", is_inbox: true }])
      const hashes = (await db.query<any>("SELECT token_hash FROM api_tokens")).rows
      expect(hashes).toHaveLength(1)
      expect(hashes[0].token_hash).not.toBe(token)
    } finally {
      await db.close()
    }

    const server = await startServer(env)
    let stopped: number | null = null
    try {
      const lock = Path.join(dir, "steady.lock")
      expect(Fs.existsSync(lock)).toBe(true)
      const me = await server.client(token).get("/api/auth/me")
      expect(me.status).toBe(200)
      expect(me.body.data).toMatchObject({ username: "carol", timezone: "UTC" })

      // A second server on the same directory is refused with a clear message.
      const second = await runToEnd("src/main.ts", [], { ...env, PORT: "0" }, 120_000)
      expect(second.code).not.toBe(0)
      expect(second.code).not.toBeNull()
      const refusal = ownLines(second.stderr).join("\n")
      expect(refusal).toContain("in use by another Steady process")
      expect(refusal).toContain(Path.resolve(dir))
      expect(refusal).not.toMatch(/\n\s+at /)
      expect(second.stdout).not.toContain("Listening")

      // The CLI cannot open the directory either: it asks the running server over its local
      // socket (only the directory's owner can open it), and the token it prints works.
      const socket = Fs.statSync(Path.join(dir, "steady.sock"))
      expect(socket.isSocket()).toBe(true)
      expect(socket.mode & 0o777).toBe(0o600)
      const viaServer = await runToEnd("src/cli.ts", ["create-token", "--user", "dave", "--timezone", "Europe/Berlin"], env)
      expect(viaServer.code, viaServer.stderr).toBe(0)
      const daveToken = lastLine(viaServer.stdout)
      expect(daveToken).toMatch(TOKEN_LINE)
      expect((await server.client(daveToken).get("/api/auth/me")).body.data).toMatchObject({ username: "dave", timezone: "Europe/Berlin" })
      const listed = await runToEnd("src/cli.ts", ["list-users"], env)
      expect(listed.code, listed.stderr).toBe(0)
      expect(listed.stdout.split("\n").filter((l) => l !== "").map((l) => l.split("\t")[1])).toEqual(["carol", "dave"])
      // Its failures still fail: a bad zone is refused before asking, an empty name by the server.
      const badZone = await runToEnd("src/cli.ts", ["create-token", "--user", "erin", "--timezone", "Mars/Base"], env)
      expect(badZone.code).not.toBe(0)
      expect(badZone.stdout).not.toMatch(/[0-9a-f]{64}/)
      expect(ownLines(badZone.stderr).join("\n")).toContain('Unknown time zone "Mars/Base"')

      // The first server is unharmed.
      const health = await server.client().get("/api/health")
      expect(health.body).toEqual({ status: "ok" })
      expect((await server.client(token).get("/api/auth/me")).status).toBe(200)
    } finally {
      stopped = await server.proc.stop()
    }

    // A clean shutdown releases the directory and removes the socket; the CLI works again and finds the same user.
    expect(Fs.existsSync(Path.join(dir, "steady.sock"))).toBe(false)
    expect(Fs.existsSync(Path.join(dir, "steady.lock")), `exit ${stopped}\n${server.proc.stderr()}\n${server.proc.stdout().slice(-2000)}`)
      .toBe(false)
    const again = await runToEnd("src/cli.ts", ["create-token", "--user", "CAROL", "--name", "second"], env)
    expect(again.code, again.stderr).toBe(0)
    const second = lastLine(again.stdout)
    expect(second).toMatch(TOKEN_LINE)
    expect(second).not.toBe(token)
    const check = new PGlite(dir)
    try {
      await check.waitReady
      expect((await check.query<any>("SELECT count(*)::int AS n FROM users")).rows[0].n).toBe(2)
      expect((await check.query<any>("SELECT name FROM api_tokens ORDER BY id")).rows.map((r: any) => r.name)).toEqual(["cli", "cli", "second"])
    } finally {
      await check.close()
    }
  }, 300_000)

  it("a lock left by a dead process is taken over", async () => {
    const dir = tempDir()
    dirs.push(dir)
    // A pid that cannot be running: far above any real pid.
    Fs.writeFileSync(Path.join(dir, "steady.lock"), "4194999")
    const cli = await runToEnd("src/cli.ts", ["create-token", "--user", "zoe"], { DATA_DIR: dir })
    expect(cli.code, cli.stderr).toBe(0)
    expect(lastLine(cli.stdout)).toMatch(TOKEN_LINE)
    expect(Fs.existsSync(Path.join(dir, "steady.lock"))).toBe(false)
  })
})

describe("the CLI against the suite's database", () => {
  it.skipIf(serverUrl() === undefined)("with PostgreSQL it works while the server runs", async () => {
    const db = await suiteDatabase()
    const server = await startServer(db.env)
    try {
      const cli = await runToEnd("src/cli.ts", ["create-token", "--user", "carol", "--timezone", "Europe/Paris"], db.env)
      expect(cli.code, cli.stderr).toBe(0)
      const token = lastLine(cli.stdout)
      expect(token).toMatch(TOKEN_LINE)
      const me = await server.client(token).get("/api/auth/me")
      expect(me.status).toBe(200)
      expect(me.body.data).toMatchObject({ username: "carol", timezone: "Europe/Paris" })
      const users = await db.query("SELECT id FROM users WHERE username = 'carol'")
      const slots = await db.query("SELECT label, start_time FROM time_slots WHERE user_id = $1 ORDER BY start_time", [users[0].id])
      expect(slots).toEqual(DEFAULT_SLOTS)
      const projects = (await server.client(token).get("/api/projects")).body.data.projects
      expect(projects.map((p: any) => p.name)).toEqual(["Inbox"])
    } finally {
      await server.proc.stop()
    }
  }, 120_000)

  it("usage errors are clear and print no token", async () => {
    // Separate directories: each CLI run holds its directory's lock while it runs.
    const [one, two] = [tempDir(), tempDir()]
    dirs.push(one, two)
    const [missing, zone] = await Promise.all([
      runToEnd("src/cli.ts", ["create-token"], { DATA_DIR: one }),
      runToEnd("src/cli.ts", ["create-token", "--user", "x", "--timezone", "Mars/Base"], { DATA_DIR: two })
    ])
    expect(missing.code).not.toBe(0)
    expect(missing.stderr).toContain("--user is required")
    expect(missing.stdout).not.toMatch(/[0-9a-f]{64}/)
    expect(zone.code).not.toBe(0)
    expect(zone.stderr).toContain("Mars/Base")
  })
})

describe("SERVICE_NOW", () => {
  it("moves the clock of the server and the CLI", async () => {
    const db = await suiteDatabase()
    const serviceNow = "2030-06-15T12:00:00.000Z"
    const env = { ...db.env, SERVICE_NOW: serviceNow }
    const at = Date.parse(serviceNow)

    const cli = await runToEnd("src/cli.ts", ["create-token", "--user", "tess"], env)
    expect(cli.code, cli.stderr).toBe(0)
    const token = lastLine(cli.stdout)!
    expect(token).toMatch(TOKEN_LINE)

    const server = await startServer(env)
    try {
      const client = server.client(token)
      const tokens = (await client.get("/api/tokens")).body.data.tokens
      expect(tokens).toHaveLength(1)
      const tokenAge = Date.parse(tokens[0].created_at) - at
      expect(tokenAge).toBeGreaterThanOrEqual(0)
      expect(tokenAge).toBeLessThan(30_000)

      const created = await client.post("/api/tasks", { title: "Clock check", priority: 1 })
      expect(created.status).toBe(201)
      const age = Date.parse(created.body.data.created_at) - at
      expect(age).toBeGreaterThanOrEqual(0)
      expect(age).toBeLessThan(30_000)
      expect(created.body.data.created_at.startsWith("2030-06-15T12:0")).toBe(true)

      // "Now" for overdue is the shifted clock too: due an hour before SERVICE_NOW is overdue,
      // due a day after it is not (though both are far in the real future).
      await client.post("/api/tasks", { title: "Past", priority: 1, due_at: "2030-06-15T11:00:00.000Z" })
      await client.post("/api/tasks", { title: "Future", priority: 1, due_at: "2030-06-16T12:00:00.000Z" })
      const overdue = (await client.get("/api/tasks?overdue=true")).body.data.tasks.map((t: any) => t.title)
      expect(overdue).toEqual(["Past"])
    } finally {
      await server.proc.stop()
    }
  }, 120_000)
})
