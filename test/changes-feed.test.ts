import { Effect, Option, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { rollForwardMissedReminders } from "../src/quotas/ReminderRollForward.js"
import { ChangePage } from "../src/changes/ChangesApi.js"
import { Data } from "../src/http/Envelope.js"
import { ChangeFeed } from "../src/changes/ChangeFeed.js"
import Pg from "pg"
import { databaseKind, serverUrl } from "./support/database.js"
import { query } from "./support/rows.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, inboxOf } from "./support/tasks.js"

/**
 * GET /api/changes. Everything a user can see that changed after a cursor,
 * with the object as its own GET renders it now; others' private changes never show;
 * shared-project changes by others do; background work shows; an expired cursor is a 410.
 */
const NOW = new Date("2026-03-10T15:00:00Z")

interface Change {
  readonly cursor: string
  readonly at: string
  readonly kind: string
  readonly id: number
  readonly op: string
  readonly data: Record<string, any> | null
}

describe("change feed: GET /api/changes", () => {
  let service: TestService
  let alice: TestUser
  let bob: TestUser

  /** Every change after `since`, page by page (small pages, to exercise has_more). */
  const drain = async (user: TestUser, since?: string, limit = 3) => {
    const out: Array<Change> = []
    let cursor = since
    for (let i = 0; i < 100; i++) {
      const res = await user.api.get(`/api/changes?limit=${limit}${cursor === undefined ? "" : `&since=${cursor}`}`)
      expect(res.status).toBe(200)
      const page = res.body.data as { changes: Array<Change>; next_cursor: string; has_more: boolean }
      expect(page.changes.length).toBeLessThanOrEqual(limit)
      // The body is sent without the schema (STYLE): it must still be what the document promises.
      Schema.decodeUnknownSync(Data(ChangePage))(res.body)
      out.push(...page.changes)
      if (page.changes.length > 0) {
        // A page that ends early ends at the bound, at or after its last change.
        if (page.has_more) expect(page.next_cursor).toBe(page.changes.at(-1)!.cursor)
      }
      cursor = page.next_cursor
      if (!page.has_more) return { changes: out, cursor: cursor! }
    }
    throw new Error("feed did not end")
  }
  const head = async (user: TestUser) => (await drain(user, undefined, 1000)).cursor

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
    alice = await service.user("feed-alice")
    bob = await service.user("feed-bob")
  })
  afterAll(async () => {
    await service.stop()
  })

  it("reports creates, edits and deletes with the object as GET renders it, in order, once each", async () => {
    const start = await head(alice)
    const task = await createTask(alice.api, { title: "Water the plants" })
    expect((await alice.api.patch(`/api/tasks/${task.id}`, { title: "Water the ferns" })).status).toBe(200)
    const project = (await alice.api.post("/api/projects", { name: "Garden" })).body.data
    expect((await alice.api.delete(`/api/projects/${project.id}`)).status).toBe(200)

    const { changes, cursor } = await drain(alice, start, 2)
    expect(changes.map((c) => [c.kind, c.id, c.op])).toEqual([
      ["task", task.id, "upsert"],
      ["task", task.id, "upsert"],
      // Created, then deleted: the object is gone, so its create reads as a delete too.
      ["project", project.id, "delete"],
      ["project", project.id, "delete"]
    ])
    // The data is the object now: both task changes carry the edited title, as GET shows it.
    const current = (await alice.api.get(`/api/tasks/${task.id}`)).body.data
    expect(changes[0]!.data).toEqual(current)
    expect(changes[1]!.data).toEqual(current)
    expect(current.title).toBe("Water the ferns")
    // The project is gone: every change about it reads as a delete with no data.
    expect(changes[2]!.data).toBeNull()
    expect(changes[3]!.data).toBeNull()
    // `at` is the service clock (SERVICE_NOW runs forward from NOW).
    for (const c of changes) expect(Date.parse(c.at) - NOW.getTime()).toBeGreaterThanOrEqual(0)
    for (const c of changes) expect(Date.parse(c.at) - NOW.getTime()).toBeLessThan(10 * 60_000)
    expect(new Set(changes.map((c) => c.cursor)).size).toBe(changes.length)
    expect(changes.every((c) => /^[A-Za-z0-9_-]{22}$/.test(c.cursor))).toBe(true)

    // Nothing new: the same cursor gives an empty page, and the cursor does not go back.
    const again = await alice.api.get(`/api/changes?since=${cursor}`)
    expect(again.body.data).toEqual({ changes: [], next_cursor: again.body.data.next_cursor, has_more: false })
    expect((await drain(alice, again.body.data.next_cursor)).changes).toEqual([])
  })

  it("never shows another user's private changes; shows their changes in shared projects", async () => {
    const aliceStart = await head(alice)
    const secret = await createTask(bob.api, { title: "Bob's secret" })
    expect((await bob.api.patch(`/api/tasks/${secret.id}`, { title: "Still secret" })).status).toBe(200)
    const shared = (await bob.api.post("/api/projects", { name: "Household", shared: true })).body.data
    const chore = await createTask(bob.api, { title: "Take out the bins", project_id: shared.id })
    // Alice acts on Bob's shared task: Bob sees it too.
    const bobStart = await head(bob)
    expect((await alice.api.post(`/api/tasks/${chore.id}/done`)).status).toBe(200)
    const bobSees = await drain(bob, bobStart)
    expect(bobSees.changes.map((c) => [c.kind, c.id, c.op])).toEqual([["task", chore.id, "upsert"]])
    expect(bobSees.changes[0]!.data).toEqual((await bob.api.get(`/api/tasks/${chore.id}`)).body.data)

    // Bob moves the chore out of the shared project: for Alice it is gone.
    const bobInbox = await inboxOf(bob.api)
    const moved = await bob.api.patch(`/api/tasks/${chore.id}`, { project_id: bobInbox })
    expect(moved.status).toBe(200)

    const { changes } = await drain(alice, aliceStart)
    expect(changes.map((c) => [c.kind, c.id, c.op])).toEqual([
      ["project", shared.id, "upsert"],
      ["task", chore.id, "delete"],
      ["task", chore.id, "delete"],
      ["task", chore.id, "delete"]
    ])
    expect(changes[0]!.data).toEqual((await alice.api.get(`/api/projects/${shared.id}`)).body.data)
    expect(changes.some((c) => c.id === secret.id && c.kind === "task")).toBe(false)
    expect(JSON.stringify(changes)).not.toContain("secret")
    expect((await alice.api.get(`/api/tasks/${chore.id}`)).status).toBe(404)
  })

  it("reports background work: a missed reminder rolled forward", async () => {
    const user = await service.user("feed-carol")
    const reminder = await createTask(user.api, {
      title: "Take vitamins",
      is_reminder: true,
      due_at: "2026-03-07T14:00:00Z",
      rrule: "FREQ=DAILY"
    })
    const start = await head(user)
    expect(await service.run(rollForwardMissedReminders)).toBeGreaterThanOrEqual(1)
    const { changes } = await drain(user, start)
    expect(changes.map((c) => [c.kind, c.id, c.op])).toEqual([["task", reminder.id, "upsert"]])
    expect(changes[0]!.data!.due_at).toBe("2026-03-11T14:00:00.000Z")
    expect(changes[0]!.data).toEqual((await user.api.get(`/api/tasks/${reminder.id}`)).body.data)
  })

  it("refuses a cursor it never issued and bad limits with 400", async () => {
    for (const since of ["abc", "AAAAAAAAAAAAAAAAAAAAAAA", "!!!!!!!!!!!!!!!!!!!!!!", "_____________________w"]) {
      const res = await alice.api.get(`/api/changes?since=${since}`)
      expect(res.status).toBe(400)
      expect(res.body.code).toBe("VALIDATION_ERROR")
      expect(Object.keys(res.body.details)).toEqual(["since"])
    }
    for (const limit of ["0", "1001", "x"]) {
      const res = await alice.api.get(`/api/changes?limit=${limit}`)
      expect(res.status).toBe(400)
      expect(res.body.code).toBe("VALIDATION_ERROR")
    }
    expect((await service.anonymous.get("/api/changes")).status).toBe(401)
  })

  it("answers 410 with the oldest valid cursor for a cursor older than the retention", async () => {
    const old = await head(alice)
    await createTask(alice.api, { title: "Soon purged" })
    const kept = await head(alice)
    const fresh = await createTask(alice.api, { title: "Kept" })
    // Everything up to `kept` is made 31 days old; the hourly purge drops it.
    await query(service, (sql) =>
      sql`UPDATE changes SET at = at - interval '31 days' WHERE id <= (SELECT max(id) FROM changes WHERE object_id <> ${fresh.id} OR kind <> 'task') RETURNING id`)
    const purged = await service.run(Effect.flatMap(ChangeFeed, (feed) => feed.purge))
    expect(purged).toBeGreaterThan(0)

    const res = await alice.api.get(`/api/changes?since=${old}`)
    expect(res.status).toBe(410)
    expect(res.body.code).toBe("GONE")
    const oldest = res.body.details.oldest_cursor as string
    expect(oldest).toMatch(/^[A-Za-z0-9_-]{22}$/)
    // From the oldest valid cursor (and from no cursor at all) the rest is still there.
    for (const from of [oldest, undefined]) {
      const { changes } = await drain(alice, from)
      expect(changes.map((c) => [c.kind, c.id])).toEqual([["task", fresh.id]])
    }
    expect((await alice.api.get(`/api/changes?since=${kept}`)).status).toBe(200)
  })

  it.runIf(databaseKind() === "postgres")(
    "a long transaction in another database on the same server does not hold the feed back",
    async () => {
      // Another application's (or a report's) transaction, holding a transaction id.
      const other = new Pg.Client({ connectionString: serverUrl() })
      await other.connect()
      try {
        await other.query("BEGIN")
        await other.query("SELECT pg_current_xact_id()")
        const start = await head(alice)
        const task = await createTask(alice.api, { title: "Written while another database is busy" })
        const { changes } = await drain(alice, start)
        expect(changes.map((c) => [c.kind, c.id, c.op])).toEqual([["task", task.id, "upsert"]])
      } finally {
        await other.query("ROLLBACK").catch(() => undefined)
        await other.end()
      }
    }
  )
})
