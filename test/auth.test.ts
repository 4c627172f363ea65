import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Either, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { parseCidrList } from "../src/kernel/AppConfig.js"
import { startService, type TestService, type TestUser } from "./support/service.js"

const UNAUTHORIZED = { error: expect.any(String), code: "UNAUTHORIZED", details: {} }

const sessionCookieOf = (headers: Headers): string | undefined => {
  const line = headers.getSetCookie().find((c) => c.startsWith("steady_session="))
  return line
}

const cookieValue = (setCookie: string) => setCookie.split(";")[0]!.slice("steady_session=".length)

describe("authentication", () => {
  let service: TestService
  let alice: TestUser
  let bob: TestUser

  beforeAll(async () => {
    service = await startService({ proxyAuthHeader: Option.some("Remote-User"), defaultTimezone: "Europe/Berlin" })
    alice = await service.user("alice")
    bob = await service.user("bob", "America/New_York")
  })
  afterAll(async () => {
    await service?.stop()
  })

  const sql = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
    service.run(Effect.flatMap(SqlClient.SqlClient, f))

  const mintSession = async (token: string) => {
    const res = await service.client({ authorization: `Bearer ${token}` }).post("/api/auth/session")
    expect(res.status).toBe(200)
    const setCookie = sessionCookieOf(res.headers)
    expect(setCookie).toBeDefined()
    return { res, setCookie: setCookie!, value: cookieValue(setCookie!) }
  }

  describe("Bearer token", () => {
    it("a valid token answers GET /api/auth/me with the caller", async () => {
      const res = await alice.api.get("/api/auth/me")
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ data: { id: alice.id, username: "alice", timezone: "UTC", week_start: "sunday" } })
      const other = await bob.api.get("/api/auth/me")
      expect(other.body.data).toEqual({ id: bob.id, username: "bob", timezone: "America/New_York", week_start: "sunday" })
    })

    it("no credential at all is a 401 envelope", async () => {
      const res = await service.anonymous.get("/api/auth/me")
      expect(res.status).toBe(401)
      expect(res.body).toEqual(UNAUTHORIZED)
      expect(Object.keys(res.body).sort()).toEqual(["code", "details", "error"])
      expect((await service.anonymous.get("/api/tasks")).status).toBe(401)
      expect((await service.anonymous.get("/api/projects")).status).toBe(401)
      expect((await service.anonymous.get("/api/tokens")).status).toBe(401)
      expect((await service.anonymous.get("/api/user/preferences")).status).toBe(401)
    })

    it("an unknown or malformed Bearer header is a 401", async () => {
      const wrong = alice.token.slice(0, -1) + (alice.token.endsWith("0") ? "1" : "0")
      for (const authorization of [
        `Bearer ${wrong}`,
        `Bearer ${"f".repeat(64)}`,
        "Bearer",
        "Bearer ",
        `Bearer ${alice.token} extra`,
        `Basic ${Buffer.from("alice:pw").toString("base64")}`,
        alice.token,
        `Token ${alice.token}`
      ]) {
        const res = await service.client({ authorization }).get("/api/auth/me")
        expect(res.status, authorization).toBe(401)
        expect(res.body).toEqual(UNAUTHORIZED)
      }
    })

    it("the scheme name is case-insensitive", async () => {
      const res = await service.client({ authorization: `bearer ${alice.token}` }).get("/api/auth/me")
      expect(res.status).toBe(200)
      expect(res.body.data.id).toBe(alice.id)
    })

    it("an invalid Bearer never falls through to a valid proxy header or session cookie", async () => {
      const session = await mintSession(alice.token)
      const headers = {
        authorization: "Bearer not-a-real-token",
        "remote-user": "alice",
        cookie: `steady_session=${session.value}`
      }
      const res = await service.client(headers).get("/api/auth/me")
      expect(res.status).toBe(401)
      expect(res.body).toEqual(UNAUTHORIZED)
      // The proxy header and the cookie each work on their own, so the 401 came from the Bearer.
      expect((await service.client({ "remote-user": "alice" }).get("/api/auth/me")).body.data.id).toBe(alice.id)
      expect((await service.client({ cookie: `steady_session=${session.value}` }).get("/api/auth/me")).body.data.id)
        .toBe(alice.id)
    })

    it("a valid Bearer decides alone, whatever the proxy header says", async () => {
      const res = await service.client({ authorization: `Bearer ${alice.token}`, "remote-user": "bob" }).get("/api/auth/me")
      expect(res.status).toBe(200)
      expect(res.body.data.id).toBe(alice.id)
    })
  })

  describe("reverse proxy header", () => {
    it("a trusted peer's header authenticates an existing user, case-insensitively", async () => {
      const res = await service.client({ "Remote-User": "ALICE" }).get("/api/auth/me")
      expect(res.status).toBe(200)
      expect(res.body.data).toEqual({ id: alice.id, username: "alice", timezone: "UTC", week_start: "sunday" })
    })

    it("an unknown user is created on first sight with an Inbox, the five default slots and the default zone", async () => {
      const before = await sql((s) => s<{ n: number }>`SELECT count(*)::int AS n FROM users WHERE lower(username) = 'dora'`)
      expect(before[0]!.n).toBe(0)

      const dora = service.client({ "Remote-User": "dora" })
      const me = await dora.get("/api/auth/me")
      expect(me.status).toBe(200)
      expect(me.body.data).toEqual({ id: expect.any(Number), username: "dora", timezone: "Europe/Berlin", week_start: "sunday" })
      const id = me.body.data.id as number
      expect(id).not.toBe(alice.id)
      expect(id).not.toBe(bob.id)

      const slots = await sql((s) =>
        s<{ label: string; start_time: string }>`
          SELECT label, start_time FROM time_slots WHERE user_id = ${id} ORDER BY start_time`
      )
      expect(slots.map((r) => ({ label: r.label, start_time: r.start_time }))).toEqual([
        { label: "Early morning", start_time: "07:00" },
        { label: "Morning", start_time: "09:00" },
        { label: "Midday", start_time: "12:00" },
        { label: "Afternoon", start_time: "16:00" },
        { label: "Evening", start_time: "20:30" }
      ])

      const projects = await dora.get("/api/projects")
      expect(projects.status).toBe(200)
      const own = projects.body.data.projects.filter((p: any) => p.owner_id === id)
      expect(own).toHaveLength(1)
      expect(own[0]).toMatchObject({ name: "Inbox", owner_id: id, shared: false, active_count: 0, overdue_count: 0 })

      // Seen again: the same user, nothing created twice.
      const again = await service.client({ "Remote-User": "Dora" }).get("/api/auth/me")
      expect(again.body.data.id).toBe(id)
      const counts = await sql((s) =>
        s<{ users: number; inboxes: number; slots: number }>`
          SELECT (SELECT count(*) FROM users WHERE lower(username) = 'dora')::int AS users,
                 (SELECT count(*) FROM projects WHERE owner_id = ${id})::int AS inboxes,
                 (SELECT count(*) FROM time_slots WHERE user_id = ${id})::int AS slots`
      )
      expect(counts[0]).toEqual({ users: 1, inboxes: 1, slots: 5 })

      // A task created through the header lands in that user's Inbox.
      const task = await dora.post("/api/tasks", { title: "From the proxy", priority: 1 })
      expect(task.status).toBe(201)
      expect(task.body.data.user_id).toBe(id)
      expect(task.body.data.project_id).toBe(own[0].id)
    })

    it("an empty header value is no credential", async () => {
      const res = await service.client({ "Remote-User": "   " }).get("/api/auth/me")
      expect(res.status).toBe(401)
      expect(res.body).toEqual(UNAUTHORIZED)
    })

    it("the proxy header wins over a session cookie", async () => {
      const session = await mintSession(alice.token)
      const res = await service.client({ "Remote-User": "bob", cookie: `steady_session=${session.value}` }).get("/api/auth/me")
      expect(res.status).toBe(200)
      expect(res.body.data.id).toBe(bob.id)
    })

    it("another header name is not the proxy header", async () => {
      const res = await service.client({ "X-Remote-User": "alice" }).get("/api/auth/me")
      expect(res.status).toBe(401)
    })
  })

  describe("session cookie", () => {
    it("POST /api/auth/session with a Bearer sets an HttpOnly, SameSite=Lax cookie that then authenticates alone", async () => {
      const { res, setCookie, value } = await mintSession(alice.token)
      expect(value).toMatch(/^[0-9a-f]{64}$/)
      expect(setCookie).toMatch(/;\s*HttpOnly/i)
      expect(setCookie).toMatch(/;\s*SameSite=Lax/i)
      expect(setCookie).toMatch(/;\s*Path=\//i)
      // A 30-day lifetime, independent of the (possibly shifted) service clock.
      expect(setCookie).toMatch(/;\s*Max-Age=2592000(;|$)/i)
      expect(setCookie).not.toMatch(/Expires=/i)
      expect(res.body.data.user).toEqual({ id: alice.id, username: "alice", timezone: "UTC", week_start: "sunday" })
      expect(res.body.data.expires_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      // The cookie secret is not the token and is stored only as a digest.
      expect(value).not.toBe(alice.token)
      const stored = await sql((s) => s<{ row: string }>`SELECT row_to_json(s)::text AS row FROM auth_sessions s`)
      for (const row of stored) expect(row.row).not.toContain(value)

      const me = await service.client({ cookie: `steady_session=${value}` }).get("/api/auth/me")
      expect(me.status).toBe(200)
      expect(me.body.data).toEqual({ id: alice.id, username: "alice", timezone: "UTC", week_start: "sunday" })
      const tasks = await service.client({ cookie: `other=1; steady_session=${value}` }).get("/api/tasks")
      expect(tasks.status).toBe(200)
    })

    it("POST /api/auth/session without a valid Bearer is a 401 and sets no cookie", async () => {
      for (const headers of [{}, { authorization: "Bearer nope" }, { "remote-user": "alice" }]) {
        const res = await service.client(headers).post("/api/auth/session")
        expect(res.status).toBe(401)
        expect(res.body).toEqual(UNAUTHORIZED)
        expect(sessionCookieOf(res.headers)).toBeUndefined()
      }
    })

    it("an unknown cookie value is a 401", async () => {
      const res = await service.client({ cookie: `steady_session=${"a".repeat(64)}` }).get("/api/auth/me")
      expect(res.status).toBe(401)
      expect(res.body).toEqual(UNAUTHORIZED)
    })

    it("DELETE /api/auth/session clears the cookie and the old cookie stops working", async () => {
      const { value } = await mintSession(bob.token)
      const cookieClient = service.client({ cookie: `steady_session=${value}` })
      expect((await cookieClient.get("/api/auth/me")).body.data.id).toBe(bob.id)

      const out = await cookieClient.delete("/api/auth/session")
      expect(out.status).toBe(200)
      const cleared = sessionCookieOf(out.headers)
      expect(cleared).toBeDefined()
      expect(cookieValue(cleared!)).toBe("")
      expect(cleared).toMatch(/Max-Age=0|Expires=Thu, 01 Jan 1970/i)

      const after = await cookieClient.get("/api/auth/me")
      expect(after.status).toBe(401)
      expect(after.body).toEqual(UNAUTHORIZED)
      // The token itself still works.
      expect((await bob.api.get("/api/auth/me")).status).toBe(200)
    })

    it("deleting the token that minted a session ends that session", async () => {
      const created = await alice.api.post("/api/tokens", { name: "browser" })
      expect(created.status).toBe(201)
      const { value } = await mintSession(created.body.data.token)
      const other = await mintSession(alice.token)
      const cookieClient = service.client({ cookie: `steady_session=${value}` })
      expect((await cookieClient.get("/api/auth/me")).status).toBe(200)

      const deleted = await alice.api.delete(`/api/tokens/${created.body.data.id}`)
      expect(deleted.status).toBe(200)
      expect(deleted.body).toEqual({ data: { deleted: true } })

      expect((await cookieClient.get("/api/auth/me")).status).toBe(401)
      // A session minted from another token lives on.
      expect((await service.client({ cookie: `steady_session=${other.value}` }).get("/api/auth/me")).status).toBe(200)
    })
  })

  describe("public endpoints", () => {
    it("GET /api/health and GET /api/openapi need no authentication", async () => {
      const health = await service.anonymous.get("/api/health")
      expect(health.status).toBe(200)
      expect(health.body).toEqual({ status: "ok" })
      const openapi = await service.anonymous.get("/api/openapi")
      expect(openapi.status).toBe(200)
      expect(openapi.headers.get("content-type")).toContain("text/yaml")
      expect(openapi.text).toMatch(/^openapi: 3\.1\.0/m)
    })
  })
})

describe("reverse proxy header from an untrusted address", () => {
  let service: TestService
  let erin: TestUser

  beforeAll(async () => {
    const trusted = parseCidrList("10.0.0.0/8, 192.168.0.0/16")
    if (Either.isLeft(trusted)) throw new Error(trusted.left)
    service = await startService({ proxyAuthHeader: Option.some("Remote-User"), proxyTrustedIps: trusted.right })
    erin = await service.user("erin")
  })
  afterAll(async () => {
    await service?.stop()
  })

  it("ignores the header from 127.0.0.1 when 127.0.0.1 is not trusted", async () => {
    const res = await service.client({ "Remote-User": "erin" }).get("/api/auth/me")
    expect(res.status).toBe(401)
    expect(res.body).toEqual(UNAUTHORIZED)
  })

  it("creates no user for an ignored header", async () => {
    const res = await service.client({ "Remote-User": "mallory" }).get("/api/auth/me")
    expect(res.status).toBe(401)
    const rows = await service.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM users WHERE lower(username) = 'mallory'`)
    )
    expect(rows[0]!.n).toBe(0)
  })

  it("still accepts a Bearer token alongside the ignored header", async () => {
    const res = await service.client({ "Remote-User": "mallory", authorization: `Bearer ${erin.token}` }).get("/api/auth/me")
    expect(res.status).toBe(200)
    expect(res.body.data.username).toBe("erin")
  })
})
