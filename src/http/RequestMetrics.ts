import { Context, Layer } from "effect"

/** Upper bounds (seconds) of the latency histogram's buckets; `+Inf` is implied. */
export const LATENCY_BUCKETS: ReadonlyArray<number> = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

interface RouteSeries {
  readonly method: string
  readonly route: string
  readonly byStatus: Map<number, number>
  /** Per bucket, not cumulative: one increment per request; summed when rendered. */
  readonly buckets: Array<number>
  sum: number
  count: number
}

const escapeLabel = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "\\\"")

/**
 * Request counts and latencies per route, kept as plain numbers in memory: recording a
 * request is a map lookup and three additions, so the hot path pays next to nothing.
 * One registry per service instance (tests run several in one process).
 */
export class RequestMetricsRegistry {
  private readonly series = new Map<string, RouteSeries>()

  record(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route}`
    let entry = this.series.get(key)
    if (entry === undefined) {
      entry = { method, route, byStatus: new Map(), buckets: LATENCY_BUCKETS.map(() => 0).concat(0), sum: 0, count: 0 }
      this.series.set(key, entry)
    }
    entry.byStatus.set(status, (entry.byStatus.get(status) ?? 0) + 1)
    let i = 0
    while (i < LATENCY_BUCKETS.length && seconds > LATENCY_BUCKETS[i]!) i++
    entry.buckets[i]!++
    entry.sum += seconds
    entry.count++
  }

  /** Prometheus text exposition lines for the two request metrics. */
  render(): Array<string> {
    const out: Array<string> = [
      "# HELP steady_http_requests_total HTTP requests answered, by method, route pattern and status.",
      "# TYPE steady_http_requests_total counter"
    ]
    const all = [...this.series.values()].sort((a, b) => (a.route + a.method).localeCompare(b.route + b.method))
    for (const s of all) {
      const labels = `method="${s.method}",route="${escapeLabel(s.route)}"`
      for (const [status, n] of [...s.byStatus].sort((a, b) => a[0] - b[0])) {
        out.push(`steady_http_requests_total{${labels},status="${status}"} ${n}`)
      }
    }
    out.push(
      "# HELP steady_http_request_duration_seconds Time from request to response, by method and route pattern.",
      "# TYPE steady_http_request_duration_seconds histogram"
    )
    for (const s of all) {
      const labels = `method="${s.method}",route="${escapeLabel(s.route)}"`
      let cumulative = 0
      LATENCY_BUCKETS.forEach((le, i) => {
        cumulative += s.buckets[i]!
        out.push(`steady_http_request_duration_seconds_bucket{${labels},le="${le}"} ${cumulative}`)
      })
      out.push(`steady_http_request_duration_seconds_bucket{${labels},le="+Inf"} ${s.count}`)
      out.push(`steady_http_request_duration_seconds_sum{${labels}} ${s.sum}`)
      out.push(`steady_http_request_duration_seconds_count{${labels}} ${s.count}`)
    }
    return out
  }
}

export class RequestMetrics extends Context.Tag("steady/RequestMetrics")<RequestMetrics, RequestMetricsRegistry>() {
  static readonly Live = Layer.sync(RequestMetrics, () => new RequestMetricsRegistry())
}
