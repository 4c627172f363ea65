import { ConfigProvider, Effect, Either, FiberRef, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { appConfig } from "../src/kernel/AppConfig.js"
import { redactQuery, redactUrl } from "../src/kernel/Tracing.js"
import { type Receiver, startReceiver } from "./support/receiver.js"
import { startService, type TestService } from "./support/service.js"
import { createTask } from "./support/tasks.js"

interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<{ readonly key: string; readonly value: Record<string, unknown> }>
}

const SPAN_KIND_SERVER = 2
const SPAN_KIND_CLIENT = 3

/** Every span the fake collector received as OTLP/JSON. */
const spansOf = (receiver: Receiver): Array<OtlpSpan> =>
  receiver.received.flatMap((request) =>
    (request.body?.resourceSpans ?? []).flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans as Array<OtlpSpan>)))

const attr = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value
  return value === undefined ? undefined : Object.values(value)[0]
}

describe("tracing over OTLP/HTTP (JSON)", () => {
  let collector: Receiver
  let service: TestService
  let token = ""
  let taskId = 0
  let calendarKey = ""

  beforeAll(async () => {
    collector = await startReceiver()
    service = await startService({
      otlp: Option.some({
        tracesUrl: collector.url("/v1/traces"),
        protocol: "http/json",
        headers: { "x-collector-key": "k1" },
        serviceName: "steady-test"
      })
    })
    const alice = await service.user("alice")
    token = alice.token
    taskId = (await createTask(alice.api, { title: "traced" })).id
    expect((await alice.api.get(`/api/tasks/${taskId}`)).status).toBe(200)
    calendarKey = (await alice.api.post("/api/calendar/key")).body.data.key
    expect((await service.anonymous.get(`/api/calendar.ics?key=${calendarKey}&x=1`)).status).toBe(200)
    // A wrong key is a secret too (someone's typo of the right one).
    expect((await service.anonymous.get(`/api/calendar.ics?key=${"0".repeat(64)}`)).status).toBe(401)
    // Stopping flushes what the exporter still holds.
    await service.stop()
  })
  afterAll(async () => {
    await collector?.close()
  })

  it("posts JSON batches to /v1/traces with the configured headers and service name", () => {
    expect(collector.received.length).toBeGreaterThan(0)
    for (const request of collector.received) {
      expect(request.method).toBe("POST")
      expect(request.path).toBe("/v1/traces")
      expect(request.headers["content-type"]).toContain("application/json")
      expect(request.headers["x-collector-key"]).toBe("k1")
    }
    const resource = collector.received[0]!.body.resourceSpans[0].resource
    expect(resource.attributes).toContainEqual({ key: "service.name", value: { stringValue: "steady-test" } })
  })

  it("sends a server span per request, named by its route, with status and path", () => {
    const spans = spansOf(collector).filter((s) => s.name === "GET /api/tasks/:id")
    expect(spans).toHaveLength(1)
    const span = spans[0]!
    expect(span.kind).toBe(SPAN_KIND_SERVER)
    expect(attr(span, "http.route")).toBe("/api/tasks/:id")
    expect(attr(span, "url.path")).toBe(`/api/tasks/${taskId}`)
    expect(Number(attr(span, "http.response.status_code"))).toBe(200)
    expect(attr(span, "http.request.method")).toBe("GET")
    expect(spansOf(collector).filter((s) => s.name === "POST /api/tasks")).toHaveLength(1)
  })

  it("never exports the bearer token", () => {
    const text = collector.received.map((r) => r.raw.toString("utf8")).join("\n")
    expect(token.length).toBeGreaterThan(10)
    expect(text).not.toContain(token)
  })

  it("never exports the calendar key: url.full and url.query carry REDACTED in its place", () => {
    expect(calendarKey).toMatch(/^[0-9a-f]{64}$/)
    const text = collector.received.map((r) => r.raw.toString("utf8")).join("\n")
    expect(text).not.toContain(calendarKey)
    expect(text).not.toContain("0".repeat(64))
    const spans = spansOf(collector).filter((s) => s.name === "GET /api/calendar.ics")
    expect(spans).toHaveLength(2)
    const feed = spans.find((s) => String(attr(s, "url.query")).endsWith("&x=1"))!
    expect(attr(feed, "url.query")).toBe("key=REDACTED&x=1")
    expect(String(attr(feed, "url.full"))).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/calendar\.ics\?key=REDACTED&x=1$/)
    expect(attr(feed, "url.path")).toBe("/api/calendar.ics")
  })

  it("redacts credential-like query parameters and user:password, and leaves the rest of a URL alone", () => {
    expect(redactQuery("key=abc&limit=5&access_token=t&X-Amz-Signature=s&api-key=k&AWSAccessKeyId=i&monkey=m&keys=1"))
      .toBe("key=REDACTED&limit=5&access_token=REDACTED&X-Amz-Signature=REDACTED&api-key=REDACTED&AWSAccessKeyId=REDACTED&monkey=m&keys=1")
    expect(redactQuery("token&client_secret=&code=c&state=s")).toBe("token&client_secret=REDACTED&code=REDACTED&state=s")
    expect(redactUrl("https://u:p@host.example/a?password=x&q=1#frag")).toBe("https://REDACTED:REDACTED@host.example/a?password=REDACTED&q=1#frag")
    expect(redactUrl("http://h/api/tasks?limit=5")).toBe("http://h/api/tasks?limit=5")
    expect(redactUrl("/api/calendar.ics?%6Bey=abc")).toBe("/api/calendar.ics?%6Bey=REDACTED")
  })

  it("sends a client span per SQL statement, inside the request's trace", () => {
    const request = spansOf(collector).find((s) => s.name === "GET /api/tasks/:id")!
    const all = spansOf(collector)
    const byId = new Map(all.map((s) => [s.spanId, s]))
    const underRequest = (span: OtlpSpan): boolean => {
      for (let at: OtlpSpan | undefined = span; at !== undefined; at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined) {
        if (at.spanId === request.spanId) return true
      }
      return false
    }
    const statements = all.filter((s) => s.name === "sql.execute" && s.traceId === request.traceId)
    expect(statements.length).toBeGreaterThan(0)
    for (const statement of statements) {
      expect(statement.kind).toBe(SPAN_KIND_CLIENT)
      expect(underRequest(statement)).toBe(true)
      expect(typeof attr(statement, "db.query.text")).toBe("string")
    }
    expect(statements.some((s) => /\btasks\b/.test(String(attr(s, "db.query.text"))))).toBe(true)
    // Background work is traced too: the scheduler sweeps once at start-up.
    expect(all.some((s) => s.name === "Scheduler.quotaRollover")).toBe(true)
  })
})

describe("tracing over OTLP/HTTP (protobuf, from the environment)", () => {
  let collector: Receiver

  beforeAll(async () => {
    collector = await startReceiver()
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = collector.url("")
    process.env.OTEL_SERVICE_NAME = "steady-env"
    try {
      const service = await startService()
      const alice = await service.user("bob")
      await alice.api.get("/api/tasks")
      await service.stop()
    } finally {
      delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT
      delete process.env.OTEL_SERVICE_NAME
    }
  })
  afterAll(async () => {
    await collector?.close()
  })

  it("uses the standard variables: <endpoint>/v1/traces, protobuf by default", () => {
    expect(collector.received.length).toBeGreaterThan(0)
    const request = collector.received[0]!
    expect(request.path).toBe("/v1/traces")
    expect(request.headers["content-type"]).toBe("application/x-protobuf")
    const bytes = Buffer.concat(collector.received.map((r) => r.raw))
    // Protobuf strings travel as plain UTF-8 bytes.
    for (const text of ["steady-env", "GET /api/tasks", "sql.execute"]) expect(bytes.includes(text)).toBe(true)
  })
})

describe("without an OTLP endpoint", () => {
  let service: TestService
  beforeAll(async () => {
    service = await startService({ otlp: Option.none() })
  })
  afterAll(async () => {
    await service?.stop()
  })

  it("installs no tracer: tracing is off for everything the service runs", async () => {
    expect(await service.run(FiberRef.get(FiberRef.currentTracerEnabled))).toBe(false)
    const user = await service.user("carol")
    expect((await user.api.get("/api/tasks")).status).toBe(200)
  })

  const configFrom = (env: Record<string, string>) =>
    Effect.runSync(Effect.either(Effect.withConfigProvider(appConfig, ConfigProvider.fromMap(new Map(Object.entries(env))))))

  it("reads the standard variables, and refuses a protocol it cannot speak", () => {
    const off = configFrom({})
    expect(Either.isRight(off) && Option.isNone(off.right.otlp)).toBe(true)
    const on = configFrom({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/",
      OTEL_EXPORTER_OTLP_HEADERS: "api-key=a%20b,x=1"
    })
    expect(Either.isRight(on) && on.right.otlp).toEqual(Option.some({
      tracesUrl: "http://collector:4318/v1/traces",
      protocol: "http/protobuf",
      headers: { "api-key": "a b", x: "1" },
      serviceName: "steady"
    }))
    const direct = configFrom({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://c:4318/custom", OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" })
    expect(Either.isRight(direct) && Option.getOrThrow(direct.right.otlp).tracesUrl).toBe("http://c:4318/custom")
    expect(Either.isLeft(configFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }))).toBe(true)
    expect(Either.isLeft(configFrom({ OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }))).toBe(true)
  })
})
