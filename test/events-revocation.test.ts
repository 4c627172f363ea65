import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { databaseKind, freshDatabase, type TestDatabase } from "./support/database.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { openEvents, type SseStream } from "./support/sse.js"
import { createTask } from "./support/tasks.js"

/**
 * An open `GET /api/events` stream lives no longer than the credential that opened it: once
 * its token is deleted or its session signed out, it gets nothing more and ends within a
 * few seconds. And streams are bounded: 10 per user, `SERVICE_MAX_EVENT_STREAMS` per
 * instance, 429 with Retry-After past either.
 */
const NOW = new Date("2026-03-10T15:00:00Z")
/** How long a revoked credential's stream may stay open (a revocation heard ends it within ~1 s). */
const ENDS_WITHIN_MS = 5_000

const taskIdsOf = (stream: SseStream) =>
  stream.events.map((e) => JSON.parse(e.data) as { kind: string; id: number }).filter((c) => c.kind === "task").map((c) => c.id)

/** Resolves with how long the server took to end the stream; rejects past `ms`. */
const endsWithin = async (stream: SseStream, ms: number) => {
  const started = performance.now()
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([
      stream.ended,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the stream was still open after ${ms} ms`)), ms)
      })
    ])
  } finally {
    clearTimeout(timer)
  }
  return performance.now() - started
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const sessionCookieOf = (headers: Headers): string => {
  const line = headers.getSetCookie().find((c) => c.startsWith("steady_session="))
  if (line === undefined) throw new Error("no session cookie was set")
  return line.split(";")[0]!
}

describe("event streams and their credentials", () => {
  let service: TestService
  const streams: Array<SseStream> = []

  const open = async (on: TestService, headers: Record<string, string>) => {
    const stream = await openEvents(`${on.baseUrl}/api/events`, headers)
    streams.push(stream)
    if (stream.status === 200) await stream.waitFor(() => stream.comments.includes("stream open"))
    return stream
  }

  /** A second token of `user`, minted through the API. */
  const secondToken = async (user: TestUser) => {
    const minted = await user.api.post("/api/tokens", { name: "second device" })
    expect(minted.status).toBe(201)
    return { id: minted.body.data.id as number, token: minted.body.data.token as string }
  }

  const mintSession = async (on: TestService, token: string) => {
    const res = await on.client({ authorization: `Bearer ${token}` }).post("/api/auth/session")
    expect(res.status).toBe(200)
    return sessionCookieOf(res.headers)
  }

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
  })
  afterAll(async () => {
    for (const s of streams) s.close()
    await service.stop()
  })

  it("deleting the token of an open stream ends it within seconds; a task made afterwards by another token never reaches it", async () => {
    const user = await service.user("revoke-token")
    const second = await secondToken(user)
    const stream = await open(service, { authorization: `Bearer ${second.token}` })
    expect(stream.status).toBe(200)
    const before = await createTask(user.api, { title: "Before the revocation" })
    await stream.waitFor(() => taskIdsOf(stream).includes(before.id))

    expect((await user.api.delete(`/api/tokens/${second.id}`)).status).toBe(200)
    expect((await service.client({ authorization: `Bearer ${second.token}` }).get("/api/tasks")).status).toBe(401)
    // Right away, through the user's other token: the stream must not carry it.
    await createTask(user.api, { title: "After the revocation" })
    await endsWithin(stream, ENDS_WITHIN_MS)
    expect(taskIdsOf(stream)).toEqual([before.id])
    expect(stream.comments).toContain("credentials revoked")
    // The user's other token still streams.
    const other = await open(service, { authorization: `Bearer ${user.token}` })
    expect(other.status).toBe(200)
    other.close()
  }, 30_000)

  it("signing out a cookie session ends its stream within seconds; a task made afterwards never reaches it", async () => {
    const user = await service.user("revoke-session")
    const cookie = await mintSession(service, user.token)
    const stream = await open(service, { cookie })
    expect(stream.status).toBe(200)
    const before = await createTask(user.api, { title: "Before signing out" })
    await stream.waitFor(() => taskIdsOf(stream).includes(before.id))

    const out = await service.client({ cookie }).delete("/api/auth/session")
    expect(out.status).toBe(200)
    expect((await service.client({ cookie }).get("/api/tasks")).status).toBe(401)
    await createTask(user.api, { title: "After signing out" })
    await endsWithin(stream, ENDS_WITHIN_MS)
    expect(taskIdsOf(stream)).toEqual([before.id])
  }, 30_000)

  it("a session removed where no notice tells (by hand in SQL) still ends its stream within seconds", async () => {
    const user = await service.user("revoke-by-hand")
    const cookie = await mintSession(service, user.token)
    const stream = await open(service, { cookie })
    expect(stream.status).toBe(200)
    await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DELETE FROM auth_sessions WHERE user_id = ${user.id}`))
    // The periodic check (every 5 s) finds it.
    await endsWithin(stream, 5_000 + ENDS_WITHIN_MS)
  }, 30_000)

  it("the 11th stream of one user is a 429 with Retry-After while another user still opens one; closing one frees its place", async () => {
    const heavy = await service.user("many-streams")
    const light = await service.user("one-stream")
    const mine: Array<SseStream> = []
    for (let i = 0; i < 10; i++) {
      const stream = await open(service, { authorization: `Bearer ${heavy.token}` })
      expect(stream.status).toBe(200)
      mine.push(stream)
    }
    const refused = await open(service, { authorization: `Bearer ${heavy.token}` })
    expect(refused.status).toBe(429)
    await refused.ended
    expect(JSON.parse(refused.body)).toEqual({ error: expect.stringContaining("10"), code: "TOO_MANY_REQUESTS", details: { retry_after: 10 } })
    const raw = await fetch(`${service.baseUrl}/api/events`, { headers: { authorization: `Bearer ${heavy.token}`, accept: "text/event-stream" } })
    expect(raw.status).toBe(429)
    expect(raw.headers.get("retry-after")).toBe("10")
    await raw.text()

    const other = await open(service, { authorization: `Bearer ${light.token}` })
    expect(other.status).toBe(200)
    other.close()

    // A place frees once the client hangs up (the server notices the closed socket).
    mine.pop()!.close()
    let again = await open(service, { authorization: `Bearer ${heavy.token}` })
    for (let tries = 0; again.status === 429 && tries < 50; tries++) {
      await sleep(100)
      again = await open(service, { authorization: `Bearer ${heavy.token}` })
    }
    expect(again.status).toBe(200)
    // And the open streams still work.
    const task = await createTask(heavy.api, { title: "Seen by every open stream" })
    await again.waitFor(() => taskIdsOf(again).includes(task.id))
    await mine[0]!.waitFor(() => taskIdsOf(mine[0]!).includes(task.id))
    for (const s of [...mine, again]) s.close()
  }, 60_000)

  it("past the instance's limit (SERVICE_MAX_EVENT_STREAMS) any user's stream is a 429; a stream ending frees its place", async () => {
    const small = await startService({ serviceNow: Option.some(NOW), maxEventStreams: 3 })
    try {
      const users = await Promise.all(["cap-a", "cap-b", "cap-c", "cap-d"].map((name) => small.user(name)))
      const held: Array<SseStream> = []
      for (const user of users.slice(0, 3)) {
        const stream = await open(small, { authorization: `Bearer ${user.token}` })
        expect(stream.status).toBe(200)
        held.push(stream)
      }
      const refused = await open(small, { authorization: `Bearer ${users[3]!.token}` })
      expect(refused.status).toBe(429)
      await refused.ended
      expect(JSON.parse(refused.body)).toMatchObject({ code: "TOO_MANY_REQUESTS", details: { retry_after: 10 } })
      // A stream the server ends (its token revoked) frees its place as well.
      const second = await secondToken(users[0]!)
      const revocable = held.shift()!
      revocable.close()
      let fourth = await open(small, { authorization: `Bearer ${second.token}` })
      for (let tries = 0; fourth.status === 429 && tries < 50; tries++) {
        await sleep(100)
        fourth = await open(small, { authorization: `Bearer ${second.token}` })
      }
      expect(fourth.status).toBe(200)
      expect((await users[0]!.api.delete(`/api/tokens/${second.id}`)).status).toBe(200)
      await endsWithin(fourth, ENDS_WITHIN_MS)
      const now = await open(small, { authorization: `Bearer ${users[3]!.token}` })
      expect(now.status).toBe(200)
      for (const s of [...held, now]) s.close()
    } finally {
      await small.stop()
    }
  }, 60_000)
})

describe.skipIf(databaseKind() !== "postgres")("event streams and credentials revoked through another instance", () => {
  let db: TestDatabase
  let one: TestService
  let two: TestService
  const streams: Array<SseStream> = []

  beforeAll(async () => {
    db = await freshDatabase()
    one = await startService({}, db)
    two = await startService({}, db)
  })
  afterAll(async () => {
    for (const s of streams) s.close()
    await two.stop()
    await one.stop()
    await db.drop()
  })

  const openOn = async (on: TestService, headers: Record<string, string>) => {
    const stream = await openEvents(`${on.baseUrl}/api/events`, headers)
    streams.push(stream)
    expect(stream.status).toBe(200)
    await stream.waitFor(() => stream.comments.includes("stream open"))
    return stream
  }

  it("a token deleted through one instance ends its stream on the other before a later task reaches it", async () => {
    const user = await one.user("across-token")
    const minted = await user.api.post("/api/tokens", { name: "tablet" })
    expect(minted.status).toBe(201)
    const stream = await openOn(two, { authorization: `Bearer ${minted.body.data.token}` })
    const before = await createTask(user.api, { title: "Before" })
    await stream.waitFor(() => taskIdsOf(stream).includes(before.id))
    expect((await user.api.delete(`/api/tokens/${minted.body.data.id}`)).status).toBe(200)
    await createTask(user.api, { title: "After" })
    await endsWithin(stream, ENDS_WITHIN_MS)
    expect(taskIdsOf(stream)).toEqual([before.id])
  }, 30_000)

  it("a session signed out through one instance ends its stream on the other before a later task reaches it", async () => {
    const user = await one.user("across-session")
    const res = await one.client({ authorization: `Bearer ${user.token}` }).post("/api/auth/session")
    expect(res.status).toBe(200)
    const cookie = sessionCookieOf(res.headers)
    const stream = await openOn(two, { cookie })
    const before = await createTask(user.api, { title: "Before" })
    await stream.waitFor(() => taskIdsOf(stream).includes(before.id))
    expect((await one.client({ cookie }).delete("/api/auth/session")).status).toBe(200)
    await createTask(user.api, { title: "After" })
    await endsWithin(stream, ENDS_WITHIN_MS)
    expect(taskIdsOf(stream)).toEqual([before.id])
  }, 30_000)
})
