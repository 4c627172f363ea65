// The part of autocannon 8's programmatic API the benchmark uses (the package ships no types).
declare module "autocannon" {
  namespace autocannon {
    interface Request {
      method?: string
      path?: string
      headers?: Record<string, string>
      body?: string | Buffer
      setupRequest?: (request: Request, context: Record<string, unknown>) => Request | undefined
    }

    interface Options {
      url: string
      connections?: number
      duration?: number
      amount?: number
      timeout?: number
      pipelining?: number
      method?: string
      headers?: Record<string, string>
      body?: string | Buffer
      requests?: ReadonlyArray<Request>
      title?: string
    }

    interface Histogram {
      average: number
      mean: number
      stddev: number
      min: number
      max: number
      total: number
      p50: number
      p90: number
      p99: number
      p99_9: number
    }

    interface Result {
      title?: string
      duration: number
      errors: number
      timeouts: number
      non2xx: number
      resets: number
      "2xx": number
      "4xx": number
      "5xx": number
      statusCodeStats: Record<string, { count: number }>
      latency: Histogram & { totalCount: number }
      requests: Histogram & { sent: number }
      throughput: Histogram
    }

    interface Instance extends NodeJS.EventEmitter {
      stop(): void
    }
  }

  function autocannon(
    options: autocannon.Options,
    callback: (error: Error | null, result: autocannon.Result) => void
  ): autocannon.Instance

  export = autocannon
}
