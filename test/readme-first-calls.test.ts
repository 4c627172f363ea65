import { type ChildProcess, spawn, spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { freshDatabase, serverUrl, type TestDatabase } from "./support/database.js"

/**
 * The README's first calls, copied in order as a new user would: the block under "Get a
 * token and make a first call" runs as written (bash, errors fatal) beside a running server,
 * with only the port changed to the test server's.
 */
const ROOT = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")

const firstCallBlock = () => {
  const readme = Fs.readFileSync(Path.join(ROOT, "README.md"), "utf8")
  const match = /Get a token and make a first call:\s*```sh\n([\s\S]*?)```/.exec(readme)
  if (match === null) throw new Error("README.md has no first-call block")
  return match[1]!
}

const cleanEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || /^(DATABASE_URL|TEST_DATABASE_URL|DATA_DIR|PORT|HOST|LOG_LEVEL|SERVICE_.*)$/.test(key)) continue
    env[key] = value
  }
  return env
}

let server: ChildProcess | undefined
const dirs: Array<string> = []
let database: TestDatabase | undefined

afterAll(async () => {
  if (server?.pid !== undefined) {
    try {
      process.kill(-server.pid, "SIGTERM")
    } catch {
      // gone
    }
    await new Promise((resolve) => server!.once("exit", resolve))
  }
  await database?.drop().catch(() => undefined)
  for (const dir of dirs) Fs.rmSync(dir, { recursive: true, force: true })
})

describe("the README's first calls", () => {
  it("run as written on a fresh data directory with the server running, and the token works", async () => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "steady-readme-"))
    dirs.push(dir)
    const env: Record<string, string> = { ...cleanEnv(), DATA_DIR: dir, HOST: "127.0.0.1", PORT: "0", LOG_LEVEL: "info" }
    if (serverUrl() !== undefined) {
      database = await freshDatabase()
      env.DATABASE_URL = database.url!
    }
    server = spawn("npx", ["tsx", "src/main.ts"], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true })
    let out = ""
    server.stdout!.on("data", (chunk) => (out += String(chunk)))
    const deadline = Date.now() + 90_000
    let port: string | undefined
    while (port === undefined && Date.now() < deadline) {
      port = /Listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1]
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(port, out).toBeDefined()

    const block = firstCallBlock().replaceAll("localhost:3000", `localhost:${port}`)
    const run = spawnSync("bash", ["-euo", "pipefail", "-c", block], { cwd: ROOT, env, encoding: "utf8", timeout: 120_000 })
    expect(run.status, run.stderr).toBe(0)
    // curl prints each answer without a newline: the health answer, then /api/auth/me's.
    const health = '{"status":"ok"}'
    expect(run.stdout.startsWith(health), run.stdout).toBe(true)
    expect(JSON.parse(run.stdout.slice(health.length)).data).toMatchObject({ username: "alice", timezone: "Europe/Berlin" })
  }, 240_000)
})
