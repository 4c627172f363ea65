import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import Pg from "pg"
import { createTaskBody, drive, loadGenerator, type LoadResult, type Scenario } from "./load.js"
import { cpuDelta, databaseBackendsCpuMs, freePort, onCleanup, runCommand, type Server, sleep, startServer } from "./processes.js"
import type { Database, Section } from "./report.js"
import { median } from "./stats.js"
import { childEnv, config, freshDatabase, type FreshDatabase, log, migrate, ROOT, startOurs } from "./setup.js"

/**
 * The `peer` scenario: Steady (PostgreSQL and embedded) beside OpenTask
 * (github.com/trentmcnitt/opentask, AGPL; Next.js + SQLite), the app it replaces, in one run
 * on one machine. OpenTask runs as a black box: its own build (bench/peer-build.sh), its
 * `.next/standalone/server.js`, its user and token scripts, and its HTTP API as its README and
 * docs/openapi.yaml describe it. Nothing of its code is read or copied here.
 *
 *   1. each side gets a fresh database (a new PostgreSQL database, a new embedded data
 *      directory, a new SQLite file), its users and tokens from its own CLI (21 users, UTC),
 *      and the same tasks written through its own API: for the main user BENCH_TASKS (10,000),
 *      for each of BENCH_PEER_OTHERS (20) others BENCH_PEER_OTHER_TASKS (100); three projects
 *      each; a mix of due dates, priorities, labels, notes and recurring rules; ~30% of the
 *      one-off tasks then done, ~4% deleted (trash), all through the API;
 *   2. PostgreSQL is then vacuumed and analyzed, as autovacuum would after such a load; the
 *      embedded database and OpenTask's SQLite are left as a user gets them;
 *   3. the rows below run on every side in interleaved rounds (the order rotates each round):
 *      reads first, then the writes, which add rows; BENCH_CONNECTIONS (32) connections unless
 *      the row says c=1, BENCH_DURATION (10) s after a warm-up of BENCH_WARMUP (3 here) s,
 *      BENCH_ROUNDS (2) rounds; the table shows medians over the rounds.
 *
 * The wire bytes of one task (GET by id, the same seeded task on each side) and of the default
 * page are read with plain node:http (no Accept-Encoding: what the load generators send too).
 *
 * OPENTASK_DIR (default ../peer/opentask beside this repository) is the built checkout; when
 * it is missing or not built the section says so and how to build it. BENCH_DATABASES limits
 * the Steady sides.
 */

const OPENTASK_DIR = Path.resolve(process.env.OPENTASK_DIR ?? Path.join(ROOT, "..", "peer", "opentask"))
const SERVER_JS = Path.join(OPENTASK_DIR, ".next", "standalone", "server.js")

const intEnv = (name: string, fallback: number) => {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === "") return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a whole number`)
  return value
}

const settings = {
  duration: config.duration,
  /** 3 s unless BENCH_WARMUP says otherwise (the other scenarios' default is 2). */
  warmup: process.env.BENCH_WARMUP === undefined || process.env.BENCH_WARMUP === "" ? 3 : config.warmup,
  rounds: config.rounds,
  connections: config.connections,
  mainTasks: config.tasks,
  others: intEnv("BENCH_PEER_OTHERS", 20),
  otherTasks: intEnv("BENCH_PEER_OTHER_TASKS", 100),
  /** Requests in flight while seeding through the API. */
  seedConcurrency: intEnv("BENCH_PEER_SEED_CONCURRENCY", 16)
}

export const peerBudgetSeconds = () => {
  const sides = config.databases.length + 1
  const seeding = sides * (240 + (settings.mainTasks + settings.others * settings.otherTasks) / 50)
  return seeding + ROWS.length * sides * settings.rounds * (settings.duration + settings.warmup + 3) + 120
}

// ---- the sides ----

export type SideKey = Database | "opentask"

export interface Side {
  readonly key: SideKey
  readonly label: string
  readonly server: Server
  /** The PostgreSQL database's name, for its backends' CPU time. */
  readonly databaseName: string | undefined
}

const SIDE_LABEL: Record<SideKey, string> = { postgres: "Steady PG", embedded: "Steady embedded", opentask: "OpenTask" }

const dataOf = (body: unknown) => (body as { data: unknown }).data

/**
 * The items of a list answer: `{ data: { tasks: [...] } }` on both (OpenTask's docs/openapi.yaml
 * says `{ data: [...] }`; what it answers is the former), either accepted.
 */
const itemsOf = <A>(body: unknown, key: string): ReadonlyArray<A> => {
  const data = dataOf(body)
  return (Array.isArray(data) ? data : (data as Record<string, ReadonlyArray<A>>)[key]) ?? []
}

// ---- the data, the same on every side ----

const VERBS = ["Call", "Email", "Buy", "Fix", "Review", "Plan", "Write", "Clean", "Book", "Read"]
const OBJECTS = ["the report", "groceries", "dentist", "the garden", "invoices", "slides", "tax forms", "birthday gift", "the car", "pull request"]
const LABELS: ReadonlyArray<ReadonlyArray<string>> = [
  [], ["work"], ["home", "errand"], ["work", "urgent"], [], ["reading"], ["health"], [], ["work", "meeting", "q3"]
]
const PROJECTS = ["Work", "Home", "Errands"]

interface TaskSpec {
  readonly i: number
  /** Index into the user's projects; undefined: the Inbox (no project_id sent). */
  readonly project: number | undefined
  readonly body: Record<string, unknown>
  readonly recurring: boolean
  readonly done: boolean
  readonly trashed: boolean
}

/** The i-th task of a user (i from 1), as bench/seed.ts generates its rows. */
const taskSpec = (i: number, prefix: string, now: Date): TaskSpec => {
  const rrule = i % 17 === 0 ? "FREQ=WEEKLY;BYDAY=MO,TH" : i % 31 === 0 ? "FREQ=DAILY" : undefined
  const hour = Math.floor(now.getTime() / 3_600_000) * 3_600_000
  let due: number | undefined = i % 5 === 0 ? undefined : hour + ((((i * 7919) % 240) - 60) * 24 + (i % 24)) * 3_600_000
  // A recurring task needs its first occurrence.
  if (rrule !== undefined && due === undefined) due = hour + (24 + (i % 24)) * 3_600_000
  const notes = i % 4 === 0
    ? "Remember to check the details with the team before Friday. " + "Some longer notes about this task. ".repeat(1 + (i % 6))
    : undefined
  const body: Record<string, unknown> = {
    title: `${prefix} ${VERBS[i % 10]} ${OBJECTS[Math.floor(i / 10) % 10]} #${i}`,
    priority: i % 5,
    labels: LABELS[i % 9],
    ...(due === undefined ? {} : { due_at: new Date(due).toISOString() }),
    ...(rrule === undefined ? {} : { rrule }),
    ...(notes === undefined ? {} : { notes })
  }
  return {
    i,
    project: i % 4 === 0 ? undefined : (i % 4) - 1,
    body,
    recurring: rrule !== undefined,
    done: rrule === undefined && (i * 7919) % 10 < 3,
    trashed: i % 23 === 0
  }
}

export interface Seeded {
  readonly token: string
  /** Ids of the main user's tasks by seed index. */
  readonly ids: ReadonlyMap<number, number>
  readonly readIds: ReadonlyArray<number>
  readonly patchIds: ReadonlyArray<number>
  readonly recurringIds: ReadonlyArray<number>
  /** The seed index of readIds[0]: the task whose bytes are compared. */
  readonly sampleIndex: number
  readonly requests: number
  readonly seconds: number
}

/** Indices of the main user's tasks the rows use, the same on every side. */
const sampleIndices = (count: number, now: Date) => {
  const specs = Array.from({ length: count }, (_, k) => taskSpec(k + 1, "Task", now))
  const spread = (keep: (s: TaskSpec) => boolean, mod: number) =>
    specs.filter(keep).sort((a, b) => ((a.i * 104729) % mod) - ((b.i * 104729) % mod) || a.i - b.i).slice(0, 1000).map((s) => s.i)
  return {
    read: spread((s) => !s.trashed, 1009),
    patch: spread((s) => !s.trashed && !s.done && !s.recurring, 1013),
    recurring: spread((s) => !s.trashed && s.recurring, 1013)
  }
}

class ApiError extends Error {}

const call = async (baseUrl: string, token: string, method: string, path: string, body?: unknown): Promise<unknown> => {
  for (let attempt = 1; ; attempt++) {
    let status = 0
    let text = ""
    try {
      const res = await fetch(`${baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(30_000)
      })
      status = res.status
      text = await res.text()
    } catch (error) {
      text = String(error)
    }
    if (status >= 200 && status <= 299) return text === "" ? undefined : JSON.parse(text)
    // Retried: a 5xx, a 429 or no answer (a retried create may then write a task twice).
    if ((status !== 0 && status < 500 && status !== 429) || attempt >= 4) {
      throw new ApiError(`${method} ${path} answered ${status}: ${text.slice(0, 400)}`)
    }
    await sleep(200 * attempt)
  }
}

/** Runs the jobs with `limit` in flight. */
const pool = async <A>(items: ReadonlyArray<A>, limit: number, run: (item: A) => Promise<void>) => {
  let next = 0
  const worker = async () => {
    while (next < items.length) await run(items[next++]!)
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}

const idOf = (answer: unknown) => {
  const id = (dataOf(answer) as { id?: unknown }).id
  if (typeof id !== "number") throw new ApiError(`no id in ${JSON.stringify(answer).slice(0, 200)}`)
  return id
}

/** Writes one user's projects and tasks through the API; the ids by seed index. */
const seedUser = async (baseUrl: string, token: string, count: number, prefix: string, now: Date, counter: { n: number }) => {
  // The user's projects of these names, created where the new user has none (OpenTask's new
  // users start with Inbox, Personal, Work and Errands; Steady's with the Inbox).
  const existing = itemsOf<{ id: number; name: string }>(await call(baseUrl, token, "GET", "/api/projects"), "projects")
  const projects: Array<number> = []
  for (const name of PROJECTS) {
    const found = existing.find((p) => p.name === name)
    if (found !== undefined) projects.push(found.id)
    else {
      projects.push(idOf(await call(baseUrl, token, "POST", "/api/projects", { name })))
      counter.n++
    }
  }
  const ids = new Map<number, number>()
  const specs = Array.from({ length: count }, (_, k) => taskSpec(k + 1, prefix, now))
  await pool(specs, settings.seedConcurrency, async (spec) => {
    const body = spec.project === undefined ? spec.body : { ...spec.body, project_id: projects[spec.project] }
    const id = idOf(await call(baseUrl, token, "POST", "/api/tasks", body))
    counter.n++
    ids.set(spec.i, id)
    if (spec.done) {
      await call(baseUrl, token, "POST", `/api/tasks/${id}/done`)
      counter.n++
    }
    if (spec.trashed) {
      await call(baseUrl, token, "DELETE", `/api/tasks/${id}`)
      counter.n++
    }
  })
  return ids
}

const seedSide = async (baseUrl: string, tokens: ReadonlyArray<string>, now: Date): Promise<Seeded> => {
  const started = Date.now()
  const counter = { n: 0 }
  const [main, ...others] = tokens
  const ids = await seedUser(baseUrl, main!, settings.mainTasks, "Task", now, counter)
  // One user at a time: BENCH_PEER_SEED_CONCURRENCY requests in flight throughout.
  for (const token of others) await seedUser(baseUrl, token, settings.otherTasks, "Chore", now, counter)
  const indices = sampleIndices(settings.mainTasks, now)
  const map = (list: ReadonlyArray<number>) => list.map((i) => ids.get(i)!)
  return {
    token: main!,
    ids,
    readIds: map(indices.read),
    patchIds: map(indices.patch),
    recurringIds: map(indices.recurring),
    sampleIndex: indices.read[0]!,
    requests: counter.n,
    seconds: (Date.now() - started) / 1000
  }
}

const usernames = () => Array.from({ length: 1 + settings.others }, (_, n) => `bench_user_${String(n).padStart(2, "0")}`)

// ---- Steady ----

/** A token per user from Steady's own CLI (it creates the user: Inbox, default slots). */
const steadyTokens = async (fresh: FreshDatabase) => {
  const tokens: Array<string> = []
  const names = usernames()
  const out = new Map<string, string>()
  await pool(names, 3, async (user) => {
    const printed = await runCommand(
      process.execPath,
      [Path.join(ROOT, "dist/src/cli.js"), "create-token", "--user", user, "--name", "bench", "--timezone", "UTC"],
      { env: childEnv(fresh.env), timeoutMs: 120_000 }
    )
    const token = /\b[0-9a-f]{64}\b/.exec(printed)?.[0]
    if (token === undefined) throw new Error(`create-token printed no token for ${user}: ${printed.slice(0, 400)}`)
    out.set(user, token)
  })
  for (const user of names) tokens.push(out.get(user)!)
  return tokens
}

/** A fresh database of `database`, a service on it, and the peer seed written through its API (`bench/variants.ts` too). */
export const startSteady = async (database: Database, now: Date): Promise<{ side: Side; seeded: Seeded; fresh: FreshDatabase }> => {
  const fresh = await freshDatabase(database)
  await migrate(fresh.env)
  const server = await startOurs(fresh.env)
  log(`peer: ${SIDE_LABEL[database]} up at ${server.baseUrl}; users and tokens through its CLI`)
  let seeded: Seeded
  try {
    // Embedded: the CLI asks the running service over its local socket.
    const tokens = await steadyTokens(fresh)
    log(`peer: ${SIDE_LABEL[database]}: writing the tasks through the API`)
    seeded = await seedSide(server.baseUrl, tokens, now)
  } catch (error) {
    console.error(`${SIDE_LABEL[database]} logged: ${server.errorSummary().join("; ")}\nthe first error: ${server.errors().first ?? "none"}`)
    throw error
  }
  if (fresh.databaseUrl !== undefined) {
    // What autovacuum does after a load like this one: vacuum and analyze the written tables.
    const client = new Pg.Client({ connectionString: fresh.databaseUrl })
    await client.connect()
    try {
      await client.query("VACUUM ANALYZE")
    } finally {
      await client.end()
    }
  }
  return {
    side: {
      key: database,
      label: SIDE_LABEL[database],
      server,
      databaseName: fresh.databaseName
    },
    seeded,
    fresh
  }
}

// ---- OpenTask ----

const opentaskVersion = () => {
  try {
    const built = Fs.readFileSync(Path.join(OPENTASK_DIR, ".peer-built"), "utf8").trim().split(/\s+/)
    return `${built[0]} (${built[1]?.slice(0, 12)})`
  } catch {
    try {
      return String(JSON.parse(Fs.readFileSync(Path.join(OPENTASK_DIR, "package.json"), "utf8")).version)
    } catch {
      return "unknown version"
    }
  }
}

/** Runs one of OpenTask's own scripts (its README's usage) with tsx from its node_modules. */
const opentaskScript = (script: string, args: ReadonlyArray<string>, dbPath: string) =>
  runCommand(Path.join(OPENTASK_DIR, "node_modules", ".bin", "tsx"), [Path.join("scripts", script), ...args], {
    cwd: OPENTASK_DIR,
    env: { ...childEnv({ OPENTASK_DB_PATH: dbPath }), NODE_ENV: "production" },
    timeoutMs: 120_000
  })

const startOpenTask = async (now: Date): Promise<{ side: Side; seeded: Seeded }> => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "opentask-bench-"))
  onCleanup(`remove ${dir}`, async () => Fs.rmSync(dir, { recursive: true, force: true }))
  const dbPath = Path.join(dir, "tasks.db")
  log(`peer: OpenTask: users and tokens through its scripts`)
  const names = usernames()
  const tokens = new Map<string, string>()
  // One at a time: they all write the same SQLite file.
  for (const user of names) {
    await opentaskScript("create-user.ts", [user, `pw-${user}-${Crypto.randomBytes(4).toString("hex")}`, `${user}@localhost`, "UTC"], dbPath)
    const printed = await opentaskScript("create-token.ts", [user, "bench"], dbPath)
    const token = /\b[0-9a-f]{64}\b/.exec(printed)?.[0]
    if (token === undefined) throw new Error(`OpenTask's create-token printed no token for ${user}: ${printed.slice(0, 400)}`)
    tokens.set(user, token)
  }
  const port = await freePort()
  const server = await startServer({
    name: "opentask",
    args: [SERVER_JS],
    env: childEnv({
      AUTH_SECRET: Crypto.randomBytes(32).toString("base64"),
      OPENTASK_DB_PATH: dbPath,
      PORT: String(port),
      HOSTNAME: "127.0.0.1",
      NEXT_TELEMETRY_DISABLED: "1"
    }),
    port,
    healthPath: "/api/health",
    startTimeoutMs: 90_000
  })
  log(`peer: OpenTask up at ${server.baseUrl}; writing the tasks through the API`)
  let seeded: Seeded
  try {
    seeded = await seedSide(server.baseUrl, names.map((u) => tokens.get(u)!), now)
  } catch (error) {
    console.error(`OpenTask output:\n${server.output()}`)
    throw error
  }
  return {
    side: { key: "opentask", label: SIDE_LABEL.opentask, server, databaseName: undefined },
    seeded
  }
}

// ---- the rows ----

export interface Row {
  readonly key: string
  readonly label: string
  readonly write: boolean
  /** Connections; undefined: BENCH_CONNECTIONS. */
  readonly connections?: number
  readonly scenario: (seeded: Seeded) => Scenario
}

const pick = (list: ReadonlyArray<number>, n: number) => list[n % list.length]!

/** The table's rows, each a scenario on a seeded side (`bench/variants.ts` drives them too). */
export const ROWS: ReadonlyArray<Row> = [
  {
    key: "health",
    label: "GET /api/health",
    write: false,
    scenario: () => ({ key: "get", label: "GET /api/health", method: "GET", compared: false, request: () => ({ path: "/api/health" }) })
  },
  {
    key: "list50",
    label: "GET /api/tasks?limit=50",
    write: false,
    scenario: () => ({ key: "list50", label: "", method: "GET", compared: false, request: () => ({ path: "/api/tasks?limit=50" }) })
  },
  {
    key: "list",
    label: "GET /api/tasks (default page)",
    write: false,
    scenario: () => ({ key: "list", label: "", method: "GET", compared: false, request: () => ({ path: "/api/tasks" }) })
  },
  {
    key: "get",
    label: "GET /api/tasks/{id}",
    write: false,
    scenario: (s) => ({ key: "get", label: "", method: "GET", compared: false, request: (n) => ({ path: `/api/tasks/${pick(s.readIds, n)}` }) })
  },
  {
    key: "list50-c1",
    label: "GET /api/tasks?limit=50, c=1",
    write: false,
    connections: 1,
    scenario: () => ({ key: "list50", label: "", method: "GET", compared: false, request: () => ({ path: "/api/tasks?limit=50" }) })
  },
  {
    key: "get-c1",
    label: "GET /api/tasks/{id}, c=1",
    write: false,
    connections: 1,
    scenario: (s) => ({ key: "get", label: "", method: "GET", compared: false, request: (n) => ({ path: `/api/tasks/${pick(s.readIds, n)}` }) })
  },
  {
    key: "create",
    label: "POST /api/tasks",
    write: true,
    scenario: () => ({
      key: "create",
      label: "",
      method: "POST",
      compared: false,
      request: (n) => ({ path: "/api/tasks", body: createTaskBody(n) })
    })
  },
  {
    key: "patch",
    label: "PATCH /api/tasks/{id} (priority)",
    write: true,
    scenario: (s) => ({
      key: "patch",
      label: "",
      method: "PATCH",
      compared: false,
      // Each pass over the ids sets the next priority, so every request changes the row.
      request: (n) => ({
        path: `/api/tasks/${pick(s.patchIds, n)}`,
        body: JSON.stringify({ priority: 1 + (Math.floor(n / s.patchIds.length) % 4) })
      })
    })
  },
  {
    key: "done",
    label: "POST /api/tasks/{id}/done (recurring)",
    write: true,
    scenario: (s) => ({ key: "done", label: "", method: "POST", compared: false, request: (n) => ({ path: `/api/tasks/${pick(s.recurringIds, n)}/done` }) })
  }
]

interface Measured {
  readonly row: string
  readonly side: SideKey
  readonly round: number
  readonly result: LoadResult
  readonly cpuPerRequest: number | undefined
  readonly dbCpuPerRequest: number | undefined
}

const measure = async (row: Row, side: Side, seeded: Seeded, round: number): Promise<Measured> => {
  const scenario = row.scenario(seeded)
  const options = { baseUrl: side.server.baseUrl, token: seeded.token, connections: row.connections ?? settings.connections }
  await sleep(500)
  if (settings.warmup > 0) await drive(scenario, { ...options, durationSeconds: settings.warmup })
  const cpuBefore = side.server.cpuMs()
  const dbBefore = side.databaseName === undefined ? undefined : databaseBackendsCpuMs(side.databaseName)
  const result = await drive(scenario, { ...options, durationSeconds: settings.duration })
  const cpuAfter = side.server.cpuMs()
  const dbAfter = side.databaseName === undefined ? undefined : databaseBackendsCpuMs(side.databaseName)
  const per = (ms: number | undefined) => (ms === undefined || result.total === 0 ? undefined : ms / result.total)
  const measured = {
    row: row.key,
    side: side.key,
    round,
    result,
    cpuPerRequest: per(cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore),
    dbCpuPerRequest: per(dbBefore === undefined || dbAfter === undefined ? undefined : cpuDelta(dbBefore, dbAfter))
  }
  log(
    `peer r${round} ${side.label.padEnd(15)} ${row.label.padEnd(38)} ${result.requestsPerSecond.toFixed(0)} req/s ` +
      `p50 ${result.p50} ms p99 ${result.p99} ms load ${Os.loadavg()[0]!.toFixed(1)}` + (result.bad > 0 ? ` (${result.bad} failed or non-2xx)` : "")
  )
  return measured
}

/** One request's status and wire bytes with plain node:http (no Accept-Encoding, as the load generators). */
const wireBytes = (baseUrl: string, token: string, path: string) =>
  new Promise<{ status: number; bytes: number; body: string; encoding: string | undefined }>((resolve, reject) => {
    const request = Http.get(`${baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      res.on("end", () => {
        const buffer = Buffer.concat(chunks)
        resolve({ status: res.statusCode ?? 0, bytes: buffer.length, body: buffer.toString("utf8"), encoding: res.headers["content-encoding"] })
      })
      res.on("error", reject)
    })
    request.on("error", reject)
    request.setTimeout(30_000, () => request.destroy(new Error(`GET ${path} timed out`)))
  })

/** One request of each row before any load: a wrong status fails fast. */
const probeRows = async (side: Side, seeded: Seeded) => {
  for (const row of ROWS) {
    const { body, path } = row.scenario(seeded).request(0)
    const method = row.scenario(seeded).method
    const res = await fetch(`${side.server.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${seeded.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body }),
      signal: AbortSignal.timeout(30_000)
    })
    const text = await res.text()
    if (res.status < 200 || res.status > 299) throw new Error(`${side.label}: ${method} ${path} answered ${res.status}: ${text.slice(0, 400)}`)
  }
}

// ---- the report ----

const fmt = (n: number) => Math.round(n).toLocaleString("en-US")
const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`

/** A Markdown table, aligned as text too; the first `text` columns left, the rest right. */
const markdown = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>, text = 1) => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) =>
    `| ${cells.map((c, i) => (i < text ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ")} |`
  return [line(header), `|${widths.map((w, i) => (i < text ? "-".repeat(w + 2) : "-".repeat(w + 1) + ":")).join("|")}|`, ...rows.map(line)]
}

const absent = (reason: string): Section => ({
  title: "Peer: Steady beside OpenTask",
  lines: [
    `OpenTask is absent (${reason}); the peer table was not measured.`,
    `To measure it: put a checkout of github.com/trentmcnitt/opentask at ${OPENTASK_DIR} (or set OPENTASK_DIR),`,
    `build it with \`bash bench/peer-build.sh ${OPENTASK_DIR}\` (npm ci, next build with the font mock, standalone files),`,
    `then run \`OPENTASK_DIR=${OPENTASK_DIR} BENCH_SCENARIOS=peer npm run bench\`. See docs/performance.md, "Beside OpenTask".`
  ]
})

const report = (sides: ReadonlyArray<Side>, seeded: ReadonlyMap<SideKey, Seeded>, measured: ReadonlyArray<Measured>, bytes: ReadonlyMap<SideKey, { task: number; page: number; pageTasks: number; list50: number }>): Section => {
  const of = (row: string, side: SideKey) => measured.filter((m) => m.row === row && m.side === side)
  const rps = (row: string, side: SideKey) => {
    const list = of(row, side)
    return list.length === 0 ? undefined : median(list.map((m) => m.result.requestsPerSecond))
  }
  const steady = sides.filter((s) => s.key !== "opentask")
  const lines: Array<string> = []
  lines.push(
    `Same run, same machine (${Os.cpus().length} CPUs, load ${Os.loadavg()[0]!.toFixed(1)} at the end); OpenTask ${opentaskVersion()} (Next.js + SQLite) from ${OPENTASK_DIR}.`,
    `Seeded through each API: ${settings.mainTasks} tasks for one user and ${settings.otherTasks} for each of ${settings.others} others (+3 projects each; ~30% of one-offs done, ~4% trashed);`,
    `PostgreSQL vacuumed and analyzed after the load, as autovacuum would; embedded and SQLite as a user gets them.`,
    `Load from ${loadGenerator()}; c=${settings.connections} unless noted, ${settings.duration} s after ${settings.warmup} s warm-up, ${settings.rounds} interleaved round(s) (reads first, then writes), medians; req/s:`,
    ""
  )
  const ratioHeader = steady.map((s) => `${s.key === "postgres" ? "PG" : "embedded"} / OT`)
  const rows = ROWS.map((row) => {
    const o = rps(row.key, "opentask")
    return [
      row.label,
      ...sides.map((s) => {
        const v = rps(row.key, s.key)
        return v === undefined ? "-" : fmt(v)
      }),
      ...steady.map((s) => {
        const v = rps(row.key, s.key)
        return v === undefined || o === undefined || o === 0 ? "-" : (v / o).toFixed(2)
      })
    ]
  })
  lines.push(...markdown(["Scenario", ...sides.map((s) => s.label), ...ratioHeader], rows))
  lines.push(
    "",
    "Latency (median p50 / median p99 over the rounds, ms, and p99 over p50), CPU ms per request (service; + PostgreSQL backends), req/s of each round:",
    ""
  )
  // Sub-millisecond answers (the c=1 rows) keep two decimals: the ratio means something there too.
  const msText = (ms: number) => ms.toFixed(ms < 10 ? 2 : 1)
  const latencyCell = (p50: number, p99: number) =>
    `${msText(p50)} / ${msText(p99)}${p50 > 0 ? ` (${(p99 / p50).toFixed(1)}×)` : ""}`
  const latency = ROWS.flatMap((row) =>
    sides.map((s) => {
      const list = of(row.key, s.key)
      if (list.length === 0) return [row.label, s.label, "-", "-", "-", "-"]
      const cpu = list.every((m) => m.cpuPerRequest !== undefined) ? median(list.map((m) => m.cpuPerRequest!)) : undefined
      const db = list.every((m) => m.dbCpuPerRequest !== undefined) ? median(list.map((m) => m.dbCpuPerRequest!)) : undefined
      const bad = list.reduce((n, m) => n + m.result.bad, 0)
      return [
        row.label,
        s.label,
        latencyCell(median(list.map((m) => m.result.p50)), median(list.map((m) => m.result.p99))),
        cpu === undefined ? "-" : db === undefined ? cpu.toFixed(2) : `${cpu.toFixed(2)} + ${db.toFixed(2)}`,
        list.sort((a, b) => a.round - b.round).map((m) => fmt(m.result.requestsPerSecond)).join(" / "),
        bad > 0 ? `${bad} failed/non-2xx` : ""
      ]
    })
  )
  lines.push(...markdown(["Scenario", "Side", "p50 / p99", "CPU ms/req", "rounds req/s", "errors"], latency, 2))
  // Throughput ratios move with whatever else the machine runs; CPU per request barely does.
  const cpuOf = (row: string, side: SideKey) => {
    const list = of(row, side)
    if (list.length === 0 || list.some((m) => m.cpuPerRequest === undefined)) return undefined
    return median(list.map((m) => m.cpuPerRequest! + (m.dbCpuPerRequest ?? 0)))
  }
  lines.push(
    "",
    "CPU per request, OpenTask's over Steady's (service + PostgreSQL backends; the ratio a CPU-bound machine would show):",
    ""
  )
  lines.push(
    ...markdown(
      ["Scenario", ...steady.map((s) => `OT / ${s.key === "postgres" ? "PG" : "embedded"}`)],
      ROWS.map((row) => {
        const o = cpuOf(row.key, "opentask")
        return [
          row.label,
          ...steady.map((s) => {
            const v = cpuOf(row.key, s.key)
            return v === undefined || o === undefined || v === 0 ? "-" : (o / v).toFixed(2)
          })
        ]
      })
    )
  )
  lines.push("", "Wire bytes (GET, no Accept-Encoding):", "")
  lines.push(
    ...markdown(
      ["Answer", ...sides.map((s) => s.label)],
      [
        ["one task (GET /api/tasks/{id}, seed task #" + seeded.get("opentask")!.sampleIndex + ")", ...sides.map((s) => fmt(bytes.get(s.key)!.task))],
        ["GET /api/tasks?limit=50", ...sides.map((s) => `${fmt(bytes.get(s.key)!.list50)} (${kb(bytes.get(s.key)!.list50)})`)],
        ["default page (GET /api/tasks)", ...sides.map((s) => `${fmt(bytes.get(s.key)!.page)} (${kb(bytes.get(s.key)!.page)}, ${bytes.get(s.key)!.pageTasks} tasks)`)]
      ]
    )
  )
  lines.push(
    "",
    `Seeding through the API: ${sides.map((s) => `${s.label} ${seeded.get(s.key)!.requests} requests in ${seeded.get(s.key)!.seconds.toFixed(0)} s`).join(", ")}.`
  )
  for (const s of sides) {
    const errors = s.server.errors()
    if (errors.count > 0) lines.push(`${s.label} logged ${errors.count} error(s): ${s.server.errorSummary().join("; ")}`)
  }
  return { title: "Peer: Steady beside OpenTask", lines }
}

// ---- the scenario ----

export const peerScenario = async (): Promise<Section> => {
  if (!Fs.existsSync(Path.join(OPENTASK_DIR, "package.json"))) return absent(`no checkout at ${OPENTASK_DIR}`)
  if (!Fs.existsSync(SERVER_JS)) return absent(`not built: no ${Path.relative(OPENTASK_DIR, SERVER_JS)} in ${OPENTASK_DIR}`)
  if (!Fs.existsSync(Path.join(OPENTASK_DIR, "node_modules", ".bin", "tsx"))) return absent(`no node_modules in ${OPENTASK_DIR} (its scripts need tsx)`)

  const now = new Date()
  const started: Array<{ side: Side; seeded: Seeded }> = []
  // One side at a time: each seeds with the machine to itself.
  for (const database of config.databases as ReadonlyArray<Database>) {
    log(`peer: ${SIDE_LABEL[database]}: a fresh database`)
    started.push(await startSteady(database, now))
    log(`peer: ${SIDE_LABEL[database]}: seeded (${started.at(-1)!.seeded.requests} requests in ${started.at(-1)!.seeded.seconds.toFixed(0)} s)`)
  }
  started.push(await startOpenTask(now))
  log(`peer: OpenTask: seeded (${started.at(-1)!.seeded.requests} requests in ${started.at(-1)!.seeded.seconds.toFixed(0)} s)`)
  const sides = started.map((s) => s.side)
  const seeded = new Map(started.map((s) => [s.side.key, s.seeded] as const))

  try {
    const bytes = new Map<SideKey, { task: number; page: number; pageTasks: number; list50: number }>()
    for (const { side, seeded: s } of started) {
      await probeRows(side, s)
      const task = await wireBytes(side.server.baseUrl, s.token, `/api/tasks/${s.readIds[0]}`)
      const page = await wireBytes(side.server.baseUrl, s.token, "/api/tasks")
      const list50 = await wireBytes(side.server.baseUrl, s.token, "/api/tasks?limit=50")
      for (const r of [task, page, list50]) {
        if (r.status !== 200) throw new Error(`${side.label}: a GET for the byte count answered ${r.status}: ${r.body.slice(0, 300)}`)
        if (r.encoding !== undefined) log(`peer: ${side.label} answered with Content-Encoding ${r.encoding} though none was asked for`)
      }
      const answer = JSON.parse(page.body)
      bytes.set(side.key, {
        task: task.bytes,
        page: page.bytes,
        pageTasks: itemsOf(answer, "tasks").length,
        list50: list50.bytes
      })
    }

    // A fresh process is still compiling its request paths (V8, and Next.js loading each
    // route's module on its first request): every row drives every side briefly first.
    const warmSeconds = Math.max(1, Math.round(config.serviceWarmup / ROWS.length))
    if (config.serviceWarmup > 0) {
      log(`peer: warming every side up, ${warmSeconds} s a row`)
      for (const { side, seeded: s } of started) {
        for (const row of ROWS) {
          await drive(row.scenario(s), { baseUrl: side.server.baseUrl, token: s.token, connections: row.connections ?? settings.connections, durationSeconds: warmSeconds })
        }
      }
    }
    const measured: Array<Measured> = []
    for (const phase of [ROWS.filter((r) => !r.write), ROWS.filter((r) => r.write)]) {
      for (let round = 1; round <= settings.rounds; round++) {
        for (const row of phase) {
          // The order of the sides rotates each round.
          const order = sides.map((_, k) => started[(k + round - 1) % started.length]!)
          for (const { side, seeded: s } of order) measured.push(await measure(row, side, s, round))
        }
      }
    }
    return report(sides, seeded, measured, bytes)
  } catch (error) {
    for (const side of sides) console.error(`${side.label} output:\n${side.server.output()}`)
    throw error
  } finally {
    for (const side of sides) await side.server.stop()
  }
}
