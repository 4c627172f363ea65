/**
 * `npx tsx bench/bloat.ts`: does the embedded database look after itself?
 * Writes BLOAT_TASKS tasks through `POST /api/tasks` into a fresh data directory (the
 * "fresh import"), stops the service and measures the directory; then sends BLOAT_PATCHES
 * `PATCH /api/tasks/{id}` spread over those tasks, stops the service and measures again.
 * Prints the directory's growth and, per table, the tasks table with its indexes (the part
 * dead rows bloat) apart from the undo log and the outbox (which every PATCH adds a row to).
 *
 * Environment (all optional):
 *   BLOAT_TASKS        tasks written first            (10000)
 *   BLOAT_PATCHES      PATCHes after them              (100000)
 *   BLOAT_CONNECTIONS  requests in flight              (8)
 *   BLOAT_ROOT         checkout whose dist/ is run (this one; build it first)
 * Last line: `bloat: data directory A → B MiB (R×) after P PATCHes over T tasks; tasks table X → Y MiB (S×)`.
 */
import { PGlite } from "@electric-sql/pglite"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { cleanupAll, freePort, onCleanup, runCommand, startServer } from "./processes.js"
import { childEnv, ROOT, serviceCommand } from "./setup.js"

const num = (name: string, fallback: number) => {
  const raw = process.env[name]
  const n = raw === undefined || raw.trim() === "" ? fallback : Number(raw)
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer`)
  return n
}
const TASKS = num("BLOAT_TASKS", 10_000)
const PATCHES = num("BLOAT_PATCHES", 100_000)
const CONNECTIONS = num("BLOAT_CONNECTIONS", 8)
const root = Path.resolve(process.env.BLOAT_ROOT ?? ROOT)
const log = (message: string) => console.error(`[bloat ${new Date().toISOString().slice(11, 19)}] ${message}`)

const dirBytes = (dir: string): number =>
  Fs.readdirSync(dir, { withFileTypes: true }).reduce((sum, e) => {
    const p = Path.join(dir, e.name)
    return sum + (e.isDirectory() ? dirBytes(p) : e.isFile() ? Fs.statSync(p).size : 0)
  }, 0)
const mib = (bytes: number) => (bytes / 1048576).toFixed(1)

const pool = async (count: number, fn: (i: number) => Promise<void>) => {
  let next = 0
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    while (next < count) await fn(next++)
  }))
}

const start = async (dataDir: string) => {
  const port = await freePort()
  return startServer({
    name: "steady",
    args: [...serviceCommand(ROOT, undefined).flags, Path.join(root, "dist/src/main.js")],
    env: childEnv({ ...serviceCommand(ROOT, undefined).env, DATA_DIR: dataDir, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "warn" }),
    port,
    healthPath: "/api/health",
    startTimeoutMs: 120_000
  })
}

/** Sizes of the tables that matter here, read with the service stopped. */
const tableSizes = async (dataDir: string) => {
  const db = new PGlite(dataDir)
  await db.waitReady
  try {
    const rows = (await db.query<{ name: string; bytes: number }>(
      `SELECT relname AS name, pg_total_relation_size(relid)::float8 AS bytes FROM pg_stat_user_tables
       WHERE relname IN ('tasks', 'undo_entries', 'outbox_events')`
    )).rows
    return Object.fromEntries(rows.map((r) => [r.name, Number(r.bytes)])) as Record<string, number>
  } finally {
    await db.close()
  }
}

const main = async () => {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "steady-bloat-"))
  onCleanup(`remove ${dataDir}`, async () => Fs.rmSync(dataDir, { recursive: true, force: true }))
  const made = await runCommand(process.execPath, [Path.join(root, "dist/src/cli.js"), "create-token", "--user", "bloat", "--timezone", "UTC"], {
    env: childEnv({ DATA_DIR: dataDir }),
    timeoutMs: 120_000
  })
  const token = made.split("\n").map((l) => l.trim()).filter((l) => /^[0-9a-f]{32,}$/.test(l)).pop()
  if (token === undefined) throw new Error("no token from the CLI")
  let server: Awaited<ReturnType<typeof start>>
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" }
  const send = async (method: string, path: string, body: unknown, base: string, expected: number) => {
    const attempt = (tries: number): Promise<Response> =>
      fetch(base + path, { method, headers, body: JSON.stringify(body) }).catch((error) => {
        const cause = error instanceof Error && error.cause !== undefined ? String(error.cause) : ""
        // A kept-alive connection the service closed as the request went out (a loaded
        // machine stretches the idle gap): the request never arrived, so it is sent again.
        if (cause.includes("ECONNRESET") && tries < 3) return attempt(tries + 1)
        throw new Error(`${method} ${path} failed: ${String(error)} (${cause})\n${server.output().slice(-4000)}`)
      })
    const res = await attempt(1)
    const text = await res.text()
    if (res.status !== expected) throw new Error(`${method} ${path} → ${res.status} ${text.slice(0, 200)}`)
    return text
  }

  log(`writing ${TASKS} tasks through POST /api/tasks (${root})`)
  server = await start(dataDir)
  const ids: Array<number> = []
  const day = 86_400_000
  await pool(TASKS, async (i) => {
    const text = await send("POST", "/api/tasks", {
      title: `task ${i}`,
      priority: i % 5,
      due_at: new Date(Date.UTC(2026, 10, 1) + ((i * 7919) % 120 - 60) * day).toISOString(),
      ...(i % 7 === 0 ? { labels: ["home"] } : {})
    }, server.baseUrl, 201)
    ids.push((JSON.parse(text) as { data: { id: number } }).data.id)
  })
  await server.stop()
  const size0 = dirBytes(dataDir)
  const wal0 = Fs.existsSync(Path.join(dataDir, "pg_wal")) ? dirBytes(Path.join(dataDir, "pg_wal")) : 0
  const tables0 = await tableSizes(dataDir)
  log(`after the import: data directory ${mib(size0)} MiB, tasks ${mib(tables0.tasks ?? 0)} MiB`)

  log(`sending ${PATCHES} PATCHes over them`)
  server = await start(dataDir)
  const t0 = Date.now()
  await pool(PATCHES, async (i) => {
    const id = ids[(i * 7919) % ids.length]!
    await send("PATCH", `/api/tasks/${id}`, {
      title: `task ${id} edit ${i}`,
      priority: i % 5,
      due_at: new Date(Date.UTC(2026, 10, 1) + ((i * 104729) % 120 - 60) * day).toISOString()
    }, server.baseUrl, 200)
    if ((i + 1) % 10_000 === 0) log(`${i + 1} PATCHes, ${((i + 1) / ((Date.now() - t0) / 1000)).toFixed(0)}/s`)
  })
  await server.stop()
  const size1 = dirBytes(dataDir)
  const tables1 = await tableSizes(dataDir)
  for (const name of ["tasks", "undo_entries", "outbox_events"]) {
    log(`${name}: ${mib(tables0[name] ?? 0)} → ${mib(tables1[name] ?? 0)} MiB`)
  }
  const wal = (dir: string) => Fs.existsSync(Path.join(dir, "pg_wal")) ? dirBytes(Path.join(dir, "pg_wal")) : 0
  log(`pg_wal: ${mib(wal0)} → ${mib(wal(dataDir))} MiB (write-ahead log segments, kept up to min_wal_size)`)
  const ratio = size1 / size0
  const tasksRatio = (tables1.tasks ?? 0) / (tables0.tasks ?? 1)
  console.log(
    `bloat: data directory ${mib(size0)} → ${mib(size1)} MiB (${ratio.toFixed(2)}×) after ${PATCHES} PATCHes over ${TASKS} tasks; ` +
      `tasks table ${mib(tables0.tasks ?? 0)} → ${mib(tables1.tasks ?? 0)} MiB (${tasksRatio.toFixed(2)}×)`
  )
}

main().then(
  async () => {
    await cleanupAll()
    process.exit(0)
  },
  async (error) => {
    console.error(error instanceof Error ? error.stack ?? error.message : error)
    await cleanupAll()
    process.exit(1)
  }
)
