import autocannon from "autocannon"
import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"

/** One kind of request the benchmark drives, described independently of the server. */
export interface Scenario {
  readonly key: "list" | "list50" | "get" | "create" | "patch" | "done" | "counts"
  readonly label: string
  readonly method: "GET" | "POST" | "PATCH"
  /** The n-th request's path, body and extra headers; n counts up across all connections. */
  readonly request: (n: number) => {
    readonly path: string
    readonly body?: string
    readonly headers?: Readonly<Record<string, string>>
  }
  /** Whether the baseline server implements it (the A/B scenarios). */
  readonly compared: boolean
}

/**
 * The n-th created task of the write scenarios (here and in bench/peer.ts): due far ahead, or
 * none, so created tasks do not reorder the seeded default page.
 */
export const createTaskBody = (n: number) =>
  JSON.stringify({
    title: `Bench task ${n}`,
    labels: n % 2 === 0 ? ["bench"] : [],
    priority: n % 5,
    notes: n % 3 === 0 ? "Created by the benchmark" : "",
    ...(n % 4 === 0 ? {} : { due_at: new Date(Date.UTC(2031, 0, 1) + (n % 1000) * 3_600_000).toISOString() })
  })

export const makeScenarios = (ids: {
  readonly readIds: ReadonlyArray<number>
  readonly patchIds: ReadonlyArray<number>
  readonly recurringIds: ReadonlyArray<number>
}) => {
  const pick = (list: ReadonlyArray<number>, n: number) => list[n % list.length]!
  const scenarios: ReadonlyArray<Scenario> = [
    { key: "list", label: "GET /api/tasks", method: "GET", compared: false, request: () => ({ path: "/api/tasks" }) },
    {
      key: "list50",
      label: "GET /api/tasks?limit=50",
      method: "GET",
      compared: true,
      request: () => ({ path: "/api/tasks?limit=50" })
    },
    {
      key: "get",
      label: "GET /api/tasks/{id}",
      method: "GET",
      compared: true,
      request: (n) => ({ path: `/api/tasks/${pick(ids.readIds, n)}` })
    },
    {
      key: "create",
      label: "POST /api/tasks",
      method: "POST",
      compared: true,
      request: (n) => ({ path: "/api/tasks", body: createTaskBody(n) })
    },
    {
      key: "patch",
      label: "PATCH /api/tasks/{id}",
      method: "PATCH",
      compared: true,
      request: (n) => ({
        path: `/api/tasks/${pick(ids.patchIds, n)}`,
        body: JSON.stringify({ title: `Edited task ${n}`, priority: n % 5 })
      })
    },
    {
      // A recurring task stays open and moves to its next occurrence, so it can be done again.
      key: "done",
      label: "POST /api/tasks/{id}/done",
      method: "POST",
      compared: true,
      request: (n) => ({ path: `/api/tasks/${pick(ids.recurringIds, n)}/done` })
    },
    { key: "counts", label: "GET /api/tasks/counts", method: "GET", compared: false, request: () => ({ path: "/api/tasks/counts" }) }
  ]
  return scenarios
}

export interface LoadResult {
  readonly requestsPerSecond: number
  readonly p50: number
  readonly p99: number
  readonly total: number
  /** Requests that failed or did not answer 2xx. */
  readonly bad: number
}

export interface LoadOptions {
  readonly baseUrl: string
  readonly token: string
  readonly connections: number
  readonly durationSeconds: number
}

/**
 * autocannon's run, with every 2xx answer's time in milliseconds as measured (its own
 * histogram keeps whole milliseconds, so a row answering in 0.6 ms printed p50 0).
 */
const runAutocannon = (options: autocannon.Options) =>
  new Promise<{ readonly result: autocannon.Result; readonly times: Float64Array }>((resolve, reject) => {
    const times: Array<number> = []
    const instance = autocannon(options, (error, result) => (error ? reject(error) : resolve({ result, times: Float64Array.from(times) })))
    instance.on("response", (_client: unknown, status: number, _bytes: number, ms: number) => {
      if (status >= 200 && status <= 299) times.push(ms)
    })
  })

/** The `q` quantile of sorted times (nearest rank), to 0.01 ms. */
const quantile = (sorted: Float64Array, q: number): number =>
  sorted.length === 0 ? 0 : Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]! * 100) / 100

/**
 * The load generator: wrk (Debian's `wrk`, one thread) when it is on the PATH, else autocannon
 * in this process; BENCH_LOADGEN=wrk or autocannon chooses. autocannon's JavaScript costs this
 * process 0.13–0.23 ms of CPU a request, on the cores the measured service needs, and its own
 * GC pauses land in the measured times; wrk costs a tenth of that (docs/performance.md, "The
 * load generator").
 */
let wrkFound: boolean | undefined
export const loadGenerator = (): "wrk" | "autocannon" => {
  const asked = process.env.BENCH_LOADGEN ?? ""
  if (asked !== "" && asked !== "wrk" && asked !== "autocannon") throw new Error("BENCH_LOADGEN must be wrk or autocannon")
  wrkFound ??= /\bwrk\b/.test(ChildProcess.spawnSync("wrk", ["-v"], { encoding: "utf8" }).stdout ?? "")
  if (asked === "wrk" && !wrkFound) throw new Error("BENCH_LOADGEN=wrk, but no wrk on the PATH (apt-get install wrk)")
  return asked === "autocannon" || !wrkFound ? "autocannon" : "wrk"
}

/** Requests written out for wrk per run; it cycles through them (see `driveWrk`). */
const WRK_REQUESTS = 20_000

/**
 * One wrk run: the scenario's first WRK_REQUESTS requests, rendered here as raw HTTP/1.1 into
 * a Lua table that each connection's `request()` walks in turn, so wrk does no work per request
 * beyond the socket; `done()` prints the counts and latency quantiles (microseconds) as JSON.
 * A run that sends more than WRK_REQUESTS requests starts over at the first: a create then
 * repeats a body (a new task all the same), a PATCH a priority (`ROWS` in bench/peer.ts picks
 * them in passes of four over its ids, and WRK_REQUESTS is a multiple of four passes for the
 * id counts it uses, 1,000 or fewer that divide 5,000).
 */
const driveWrk = async (scenario: Scenario, options: LoadOptions): Promise<LoadResult> => {
  const url = new URL(options.baseUrl)
  const lua = (text: string) => JSON.stringify(text) // ASCII only: a JSON string is a Lua string
  const lines: Array<string> = []
  for (let n = 0; n < WRK_REQUESTS; n++) {
    const next = scenario.request(n)
    const headers: Record<string, string> = {
      host: url.host,
      authorization: `Bearer ${options.token}`,
      ...(next.body === undefined ? {} : { "content-type": "application/json", "content-length": String(Buffer.byteLength(next.body)) }),
      ...next.headers
    }
    const head = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")
    lines.push(lua(`${scenario.method} ${next.path} HTTP/1.1\r\n${head}\r\n${next.body ?? ""}`))
  }
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "steady-wrk-"))
  const script = Path.join(dir, "run.lua")
  Fs.writeFileSync(
    script,
    [
      `local requests = {\n${lines.join(",\n")}\n}`,
      "local count = #requests",
      "local i = 0",
      "function request() i = i % count + 1; return requests[i] end",
      "function done(summary, latency, requests)",
      "  local e = summary.errors",
      '  io.write(string.format(\'{"requests":%d,"duration":%d,"bad":%d,"p50":%d,"p99":%d}\\n\',',
      "    summary.requests, summary.duration, e.connect + e.read + e.write + e.status + e.timeout,",
      "    latency:percentile(50), latency:percentile(99)))",
      "end"
    ].join("\n")
  )
  try {
    const output = await new Promise<string>((resolve, reject) => {
      ChildProcess.execFile(
        "wrk",
        ["-t1", `-c${options.connections}`, `-d${options.durationSeconds}s`, "--timeout", "10s", "-s", script, options.baseUrl],
        { maxBuffer: 1 << 20 },
        (error, stdout, stderr) => (error ? reject(new Error(`wrk: ${error.message} ${stderr}`)) : resolve(stdout))
      )
    })
    const line = output.split("\n").find((l) => l.startsWith("{\"requests\""))
    if (line === undefined) throw new Error(`wrk printed no summary: ${output.slice(0, 500)}`)
    const r = JSON.parse(line) as { requests: number; duration: number; bad: number; p50: number; p99: number }
    const ms = (us: number) => Math.round(us / 10) / 100
    return { requestsPerSecond: r.requests / (r.duration / 1e6), p50: ms(r.p50), p99: ms(r.p99), total: r.requests, bad: r.bad }
  } finally {
    Fs.rmSync(dir, { recursive: true, force: true })
  }
}

/** Drives one scenario against one server for the given duration. */
export const drive = async (scenario: Scenario, options: LoadOptions): Promise<LoadResult> => {
  if (loadGenerator() === "wrk") return driveWrk(scenario, options)
  let counter = 0
  const first = scenario.request(0)
  const headers: Record<string, string> = { authorization: `Bearer ${options.token}` }
  if (first.body !== undefined) headers["content-type"] = "application/json"
  const { result, times } = await runAutocannon({
    url: options.baseUrl,
    connections: options.connections,
    duration: options.durationSeconds,
    timeout: 10,
    requests: [
      {
        method: scenario.method,
        headers,
        setupRequest: (request) => {
          const next = scenario.request(counter++)
          const withHeaders = next.headers === undefined ? request : { ...request, headers: { ...headers, ...next.headers } }
          return next.body === undefined
            ? { ...withHeaders, path: next.path }
            : { ...withHeaders, path: next.path, body: next.body }
        }
      }
    ]
  })
  times.sort()
  return {
    requestsPerSecond: result.requests.total / result.duration,
    p50: quantile(times, 0.5),
    p99: quantile(times, 0.99),
    total: result.requests.total,
    bad: result.errors + result.timeouts + result.non2xx
  }
}

/**
 * One request of the scenario with fetch, to fail fast on a wrong status before loading.
 * A 5xx is retried twice: when autocannon stops it drops connections with requests in
 * flight, and the service's cancellation of those queries can hit the next statement on the
 * same database connection (see the report); the measured runs count such failures.
 */
export const probe = async (scenario: Scenario, baseUrl: string, token: string): Promise<string> => {
  const { body, headers, path } = scenario.request(0)
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(`${baseUrl}${path}`, {
      method: scenario.method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
        ...headers
      },
      ...(body === undefined ? {} : { body }),
      signal: AbortSignal.timeout(10_000)
    })
    const text = await res.text()
    if (res.status >= 200 && res.status <= 299) return text
    if (res.status < 500 || attempt >= 3) {
      throw new Error(`${scenario.method} ${path} answered ${res.status}: ${text.slice(0, 500)}`)
    }
    console.error(`[bench] probe ${scenario.method} ${path} answered ${res.status} (attempt ${attempt}); retrying`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}
