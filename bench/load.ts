import autocannon from "autocannon"

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

/** Drives one scenario against one server for the given duration. */
export const drive = async (scenario: Scenario, options: LoadOptions): Promise<LoadResult> => {
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
