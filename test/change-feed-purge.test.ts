import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { CHANGE_RETENTION_ROWS, ChangeFeed, PURGE_BATCH } from "../src/changes/ChangeFeed.js"
import { query } from "./support/rows.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask } from "./support/tasks.js"

/**
 * The change feed's hourly purge: rows past the retention (30 days, or about a million rows)
 * go in batches of `PURGE_BATCH`, oldest first, and the horizon (what a stale cursor's 410
 * names as the oldest valid cursor) follows the newest row gone. Rows are written straight
 * into `changes` here: the API would take minutes to write this many.
 */
const NOW = new Date("2026-03-10T15:00:00Z")

interface Position {
  readonly xid: string
  readonly id: string
}

describe("change feed purge", () => {
  let service: TestService
  let alice: TestUser

  const purge = () => service.run(Effect.flatMap(ChangeFeed, (feed) => feed.purge))
  const positions = () =>
    query<Position>(service, (sql) => sql`SELECT c.xid::text, c.id::text FROM changes c ORDER BY c.xid, c.id`)
  const horizon = async () =>
    (await query<Position>(service, (sql) => sql`SELECT xid::text, id::text FROM change_feed_horizon`))[0]!

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
    alice = await service.user("purge-alice")
  })
  afterAll(async () => {
    await service.stop()
  })

  it("drops every row older than 30 days in several batches, oldest first, and keeps the rest", async () => {
    const aged = 2 * PURGE_BATCH + 17
    // What the account's set-up wrote goes 40 days back; then a month-old batch, in one
    // transaction (one transaction id, so feed order is id order), a second apart. Feed order
    // and age agree, as they do for rows the service writes.
    await query(service, (sql) => sql`UPDATE changes SET at = at - interval '40 days' RETURNING 1`)
    await query(service, (sql) =>
      sql`INSERT INTO changes (at, kind, object_id, op, user_id, shared)
        SELECT ${NOW.toISOString()}::timestamptz - interval '31 days' + g * interval '1 second',
               'task', g, 'upsert', ${alice.id}, false
        FROM generate_series(1, ${aged}) g RETURNING 1`)
    const before = await positions()
    const kept = await createTask(alice.api, { title: "Written today" })
    const agedIds = new Set(before.map((b) => b.id))
    const fresh = (await positions()).filter((p) => !agedIds.has(p.id))
    expect(fresh.length).toBeGreaterThan(0)

    expect(await purge()).toBe(before.length)
    const after = await positions()
    expect(after).toEqual(fresh)
    // The horizon is the newest row gone: the last aged row in feed order.
    expect(await horizon()).toEqual(before.at(-1))

    // Nothing is past the retention any more, and today's rows are still read.
    expect(await purge()).toBe(0)
    const res = await alice.api.get("/api/changes?limit=1000")
    expect(res.status).toBe(200)
    const changes = (res.body.data as { changes: Array<{ kind: string; id: number }> }).changes
    expect(changes.map((c) => [c.kind, c.id])).toContainEqual(["task", kept.id])
  })

  it("keeps only the rows within CHANGE_RETENTION_ROWS ids of the newest, whatever their age", async () => {
    const before = await positions()
    expect(before.length).toBeGreaterThan(0)
    // A row a million ids ahead: every row before it is now past the count retention.
    const ahead = (await query<{ id: string }>(service, (sql) =>
      sql`INSERT INTO changes (id, at, kind, object_id, op, user_id, shared)
        SELECT max(id) + ${CHANGE_RETENTION_ROWS}, ${NOW.toISOString()}::timestamptz, 'task', 1, 'upsert', ${alice.id}, false
        FROM changes RETURNING id::text`))[0]!.id

    expect(await purge()).toBe(before.length)
    expect((await positions()).map((p) => p.id)).toEqual([ahead])
    expect(await horizon()).toEqual(before.at(-1))
    await query(service, (sql) => sql`DELETE FROM changes WHERE id = ${ahead}::bigint RETURNING 1`)
  })
})
