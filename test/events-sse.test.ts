import * as Http from "node:http"
import Pg from "pg"
import { Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { drainServers } from "../src/http/GracefulStop.js"
import { rollForwardMissedReminders } from "../src/quotas/ReminderRollForward.js"
import { databaseKind, freshDatabase, type TestDatabase } from "./support/database.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { openEvents, type SseStream } from "./support/sse.js"
import { createTask } from "./support/tasks.js"

/**
 * GET /api/events streams the change feed as it commits, `id:` = cursor,
 * resumes from Last-Event-ID with nothing lost or repeated, keeps private changes private,
 * and works across instances on one PostgreSQL (NOTIFY wakes, the table supplies the data).
 */
const NOW = new Date("2026-03-10T15:00:00Z")

interface Change {
  readonly cursor: string
  readonly kind: string
  readonly id: number
  readonly op: string
  readonly data: Record<string, any> | null
}

const changesOf = (stream: SseStream): Array<Change> => stream.events.map((e) => JSON.parse(e.data) as Change)

describe("change stream: GET /api/events", () => {
  let service: TestService
  let alice: TestUser
  let bob: TestUser
  const streams: Array<SseStream> = []

  const open = async (user: TestUser, headers: Record<string, string> = {}, query = "", on: TestService = service) => {
    const stream = await openEvents(`${on.baseUrl}/api/events${query}`, { authorization: `Bearer ${user.token}`, ...headers })
    streams.push(stream)
    if (stream.status === 200) await stream.waitFor(() => stream.comments.includes("stream open"))
    return stream
  }
  /** The position now, from the polling endpoint. */
  const head = async (user: TestUser) => {
    let cursor: string | undefined
    for (;;) {
      const res = await user.api.get(`/api/changes?limit=1000${cursor === undefined ? "" : `&since=${cursor}`}`)
      cursor = res.body.data.next_cursor
      if (!res.body.data.has_more) return cursor!
    }
  }

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
    alice = await service.user("sse-alice")
    bob = await service.user("sse-bob")
  })
  afterAll(async () => {
    for (const s of streams) s.close()
    await service.stop()
  })

  it("a client that does not ask for text/event-stream gets what commits within a few seconds, then a finished answer", async () => {
    const since = await head(alice)
    const task = await createTask(alice.api, { title: "seen by a plain GET" })
    const startedAt = performance.now()
    const res = await fetch(`${service.baseUrl}/api/events?since=${since}`, {
      headers: { authorization: `Bearer ${alice.token}`, accept: "*/*" }
    })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("text/event-stream")
    const body = await res.text()
    const took = performance.now() - startedAt
    expect(took).toBeGreaterThanOrEqual(2_500)
    expect(took).toBeLessThan(15_000)
    const data = body.split("\n").filter((line) => line.startsWith("data: ")).map((line) => JSON.parse(line.slice(6)))
    expect(data.map((c) => [c.kind, c.id, c.op])).toEqual([["task", task.id, "upsert"]])
  })

  it("streams changes as they commit, id = cursor, data as GET renders it", async () => {
    const stream = await open(alice)
    expect(stream.status).toBe(200)
    expect(stream.contentType).toBe("text/event-stream")
    const a = await createTask(alice.api, { title: "First" })
    const b = await createTask(alice.api, { title: "Second" })
    expect((await alice.api.post(`/api/tasks/${a.id}/done`)).status).toBe(200)
    await stream.waitFor((events) => events.length >= 3)
    const changes = changesOf(stream)
    expect(changes.map((c) => [c.kind, c.id, c.op])).toEqual([["task", a.id, "upsert"], ["task", b.id, "upsert"], ["task", a.id, "upsert"]])
    expect(stream.events.map((e) => e.id)).toEqual(changes.map((c) => c.cursor))
    expect(changes[1]!.data).toEqual((await alice.api.get(`/api/tasks/${b.id}`)).body.data)
    // The polling endpoint reports the same changes with the same cursors.
    stream.close()
  })

  it("a client that stops reading while megabytes of changes commit, then reads on, gets each once and in order", async () => {
    const user = await service.user("sse-slow-reader")
    const ids: Array<number> = []
    for (let i = 0; i < 200; i += 20) {
      ids.push(...(await Promise.all(Array.from({ length: 20 }, (_, j) => createTask(user.api, { title: `slow ${i + j}` })))).map((t) => t.id))
    }
    const since = await head(user)
    const res = await new Promise<Http.IncomingMessage>((resolve, reject) =>
      Http.get(`${service.baseUrl}/api/events?since=${since}`, {
        headers: { authorization: `Bearer ${user.token}`, accept: "text/event-stream" }
      }, resolve).on("error", reject)
    )
    expect(res.statusCode).toBe(200)
    // Nothing is read while the changes commit: the service's buffer for this client fills
    // (256 KiB, past the socket's own) and the stream falls back to reading the table.
    res.pause()
    const EDITS = 40
    for (let n = 0; n < EDITS; n++) {
      expect((await user.api.post("/api/tasks/bulk/edit", { ids, changes: { priority: 1 + (n % 4) } })).status).toBe(200)
    }
    const cursors: Array<string> = []
    let text = ""
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${cursors.length} events`)), 60_000)
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        text += chunk
        let cut: number
        while ((cut = text.indexOf("\n\n")) >= 0) {
          const id = /^id: (.+)$/m.exec(text.slice(0, cut))?.[1]
          if (id !== undefined) cursors.push(id)
          text = text.slice(cut + 2)
        }
        if (cursors.length >= EDITS * ids.length) {
          clearTimeout(timer)
          resolve()
        }
      })
      res.resume()
    })
    res.destroy()
    expect(cursors.length).toBe(EDITS * ids.length)
    expect(new Set(cursors).size).toBe(cursors.length)
    // Cursors sort as they were issued: the stream never went back.
    const feed = await user.api.get(`/api/changes?since=${since}&limit=1000`)
    expect(feed.body.data.changes.map((c: { cursor: string }) => c.cursor)).toEqual(cursors.slice(0, 1000))
  }, 120_000)

  it("a client that disconnects mid-stream and resumes with Last-Event-ID sees every change exactly once", async () => {
    const start = await head(alice)
    const first = await open(alice, { "last-event-id": start })
    const made: Array<number> = []
    // Writes go on while the client reads, drops the connection and comes back.
    const writer = (async () => {
      for (let i = 0; i < 24; i++) made.push((await createTask(alice.api, { title: `Resume ${i}` })).id)
    })()
    await first.waitFor((events) => events.length >= 5, 30_000)
    first.close()
    const lastId = first.events.at(-1)!.id!
    const seenBefore = changesOf(first)
    await writer
    const second = await open(alice, { "last-event-id": lastId })
    await second.waitFor((events) => seenBefore.length + events.length >= 24, 30_000)
    // A moment more: nothing beyond the 24 may arrive (no repeats).
    await new Promise((resolve) => setTimeout(resolve, 300))
    const all = [...seenBefore, ...changesOf(second)]
    expect(all.map((c) => c.id)).toEqual(made)
    expect(new Set(all.map((c) => c.cursor)).size).toBe(24)
    // The same changes, in the same order, as the polling endpoint lists after `start`.
    const polled = (await alice.api.get(`/api/changes?since=${start}&limit=1000`)).body.data.changes as Array<Change>
    expect(polled.map((c) => c.cursor)).toEqual(all.map((c) => c.cursor))
    second.close()
  })

  it("a keyed write streams once, after its request-wide transaction commits; its replay streams nothing", async () => {
    const stream = await open(alice)
    const headers = { "idempotency-key": "sse-keyed-create-1" }
    const first = await alice.api.request("POST", "/api/tasks", { title: "Keyed" }, headers)
    expect(first.status).toBe(201)
    const replay = await alice.api.request("POST", "/api/tasks", { title: "Keyed" }, headers)
    expect(replay.status).toBe(201)
    expect(replay.body.data.id).toBe(first.body.data.id)
    const after = await createTask(alice.api, { title: "After the replay" })
    await stream.waitFor((events) => events.length >= 2)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(changesOf(stream).map((c) => c.id)).toEqual([first.body.data.id, after.id])
    stream.close()
  })

  it("since= works like Last-Event-ID, and the header wins over it", async () => {
    const start = await head(alice)
    const t = await createTask(alice.api, { title: "After start" })
    const bySince = await open(alice, {}, `?since=${start}`)
    await bySince.waitFor((events) => events.length >= 1)
    expect(changesOf(bySince).map((c) => c.id)).toEqual([t.id])
    const later = await head(alice)
    const byHeader = await open(alice, { "last-event-id": later }, `?since=${start}`)
    const u = await createTask(alice.api, { title: "After later" })
    await byHeader.waitFor((events) => events.length >= 1)
    expect(changesOf(byHeader).map((c) => c.id)).toEqual([u.id])
    bySince.close()
    byHeader.close()
  })

  it("keeps another user's private changes private and streams their shared-project changes", async () => {
    const stream = await open(alice)
    await createTask(bob.api, { title: "Bob's diary" })
    const shared = (await bob.api.post("/api/projects", { name: "Team", shared: true })).body.data
    const task = await createTask(bob.api, { title: "Team task", project_id: shared.id })
    await stream.waitFor((events) => events.length >= 2)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(changesOf(stream).map((c) => [c.kind, c.id, c.op])).toEqual([["project", shared.id, "upsert"], ["task", task.id, "upsert"]])
    expect(stream.events.map((e) => e.data).join("")).not.toContain("diary")
    stream.close()
  })

  it("streams background work: a missed reminder rolled forward", async () => {
    const user = await service.user("sse-carol")
    const reminder = await createTask(user.api, { title: "Stretch", is_reminder: true, due_at: "2026-03-07T14:00:00Z", rrule: "FREQ=DAILY" })
    const stream = await open(user)
    expect(await service.run(rollForwardMissedReminders)).toBeGreaterThanOrEqual(1)
    await stream.waitFor((events) => events.length >= 1)
    const [change] = changesOf(stream)
    expect([change!.kind, change!.id, change!.op]).toEqual(["task", reminder.id, "upsert"])
    expect(change!.data!.due_at).toBe("2026-03-11T14:00:00.000Z")
    stream.close()
  })

  it("refuses a bad cursor with 400 and no credentials with 401", async () => {
    const bad = await open(alice, { "last-event-id": "not-a-cursor" })
    await bad.ended
    expect(bad.status).toBe(400)
    expect(JSON.parse(bad.body)).toMatchObject({ code: "VALIDATION_ERROR", details: { "Last-Event-ID": expect.any(String) } })
    const anonymous = await openEvents(`${service.baseUrl}/api/events`, {})
    await anonymous.ended
    expect(anonymous.status).toBe(401)
  })

  it("sends a heartbeat comment on an idle stream within 15 s", async () => {
    const stream = await open(alice)
    await stream.waitFor(() => stream.comments.includes("heartbeat"), 20_000)
    expect(stream.events).toEqual([])
    stream.close()
  }, 30_000)

  it("ends open streams when the service stops", async () => {
    const own = await startService({ serviceNow: Option.some(NOW) })
    const user = await own.user("sse-stop")
    const stream = await open(user, {}, "", own)
    const stopped = own.stop()
    await stream.ended
    await stopped
    expect(stream.comments).toContain("stream open")
  }, 30_000)
})

describe.skipIf(databaseKind() !== "postgres")("change stream across two instances on one PostgreSQL", () => {
  let db: TestDatabase
  let one: TestService
  let two: TestService

  beforeAll(async () => {
    db = await freshDatabase()
    one = await startService({}, db)
    two = await startService({}, db)
  })
  afterAll(async () => {
    await two.stop()
    await one.stop()
    await db.drop()
  })

  it("a change written through one instance is streamed by the other, once", async () => {
    const writer = await one.user("two-instances")
    const reader = await two.user("two-instances")
    const stream = await openEvents(`${two.baseUrl}/api/events`, { authorization: `Bearer ${reader.token}` })
    await stream.waitFor(() => stream.comments.includes("stream open"))
    const made: Array<number> = []
    for (let i = 0; i < 5; i++) made.push((await createTask(writer.api, { title: `Across ${i}` })).id)
    await stream.waitFor((events) => events.length >= 5)
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(changesOf(stream).map((c) => c.id)).toEqual(made)
    stream.close()
  })

  it("writes wake the other instances by NOTIFY after their commits, and a NOTIFY heard is not passed on", async () => {
    const listener = new Pg.Client({ connectionString: db.url })
    await listener.connect()
    const heard: Array<number> = []
    listener.on("notification", (message) => {
      if (message.channel === "steady_changes") heard.push(performance.now())
    })
    await listener.query("LISTEN steady_changes")
    try {
      const writer = await one.user("notify-once")
      await Promise.all(Array.from({ length: 20 }, (_, i) => createTask(writer.api, { title: `Burst ${i}` })))
      const wrote = performance.now()
      await new Promise((resolve) => setTimeout(resolve, 300))
      // A burst of commits shares NOTIFYs (at most one per 10 ms), and the first comes quickly.
      expect(heard.length).toBeGreaterThanOrEqual(1)
      expect(heard.length).toBeLessThan(20)
      // Both instances LISTEN: were a NOTIFY heard passed on, they would echo it for ever.
      const quiet = heard.length
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(heard.length).toBe(quiet)
      expect(heard.every((at) => at < wrote + 300)).toBe(true)
    } finally {
      await listener.end()
    }
  })
})

// Last in the file: draining is once per process (module state), and every later stream would end at once.
describe("change stream on a stop signal", () => {
  it("ends as soon as the server starts draining, not at the end of the grace period", async () => {
    const own = await startService({ serviceNow: Option.some(NOW) })
    try {
      const user = await own.user("sse-drain")
      const stream = await openEvents(`${own.baseUrl}/api/events`, { authorization: `Bearer ${user.token}` })
      await stream.waitFor(() => stream.comments.includes("stream open"))
      const started = performance.now()
      await Promise.all([drainServers(10_000), stream.ended])
      // The drain waits for requests in flight up to its 10 s grace; an open stream is not one for long.
      expect(performance.now() - started).toBeLessThan(5_000)
    } finally {
      await own.stop()
    }
  }, 60_000)
})
