import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"
import { freshDatabase, serverUrl, type TestDatabase } from "./support/database.js"

const ROOT = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const cleanups: Array<() => Promise<unknown>> = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined)
})

/** The environment of a spawned service on the suite's database: a fresh server database or a fresh DATA_DIR. */
const serviceEnv = async (): Promise<Record<string, string>> => {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(DATABASE_URL|TEST_DATABASE_URL|DATA_DIR|PORT|HOST|LOG_LEVEL|SERVICE_.*)$/.test(key)) {
      env[key] = value
    }
  }
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "steady-stop-"))
  cleanups.push(async () => Fs.rmSync(dir, { recursive: true, force: true }))
  if (serverUrl() !== undefined) {
    const db: TestDatabase = await freshDatabase()
    cleanups.push(() => db.drop())
    return { ...env, DATABASE_URL: db.url!, DATA_DIR: dir }
  }
  return { ...env, DATA_DIR: dir }
}

/** node itself, not npx/tsx's wrapper, so the signal reaches the service once and directly. */
const spawnNode = (script: string, args: ReadonlyArray<string>, env: Record<string, string>) => {
  const child = spawn(process.execPath, ["--import", "tsx", script, ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] })
  let output = ""
  child.stdout!.on("data", (chunk) => (output += String(chunk)))
  child.stderr!.on("data", (chunk) => (output += String(chunk)))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal, at: performance.now() })))
  cleanups.push(async () => child.exitCode === null && child.kill("SIGKILL"))
  return { child, exited, output: () => output }
}

const startService = async (env: Record<string, string>) => {
  const proc = spawnNode("src/main.ts", [], { ...env, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info" })
  const deadline = performance.now() + 90_000
  for (;;) {
    const match = /Listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(proc.output())
    if (match !== null) return { ...proc, port: Number(match[1]) }
    if (proc.child.exitCode !== null || performance.now() > deadline) throw new Error(`service did not start:\n${proc.output()}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

interface Outcome {
  readonly title: string
  readonly sentAt: number
  readonly endedAt: number
  readonly status?: number
  readonly connection?: string | undefined
  readonly error?: string
}

const post = (agent: Http.Agent, port: number, token: string, title: string) =>
  new Promise<Outcome>((resolve) => {
    const sentAt = performance.now()
    const body = JSON.stringify({ title })
    const request = Http.request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: "/api/tasks",
        agent,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) }
      },
      (response) => {
        response.resume()
        response.on("end", () =>
          resolve({ title, sentAt, endedAt: performance.now(), status: response.statusCode!, connection: response.headers.connection }))
        response.on("error", (error: NodeJS.ErrnoException) =>
          resolve({ title, sentAt, endedAt: performance.now(), error: error.code ?? error.message }))
      }
    )
    request.on("error", (error: NodeJS.ErrnoException) => resolve({ title, sentAt, endedAt: performance.now(), error: error.code ?? error.message }))
    request.end(body)
  })

const openTitles = async (port: number, token: string) => {
  const titles = new Set<string>()
  for (let offset = 0; ; offset += 1000) {
    const response = await fetch(`http://127.0.0.1:${port}/api/tasks?limit=1000&offset=${offset}`, {
      headers: { authorization: `Bearer ${token}` }
    })
    const page = ((await response.json()) as { data: { tasks: Array<{ title: string }> } }).data.tasks
    for (const task of page) titles.add(task.title)
    if (page.length < 1000) return titles
  }
}

describe("a stop signal under write load", () => {
  it("drains keep-alive connections: requests sent before SIGTERM are answered, none hangs, acknowledged writes survive, exit 0 within 12 s", async () => {
    const env = await serviceEnv()
    const cli = spawnNode("src/cli.ts", ["create-token", "--user", "grace"], env)
    const created = await cli.exited
    expect(created.code, cli.output()).toBe(0)
    const token = cli.output().trim().split("\n").pop()!.trim()
    expect(token).toMatch(/^[0-9a-f]{64}$/)

    const service = await startService(env)
    const agent = new Http.Agent({ keepAlive: true, maxSockets: 8 })
    const outcomes: Array<Outcome> = []
    let sending = true
    let n = 0
    const clients = Array.from({ length: 8 }, async () => {
      while (sending) {
        const outcome = await post(agent, service.port, token, `grace-${n++}`)
        outcomes.push(outcome)
        // Refused once the listener is closed: a client would back off, so does this one.
        if (outcome.error !== undefined) await new Promise((resolve) => setTimeout(resolve, 20))
      }
    })
    while (outcomes.filter((o) => o.status === 201).length < 40) await new Promise((resolve) => setTimeout(resolve, 20))

    const signalledAt = performance.now()
    service.child.kill("SIGTERM")
    const exit = await service.exited
    sending = false
    await Promise.all(clients)
    agent.destroy()

    expect({ code: exit.code, signal: exit.signal }, service.output()).toEqual({ code: 0, signal: null })
    expect(exit.at - signalledAt).toBeLessThan(12_000)
    expect(service.output()).toContain("SIGTERM: draining connections")

    // Everything sent before the signal was answered, with a success: nothing cut off mid-request.
    const before = outcomes.filter((o) => o.sentAt < signalledAt)
    expect(before.filter((o) => o.status !== 201)).toEqual([])
    // Answers given while draining tell the client to close the connection (the very first ones
    // after the signal may precede the service noticing it).
    const drained = outcomes.filter((o) => o.sentAt >= signalledAt && o.status !== undefined)
    expect(drained.length).toBeGreaterThan(0)
    expect(drained.at(-1)!.connection).toBe("close")
    // Nothing waited for the process to die: every request ended by the time it exited.
    for (const o of outcomes) expect(o.endedAt).toBeLessThanOrEqual(exit.at + 1_000)
    // The rest were refused or closed without an answer, never a server error.
    for (const o of outcomes) {
      if (o.status !== undefined) expect(o.status).toBe(201)
      else expect(["ECONNREFUSED", "ECONNRESET", "EPIPE"]).toContain(o.error)
    }

    // Every acknowledged write is there after a restart; the embedded directory was released.
    if (env.DATABASE_URL === undefined) expect(Fs.existsSync(Path.join(env.DATA_DIR!, "steady.lock"))).toBe(false)
    const again = await startService(env)
    try {
      const titles = await openTitles(again.port, token)
      const acknowledged = outcomes.filter((o) => o.status === 201).map((o) => o.title)
      expect(acknowledged.length).toBeGreaterThanOrEqual(40)
      expect(acknowledged.filter((title) => !titles.has(title))).toEqual([])
    } finally {
      again.child.kill("SIGTERM")
      const second = await again.exited
      expect(second.code).toBe(0)
    }
  }, 240_000)

  it("an idle keep-alive connection does not hold the process: it exits within a few seconds", async () => {
    const env = await serviceEnv()
    const service = await startService(env)
    const agent = new Http.Agent({ keepAlive: true })
    const health = await new Promise<number>((resolve, reject) =>
      Http.get({ host: "127.0.0.1", port: service.port, path: "/api/health", agent }, (response) => {
        response.resume()
        response.on("end", () => resolve(response.statusCode!))
      }).on("error", reject))
    expect(health).toBe(200)
    const signalledAt = performance.now()
    service.child.kill("SIGTERM")
    const exit = await service.exited
    agent.destroy()
    expect(exit.code, service.output()).toBe(0)
    // The grace period is for requests in flight, not for idle clients.
    expect(exit.at - signalledAt).toBeLessThan(8_000)
  }, 120_000)
})

describe("a crash under write load", () => {
  it("SIGKILL loses no acknowledged write: after a restart every task answered 201 is there", async () => {
    const env = await serviceEnv()
    const cli = spawnNode("src/cli.ts", ["create-token", "--user", "crash"], env)
    const created = await cli.exited
    expect(created.code, cli.output()).toBe(0)
    const token = cli.output().trim().split("\n").pop()!.trim()

    const service = await startService(env)
    const agent = new Http.Agent({ keepAlive: true, maxSockets: 8 })
    const outcomes: Array<Outcome> = []
    let sending = true
    let n = 0
    const clients = Array.from({ length: 8 }, async () => {
      while (sending) {
        const outcome = await post(agent, service.port, token, `crash-${n++}`)
        outcomes.push(outcome)
        if (outcome.error !== undefined) await new Promise((resolve) => setTimeout(resolve, 20))
      }
    })
    while (outcomes.filter((o) => o.status === 201).length < 60) await new Promise((resolve) => setTimeout(resolve, 20))

    // No stop, no flush: the process (and the embedded database's thread with it) just ends.
    service.child.kill("SIGKILL")
    const exit = await service.exited
    sending = false
    await Promise.all(clients)
    agent.destroy()
    expect(exit.signal).toBe("SIGKILL")

    // The lock the dead process left behind is taken over by the restart.
    const again = await startService(env)
    try {
      const titles = await openTitles(again.port, token)
      const acknowledged = outcomes.filter((o) => o.status === 201).map((o) => o.title)
      expect(acknowledged.length).toBeGreaterThanOrEqual(60)
      expect(acknowledged.filter((title) => !titles.has(title))).toEqual([])
      // Nothing but 201 or a dropped connection: a crash is not a server error.
      for (const o of outcomes) {
        if (o.status !== undefined) expect(o.status).toBe(201)
        else expect(["ECONNREFUSED", "ECONNRESET", "EPIPE"]).toContain(o.error)
      }
    } finally {
      again.child.kill("SIGTERM")
      const second = await again.exited
      expect(second.code).toBe(0)
    }
  }, 240_000)
})
