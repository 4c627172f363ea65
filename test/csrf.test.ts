import { Option } from "effect"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { parseCidrList } from "../src/kernel/AppConfig.js"
import { startService, type TestService, type TestUser } from "./support/service.js"

/**
 * Cookie-authenticated writes must come from our own origin as JSON (403 otherwise, nothing
 * written); Bearer and proxy auth are unchanged; the cookie is Secure when a trusted proxy
 * says the request came over HTTPS.
 */

const FORBIDDEN = { error: expect.stringContaining("Cookie-authenticated writes"), code: "FORBIDDEN", details: {} }

const setCookieOf = (headers: Headers) => headers.getSetCookie().find((c) => c.startsWith("steady_session="))

/** Starts a service and keeps the log lines it printed while starting. */
const startLogged = async (overrides: Parameters<typeof startService>[0]) => {
  const lines: Array<string> = []
  const spy = vi.spyOn(console, "log").mockImplementation((...args: Array<unknown>) => {
    lines.push(args.map(String).join(" "))
  })
  try {
    return { service: await startService(overrides), lines }
  } finally {
    spy.mockRestore()
  }
}
const PROXY_WARNING = "SERVICE_PROXY_AUTH_HEADER=Remote-User with the default SERVICE_PROXY_TRUSTED_IPS"

describe("cookie writes (CSRF)", () => {
  let service: TestService
  let alice: TestUser
  let cookie: string
  let host: string
  let startLines: Array<string>

  beforeAll(async () => {
    ;({ service, lines: startLines } = await startLogged({ proxyAuthHeader: Option.some("Remote-User") }))
    alice = await service.user("csrf-alice")
    const minted = await service.client({ authorization: `Bearer ${alice.token}` }).post("/api/auth/session")
    expect(minted.status).toBe(200)
    cookie = setCookieOf(minted.headers)!.split(";")[0]!
    host = new URL(service.baseUrl).host
  })
  afterAll(async () => {
    await service?.stop()
  })

  const titles = async () => ((await alice.api.get("/api/tasks?limit=200")).body.data.tasks as Array<{ title: string }>).map((t) => t.title)
  const raw = (method: string, path: string, headers: Record<string, string>, body?: RequestInit["body"]) =>
    fetch(`${service.baseUrl}${path}`, { method, headers: { cookie, ...headers }, ...(body === undefined ? {} : { body }) }).then(
      async (res): Promise<{ status: number; body: any }> => ({ status: res.status, body: await res.json().catch(() => undefined) })
    )

  it("proxy auth on the default loopback trust list logs a warning at start", () => {
    const warnings = startLines.filter((line) => line.includes(PROXY_WARNING))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/level=WARN/)
    expect(warnings[0]).toContain("must overwrite (never pass through) that header")
  })

  it("form-encoded, multipart and text/plain writes with the cookie are refused and change nothing", async () => {
    const before = await titles()
    const form = await raw("POST", "/api/tasks", { "content-type": "application/x-www-form-urlencoded" }, "title=forged")
    expect(form).toEqual({ status: 403, body: FORBIDDEN })
    const data = new FormData()
    data.append("title", "forged multipart")
    expect(await raw("POST", "/api/tasks", {}, data)).toEqual({ status: 403, body: FORBIDDEN })
    expect(await raw("POST", "/api/tasks", { "content-type": "text/plain" }, JSON.stringify({ title: "forged text" }))).toEqual({
      status: 403,
      body: FORBIDDEN
    })
    // A body with no content type at all is not JSON either.
    expect((await raw("POST", "/api/tasks", {}, new Uint8Array(Buffer.from(JSON.stringify({ title: "forged bare" }))))).status).toBe(403)
    expect(await titles()).toEqual(before)
  })

  it("a cross-site or same-site (sibling host) browser request is refused, even as JSON", async () => {
    const before = await titles()
    const json = { "content-type": "application/json" }
    const body = JSON.stringify({ title: "forged json" })
    for (
      const headers of [
        { origin: "https://evil.example" },
        { origin: "http://evil.example", "sec-fetch-site": "same-origin" },
        { origin: `http://sub.${host}` },
        { origin: "null" },
        { "sec-fetch-site": "cross-site" },
        { "sec-fetch-site": "same-site" },
        { "sec-fetch-site": "cross-site", origin: service.baseUrl }
      ]
    ) {
      expect(await raw("POST", "/api/tasks", { ...json, ...headers }, body), JSON.stringify(headers)).toEqual({ status: 403, body: FORBIDDEN })
    }
    expect((await raw("DELETE", "/api/tasks/1", { origin: "https://evil.example" })).status).toBe(403)
    expect(await titles()).toEqual(before)
  })

  it("same-origin JSON writes, bodyless writes and reads go through", async () => {
    const json = { "content-type": "application/json" }
    const sameOrigin = await raw("POST", "/api/tasks", { ...json, origin: service.baseUrl, "sec-fetch-site": "same-origin" }, JSON.stringify({ title: "mine" }))
    expect(sameOrigin.status).toBe(201)
    const id = sameOrigin.body.data.id
    // Not a browser: neither Origin nor Sec-Fetch-Site.
    expect((await raw("PATCH", `/api/tasks/${id}`, { "content-type": "application/json; charset=utf-8" }, JSON.stringify({ priority: 2 }))).status).toBe(200)
    expect((await raw("POST", `/api/tasks/${id}/done`, { origin: service.baseUrl })).status).toBe(200)
    expect((await raw("DELETE", `/api/tasks/${id}`, { "sec-fetch-site": "same-origin" })).status).toBe(200)
    // Reads are not writes: a cross-site page cannot read the answer anyway.
    expect((await raw("GET", "/api/tasks", { origin: "https://evil.example", "sec-fetch-site": "cross-site" })).status).toBe(200)
    expect((await alice.api.get(`/api/tasks/${id}`)).body.data).toMatchObject({ title: "mine", priority: 2, done: true })
  })

  it("Bearer and proxy auth are unchanged: a form body still creates the task", async () => {
    const bearer = await alice.api.request("POST", "/api/tasks", "title=by%20bearer", {
      "content-type": "application/x-www-form-urlencoded",
      origin: "https://elsewhere.example"
    })
    expect(bearer.status).toBe(201)
    expect(bearer.body.data.title).toBe("by bearer")
    const proxied = await service.client({ "remote-user": "csrf-alice" }).request("POST", "/api/tasks", "title=by%20proxy", {
      "content-type": "application/x-www-form-urlencoded",
      "sec-fetch-site": "cross-site"
    })
    expect(proxied.status).toBe(201)
    expect(proxied.body.data.title).toBe("by proxy")
  })

  it("the cookie is Secure when a trusted proxy (here: loopback) says X-Forwarded-Proto: https, and only then", async () => {
    const mint = async (headers: Record<string, string>) =>
      setCookieOf((await service.client({ authorization: `Bearer ${alice.token}`, ...headers }).post("/api/auth/session")).headers)!
    expect(await mint({ "x-forwarded-proto": "https" })).toMatch(/;\s*Secure(;|$)/i)
    // The proxy's own value is the last one; an earlier one is what the client sent it.
    expect(await mint({ "x-forwarded-proto": "http, https" })).toMatch(/;\s*Secure(;|$)/i)
    expect(await mint({ "x-forwarded-proto": "https, http" })).not.toMatch(/Secure/i)
    expect(await mint({})).not.toMatch(/Secure/i)
    expect(await mint({ "x-forwarded-proto": "http" })).not.toMatch(/Secure/i)
  })

  it("X-Forwarded-Host counts by its last value, the one the trusted proxy appended", async () => {
    const json = { "content-type": "application/json" }
    const forged = await raw("POST", "/api/tasks", { ...json, origin: "http://evil.example", "x-forwarded-host": `evil.example, ${host}` }, JSON.stringify({ title: "forged forwarded" }))
    expect(forged).toEqual({ status: 403, body: FORBIDDEN })
    expect(await titles()).not.toContain("forged forwarded")
    const proxied = await raw("POST", "/api/tasks", { ...json, origin: "https://tasks.example", "x-forwarded-host": "evil.example, tasks.example" }, JSON.stringify({ title: "via proxy" }))
    expect(proxied.status).toBe(201)
  })
})

describe("GET /api/review with the cookie: starting a session follows the cookie write rules", () => {
  let service: TestService
  let user: TestUser
  let cookie: string

  beforeAll(async () => {
    service = await startService()
    user = await service.user("csrf-reviewer")
    const minted = await service.client({ authorization: `Bearer ${user.token}` }).post("/api/auth/session")
    cookie = setCookieOf(minted.headers)!.split(";")[0]!
    expect((await user.api.post("/api/tasks", { title: "overdue", due_at: "2020-01-01T09:00:00Z" })).status).toBe(201)
  })
  afterAll(async () => {
    await service?.stop()
  })

  const review = (headers: Record<string, string>, method = "GET") =>
    fetch(`${service.baseUrl}/api/review`, { method, headers: { cookie, ...headers } }).then(async (res): Promise<{ status: number; body: any }> => ({
      status: res.status,
      body: method === "HEAD" ? undefined : await res.json()
    }))

  it("a cross-site or same-site request is refused (403) and leaves the live session to execute", async () => {
    const started = await review({ "sec-fetch-site": "same-origin" })
    expect(started.status).toBe(200)
    const sessionId = started.body.data.session_id
    for (
      const headers of [
        { "sec-fetch-site": "cross-site" },
        { "sec-fetch-site": "same-site" },
        { "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document" },
        { origin: "https://evil.example" },
        { origin: "null" }
      ]
    ) {
      expect(await review(headers), JSON.stringify(headers)).toEqual({ status: 403, body: FORBIDDEN })
    }
    expect((await review({ "sec-fetch-site": "cross-site" }, "HEAD")).status).toBe(403)
    const executed = await fetch(`${service.baseUrl}/api/review/execute`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json", "sec-fetch-site": "same-origin" },
      body: JSON.stringify({ session_id: sessionId, actions: [{ type: "skip", targets: ["1"] }] })
    })
    expect(executed.status, await executed.clone().text()).toBe(200)
  })

  it("from our own page, typed in the address bar, from a non-browser or with a Bearer token it starts a session", async () => {
    for (const headers of [{ "sec-fetch-site": "same-origin", origin: service.baseUrl }, { "sec-fetch-site": "none" }, {}]) {
      const res = await review(headers)
      expect(res.status, JSON.stringify(headers)).toBe(200)
      expect(res.body.data.session_id).toMatch(/^[0-9a-f-]{36}$/)
    }
    const bearer = await user.api.request("GET", "/api/review", undefined, { "sec-fetch-site": "cross-site", origin: "https://elsewhere.example" })
    expect(bearer.status).toBe(200)
  })
})

describe("forwarded headers without a proxy configured (no proxy auth, SERVICE_PROXY_TRUSTED_IPS unset)", () => {
  let service: TestService
  let user: TestUser
  let cookie: string
  let host: string

  beforeAll(async () => {
    service = await startService({ proxyAuthHeader: Option.none(), proxyTrustedIpsSet: false })
    user = await service.user("csrf-noproxy")
    const minted = await service.client({ authorization: `Bearer ${user.token}` }).post("/api/auth/session")
    cookie = setCookieOf(minted.headers)!.split(";")[0]!
    host = new URL(service.baseUrl).host
  })
  afterAll(async () => {
    await service?.stop()
  })

  const post = (headers: Record<string, string>) =>
    fetch(`${service.baseUrl}/api/tasks`, {
      method: "POST",
      headers: { cookie, "content-type": "application/json", ...headers },
      body: JSON.stringify({ title: "from loopback" })
    }).then((res) => res.status)

  it("X-Forwarded-Host from loopback does not make a foreign Origin ours (403 with or without it)", async () => {
    expect(await post({ origin: "http://evil.example" })).toBe(403)
    expect(await post({ origin: "http://evil.example", "x-forwarded-host": "evil.example" })).toBe(403)
    expect(await post({ origin: "http://evil.example", "x-forwarded-host": `${host}, evil.example` })).toBe(403)
    expect(await post({ origin: service.baseUrl })).toBe(201)
  })

  it("X-Forwarded-Proto and -Host are ignored: no Secure cookie, calendar links on our own Host", async () => {
    const forwarded = { "x-forwarded-proto": "https", "x-forwarded-host": "evil.example" }
    const res = await service.client({ authorization: `Bearer ${user.token}`, ...forwarded }).post("/api/auth/session")
    expect(res.status).toBe(200)
    expect(setCookieOf(res.headers)).not.toMatch(/Secure/i)
    const key = await user.api.request("POST", "/api/calendar/key", undefined, forwarded)
    expect(key.status).toBe(201)
    expect(key.body.data.url).toMatch(new RegExp(`^http://${host.replace(/\./g, "\\.")}/api/calendar\\.ics\\?key=`))
  })
})

describe("forwarded headers with SERVICE_PROXY_TRUSTED_IPS set and proxy auth off", () => {
  let service: TestService

  beforeAll(async () => {
    const trusted = parseCidrList("127.0.0.1/32")
    if (trusted._tag !== "Right") throw new Error("bad CIDR")
    service = await startService({ proxyAuthHeader: Option.none(), proxyTrustedIps: trusted.right, proxyTrustedIpsSet: true })
  })
  afterAll(async () => {
    await service?.stop()
  })

  it("the proxy's X-Forwarded-Host and -Proto are believed", async () => {
    const user = await service.user("csrf-proxied")
    const minted = await service.client({ authorization: `Bearer ${user.token}`, "x-forwarded-proto": "https" }).post("/api/auth/session")
    const cookie = setCookieOf(minted.headers)!
    expect(cookie).toMatch(/;\s*Secure(;|$)/i)
    const res = await fetch(`${service.baseUrl}/api/tasks`, {
      method: "POST",
      headers: { cookie: cookie.split(";")[0]!, "content-type": "application/json", origin: "https://tasks.example", "x-forwarded-host": "tasks.example" },
      body: JSON.stringify({ title: "behind the proxy" })
    })
    expect(res.status).toBe(201)
  })
})

describe("X-Forwarded-Proto from an untrusted peer", () => {
  let service: TestService
  let startLines: Array<string>

  beforeAll(async () => {
    // Only a proxy at 10.9.9.9 is trusted; the test talks from 127.0.0.1.
    const trusted = parseCidrList("10.9.9.9/32")
    if (trusted._tag !== "Right") throw new Error("bad CIDR")
    ;({ service, lines: startLines } = await startLogged({ proxyTrustedIps: trusted.right, proxyAuthHeader: Option.some("Remote-User") }))
  })
  afterAll(async () => {
    await service?.stop()
  })

  it("a trust list of the proxy's own address logs no proxy warning", () => {
    expect(startLines.filter((line) => line.includes("SERVICE_PROXY_AUTH_HEADER"))).toEqual([])
  })

  it("is ignored: no Secure flag", async () => {
    const user = await service.user("csrf-untrusted")
    const res = await service.client({ authorization: `Bearer ${user.token}`, "x-forwarded-proto": "https" }).post("/api/auth/session")
    expect(res.status).toBe(200)
    expect(setCookieOf(res.headers)).not.toMatch(/Secure/i)
  })
})
