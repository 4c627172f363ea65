import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import ICAL from "ical.js"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Yaml from "yaml"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask } from "./support/tasks.js"

const NY = "America/New_York"

interface Feed {
  readonly status: number
  readonly contentType: string | null
  readonly text: string
  readonly todos: Array<ICAL.Component>
  readonly calendar: ICAL.Component
}

/** Parses a feed the way a calendar app would: ical.js, with the feed's own VTIMEZONEs registered. */
const parseFeed = (text: string) => {
  const calendar = new ICAL.Component(ICAL.parse(text))
  for (const zone of calendar.getAllSubcomponents("vtimezone")) ICAL.TimezoneService.register(new ICAL.Timezone(zone))
  return { calendar, todos: calendar.getAllSubcomponents("vtodo") }
}

const octets = (s: string) => new TextEncoder().encode(s).length

describe("calendar feed (GET /api/calendar.ics)", () => {
  let service: TestService
  let alice: TestUser
  let bob: TestUser

  beforeAll(async () => {
    ICAL.TimezoneService.reset()
    service = await startService()
    alice = await service.user("alice", NY)
    bob = await service.user("bob")
  })
  afterAll(async () => {
    await service?.stop()
  })

  const newKey = async (user: TestUser) => {
    const res = await user.api.post("/api/calendar/key")
    expect(res.status).toBe(201)
    return res.body.data as { key: string; url: string; webcal_url: string; created_at: string }
  }

  const fetchFeed = async (key: string): Promise<Feed> => {
    const res = await service.anonymous.get(`/api/calendar.ics?key=${encodeURIComponent(key)}`)
    if (res.status !== 200) return { status: res.status, contentType: res.headers.get("content-type"), text: res.text, todos: [], calendar: undefined as never }
    return { status: 200, contentType: res.headers.get("content-type"), text: res.text, ...parseFeed(res.text) }
  }

  const byId = (feed: Feed) =>
    new Map(feed.todos.map((todo) => [Number(/\/api\/tasks\/(\d+)$/.exec(String(todo.getFirstPropertyValue("url")))![1]), todo]))

  it("POST /api/calendar/key shows the key once with the feed URL; only its hash is stored", async () => {
    const made = await newKey(alice)
    expect(made.key).toMatch(/^[0-9a-f]{64}$/)
    expect(made.url).toBe(`${service.baseUrl}/api/calendar.ics?key=${made.key}`)
    expect(made.webcal_url).toBe(made.url.replace("http:", "webcal:"))
    expect(made.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
    const stored = await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ key_hash: string }>`SELECT key_hash FROM calendar_keys WHERE user_id = ${alice.id}`))
    expect(stored).toHaveLength(1)
    expect(stored[0]!.key_hash).not.toContain(made.key)
    expect(stored[0]!.key_hash).toMatch(/^[0-9a-f]{64}$/)

    const res = await fetch(made.url)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("text/calendar; charset=utf-8")
    expect(await res.text()).toMatch(/^BEGIN:VCALENDAR\r\nVERSION:2.0\r\n/)
  })

  it("round-trips titles with commas, semicolons, newlines, emoji, CJK and long text, folded at 75 octets", async () => {
    const titles = [
      "Milk, eggs; bread \\ butter",
      "Line one\nline two\nline three",
      "Call 田中さん about the 会議 🎉🚀 tomorrow",
      `Long ${"ünïcødé 面包 🍞 ".repeat(12)}end`,
      "x".repeat(300)
    ]
    const notes = "Notes, with; everything\nand a second line 👍"
    const created = []
    for (const title of titles) {
      created.push(await createTask(alice.api, { title, notes, due_at: "2026-12-10T15:00:00.000Z", priority: 3, labels: ["home, garden", "多言語"] }))
    }
    const { key } = await newKey(alice)
    const feed = await fetchFeed(key)
    expect(feed.status).toBe(200)
    // CRLF only, every physical line at most 75 octets.
    expect(feed.text.endsWith("END:VCALENDAR\r\n")).toBe(true)
    expect(feed.text.replace(/\r\n/g, "")).not.toMatch(/[\r\n]/)
    for (const line of feed.text.split("\r\n")) expect(octets(line)).toBeLessThanOrEqual(75)
    expect(feed.text).toContain("\r\n ") // something did fold
    const todos = byId(feed)
    for (const task of created) {
      const todo = todos.get(task.id)!
      expect(todo).toBeDefined()
      expect(todo.getFirstPropertyValue("summary")).toBe(task.title)
      expect(todo.getFirstPropertyValue("description")).toBe(notes)
      expect(todo.getFirstProperty("categories")!.getValues()).toEqual(["home, garden", "多言語"])
      expect(todo.getFirstPropertyValue("priority")).toBe(3)
      expect(todo.getFirstPropertyValue("status")).toBe("NEEDS-ACTION")
      expect(todo.getFirstPropertyValue("url")).toBe(`${service.baseUrl}/api/tasks/${task.id}`)
      const due = todo.getFirstPropertyValue("due") as ICAL.Time
      expect(due.zone?.tzid).toBe(NY)
      expect(due.toString()).toBe("2026-12-10T10:00:00")
      expect(due.toJSDate().toISOString()).toBe(task.due_at)
    }
    // UIDs are stable: the same on the next fetch.
    const again = byId(await fetchFeed(key))
    for (const task of created) {
      expect(again.get(task.id)!.getFirstPropertyValue("uid")).toBe(todos.get(task.id)!.getFirstPropertyValue("uid"))
    }
    expect(new Set([...todos.values()].map((t) => t.getFirstPropertyValue("uid"))).size).toBe(todos.size)
  })

  it("a recurring task carries its rule and the zone's VTIMEZONE; ical.js expands it across the DST change", async () => {
    // Mondays 09:00 in New York; DST starts on 2027-03-14.
    const task = await createTask(alice.api, { title: "Weekly review", due_at: "2027-03-01T14:00:00.000Z", rrule: "FREQ=WEEKLY;BYDAY=MO" })
    expect(task.due_at).toBe("2027-03-01T14:00:00.000Z")
    const { key } = await newKey(alice)
    const feed = await fetchFeed(key)
    const zones = feed.calendar.getAllSubcomponents("vtimezone")
    expect(zones.map((z) => z.getFirstPropertyValue("tzid"))).toEqual([NY])
    const todo = byId(feed).get(task.id)!
    expect(String(todo.getFirstPropertyValue("rrule"))).toBe("FREQ=WEEKLY;BYDAY=MO")
    const due = todo.getFirstPropertyValue("due") as ICAL.Time
    expect(due.zone?.tzid).toBe(NY)
    expect(due.toJSDate().toISOString()).toBe(task.due_at)
    expect((todo.getFirstPropertyValue("dtstart") as ICAL.Time).toJSDate().toISOString()).toBe(task.due_at)

    const rule = todo.getFirstPropertyValue("rrule") as ICAL.Recur
    const iterator = rule.iterator(due)
    const next: Array<string> = []
    for (let i = 0; i < 5; i++) next.push(iterator.next()!.toJSDate().toISOString())
    expect(next).toEqual([
      "2027-03-01T14:00:00.000Z",
      "2027-03-08T14:00:00.000Z",
      "2027-03-15T13:00:00.000Z",
      "2027-03-22T13:00:00.000Z",
      "2027-03-29T13:00:00.000Z"
    ])
    // The service agrees: completing the occurrences walks the same instants.
    const walked: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const done = await alice.api.post(`/api/tasks/${task.id}/done`)
      expect(done.status).toBe(200)
      walked.push(done.body.data.next_due_at)
    }
    expect(walked).toEqual(next.slice(1, 4))
    // And the feed follows the task: the current occurrence is now after the change.
    const after = byId(await fetchFeed(key)).get(task.id)!
    expect((after.getFirstPropertyValue("due") as ICAL.Time).toString()).toBe("2027-03-22T09:00:00")
  })

  it("leaves out quotas, done, trashed and undated tasks; shows shared-project tasks but not others' private ones", async () => {
    const open = await createTask(alice.api, { title: "open one", due_at: "2026-12-20T12:00:00.000Z" })
    const quota = await createTask(alice.api, { title: "Exercise", progress_target: 3, rrule: "FREQ=WEEKLY" })
    const done = await createTask(alice.api, { title: "finished", due_at: "2026-12-21T12:00:00.000Z" })
    expect((await alice.api.post(`/api/tasks/${done.id}/done`)).status).toBe(200)
    const trashed = await createTask(alice.api, { title: "trashed", due_at: "2026-12-22T12:00:00.000Z" })
    expect((await alice.api.delete(`/api/tasks/${trashed.id}`)).status).toBe(200)
    const undated = await createTask(alice.api, { title: "someday", priority: 1 })
    const shared = await bob.api.post("/api/projects", { name: "Household", shared: true })
    expect(shared.status).toBe(201)
    const bobShared = await createTask(bob.api, { title: "bob shared", due_at: "2026-12-23T12:00:00.000Z", project_id: shared.body.data.id })
    const bobPrivate = await createTask(bob.api, { title: "bob private", due_at: "2026-12-24T12:00:00.000Z" })
    const bobQuota = await createTask(bob.api, {
      title: "bob shared quota", progress_target: 2, rrule: "FREQ=DAILY", project_id: shared.body.data.id
    })
    // Quotas take no due date through the API; give these one, as older data may have, to see them left out.
    await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql`UPDATE tasks SET due_at = '2026-12-25T12:00:00Z' WHERE id IN (${quota.id}, ${bobQuota.id})`))

    const { key } = await newKey(alice)
    const ids = [...byId(await fetchFeed(key)).keys()]
    expect(ids).toContain(open.id)
    expect(ids).toContain(bobShared.id)
    for (const absent of [quota, done, trashed, undated, bobPrivate, bobQuota]) expect(ids).not.toContain(absent.id)

    // Bob's own feed has his private task and, in UTC, no VTIMEZONE.
    const bobFeed = await fetchFeed((await newKey(bob)).key)
    expect([...byId(bobFeed).keys()]).toEqual(expect.arrayContaining([bobShared.id, bobPrivate.id]))
    expect(bobFeed.calendar.getAllSubcomponents("vtimezone")).toEqual([])
    const due = byId(bobFeed).get(bobPrivate.id)!.getFirstPropertyValue("due") as ICAL.Time
    expect(due.toJSDate().toISOString()).toBe(bobPrivate.due_at)
    expect(bobFeed.text).toContain("\r\nDUE:20261224T120000Z\r\n")
  })

  it("a new key replaces the old one; a revoked, wrong or missing key is a 401 with the envelope", async () => {
    const first = await newKey(alice)
    expect((await fetchFeed(first.key)).status).toBe(200)
    const second = await newKey(alice)
    expect(second.key).not.toBe(first.key)
    const old = await service.anonymous.get(`/api/calendar.ics?key=${first.key}`)
    expect(old.status).toBe(401)
    expect(old.body).toEqual({ error: "Unknown or revoked calendar key", code: "UNAUTHORIZED", details: {} })
    expect((await fetchFeed(second.key)).status).toBe(200)

    const revoked = await alice.api.delete("/api/calendar/key")
    expect(revoked.status).toBe(200)
    expect(revoked.body).toEqual({ data: { deleted: true } })
    expect((await service.anonymous.get(`/api/calendar.ics?key=${second.key}`)).status).toBe(401)
    const again = await alice.api.delete("/api/calendar/key")
    expect(again.status).toBe(404)
    expect(again.body.code).toBe("NOT_FOUND")

    const missing = await service.anonymous.get("/api/calendar.ics")
    expect(missing.status).toBe(401)
    expect(missing.body.code).toBe("UNAUTHORIZED")
    expect((await service.anonymous.get(`/api/calendar.ics?key=${"0".repeat(64)}`)).status).toBe(401)
    // A key given twice is malformed; the answer does not repeat the keys.
    const twice = await service.anonymous.get(`/api/calendar.ics?key=${second.key}&key=${first.key}`)
    expect(twice.status).toBe(400)
    expect(twice.body).toEqual({ error: "Invalid request", code: "VALIDATION_ERROR", details: { key: "must be given once" } })
    // HEAD answers like GET, without the body (some calendar apps probe first).
    const live = await newKey(bob)
    const head = await fetch(`${service.baseUrl}/api/calendar.ics?key=${live.key}`, { method: "HEAD" })
    expect(head.status).toBe(200)
    expect(head.headers.get("content-type")).toBe("text/calendar; charset=utf-8")
    expect(await head.text()).toBe("")
    // A Bearer token is not a feed key, and the key endpoints need a login.
    expect((await service.anonymous.get(`/api/calendar.ics?key=${alice.token}`)).status).toBe(401)
    expect((await service.anonymous.post("/api/calendar/key")).status).toBe(401)
    expect((await service.anonymous.delete("/api/calendar/key")).status).toBe(401)
  })

  it("an Idempotency-Key does not make POST /api/calendar/key replay (or store) the key", async () => {
    const send = () => alice.api.request("POST", "/api/calendar/key", undefined, { "idempotency-key": "calendar-once" })
    const first = await send()
    const second = await send()
    expect([first.status, second.status]).toEqual([201, 201])
    expect(second.headers.get("idempotent-replayed")).toBeNull()
    expect(second.body.data.key).not.toBe(first.body.data.key)
    expect((await fetchFeed(first.body.data.key)).status).toBe(401)
    expect((await fetchFeed(second.body.data.key)).status).toBe(200)
  })

  it("the OpenAPI document declares the key endpoints and the text/calendar answer behind the key", async () => {
    const doc = Yaml.parse((await service.anonymous.get("/api/openapi")).text)
    const feed = doc.paths["/api/calendar.ics"].get
    expect(Object.keys(feed.responses["200"].content)).toEqual(["text/calendar"])
    expect(feed.responses["200"].content["text/calendar"].schema.type).toBe("string")
    expect(feed.security).toEqual([{ calendar_key: [] }])
    expect(feed.parameters.map((p: any) => [p.name, p.in])).toEqual([["key", "query"]])
    expect(feed.responses["401"]).toBeDefined()
    const key = doc.paths["/api/calendar/key"]
    expect(Object.keys(key.post.responses)).toContain("201")
    expect(key.post.security).toEqual([{ bearer: [] }, { session: [] }])
    expect(key.delete.security).toEqual([{ bearer: [] }, { session: [] }])
  })

  it("holds at most 5,000 items, soonest due first, for a user with 10,000 dated tasks", async () => {
    const carol = await service.user("carol", "Europe/Berlin")
    await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql`INSERT INTO tasks (user_id, project_id, title, original_title, due_at, priority, labels, created_at, updated_at)
        SELECT ${carol.id}, p.id, 'bulk ' || g, 'bulk ' || g,
               '2026-12-01T00:00:00Z'::timestamptz + g * interval '37 minutes', g % 5, '["bulk"]'::jsonb, now(), now()
        FROM generate_series(1, 10000) g, projects p WHERE p.owner_id = ${carol.id} AND p.is_inbox`))
    const { key } = await newKey(carol)
    const started = Date.now()
    const raw = await service.anonymous.get(`/api/calendar.ics?key=${key}`)
    const elapsed = Date.now() - started
    expect(raw.status).toBe(200)
    const feed = await fetchFeed(key)
    expect(feed.status).toBe(200)
    expect(feed.todos).toHaveLength(5000)
    const all = feed.todos.map((t) => (t.getFirstPropertyValue("due") as ICAL.Time).toJSDate().getTime())
    expect(all.every((d, i) => i === 0 || d >= all[i - 1]!)).toBe(true)
    // Besides her own, Carol sees dated tasks of shared projects (Bob's, from an earlier test).
    const foreign = feed.todos.filter((t) => !String(t.getFirstPropertyValue("summary")).startsWith("bulk "))
    expect(foreign.every((t) => t.getFirstPropertyValue("summary") === "bob shared")).toBe(true)
    const dues = feed.todos.filter((t) => !foreign.includes(t)).map((t) => (t.getFirstPropertyValue("due") as ICAL.Time).toJSDate().getTime())
    const expected = dues.map((_, i) => Date.parse("2026-12-01T00:00:00Z") + (i + 1) * 37 * 60_000)
    expect(dues).toHaveLength(5000 - foreign.length)
    expect(dues).toEqual(expected)
    expect(feed.todos[0]!.getFirstPropertyValue("priority")).toBe(9)
    // Loose: a loaded machine, two databases; seconds would mean something quadratic.
    expect(elapsed).toBeLessThan(15_000)
    console.log(`calendar feed: 5000 of 10000 tasks served in ${elapsed} ms, ${raw.text.length} characters`)
  })
})
