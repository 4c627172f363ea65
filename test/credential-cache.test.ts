import { Option } from "effect"
import Pg from "pg"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { databaseKind } from "./support/database.js"
import { sleep } from "./support/receiver.js"
import { startService, type TestService } from "./support/service.js"
import { createTask } from "./support/tasks.js"

/*
 * An instance remembers the tokens it has verified, so a request spends no
 * round trip on its token (write-round-trips.test.ts counts that). What a token stands for
 * must still change the moment it changes: a deleted token is refused on the next request,
 * a new zone applies on the next request, and on PostgreSQL a change made outside the
 * service (by hand in SQL, another instance, the CLI) reaches it through NOTIFY.
 */

// 03:00 UTC on 10 March 2026: still 9 March in Los Angeles (UTC-7 after its DST change on the 8th).
const NOW = new Date("2026-03-10T03:00:00Z")

describe("verified tokens kept in memory", () => {
  let service: TestService

  /** A statement run by hand, from outside the service. */
  const bySql = async (text: string, values: Array<unknown>) => {
    const admin = new Pg.Client({ connectionString: service.database.url })
    await admin.connect()
    try {
      await admin.query(text, values)
    } finally {
      await admin.end()
    }
  }

  /** `read` again every 20 ms until it gives `wanted` or 2 s have passed; the last value. */
  const within2s = async <A>(read: () => Promise<A>, wanted: A): Promise<A> => {
    let value = await read()
    const until = Date.now() + 2_000
    while (value !== wanted && Date.now() < until) {
      await sleep(20)
      value = await read()
    }
    return value
  }

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
  })
  afterAll(async () => {
    await service.stop()
  })

  it("a deleted token is refused on the next request, another token of the user still works", async () => {
    const user = await service.user("cache-revoke")
    const minted = await user.api.post("/api/tokens", { name: "phone" })
    expect(minted.status).toBe(201)
    const phone = service.client({ authorization: `Bearer ${minted.body.data.token}` })
    // Verified twice: the second answer comes from memory.
    expect((await phone.get("/api/tasks")).status).toBe(200)
    expect((await phone.get("/api/tasks")).status).toBe(200)
    expect((await user.api.delete(`/api/tokens/${minted.body.data.id}`)).status).toBe(200)
    const refused = await phone.get("/api/tasks")
    expect(refused.status).toBe(401)
    expect(refused.body.code).toBe("UNAUTHORIZED")
    expect((await user.api.get("/api/tasks")).status).toBe(200)
  })

  it("a new zone applies to the next request made with a token verified before the change", async () => {
    const user = await service.user("cache-zone", "UTC")
    // Due at noon UTC on 10 March: today in UTC, tomorrow in Los Angeles (where it is still the 9th).
    await createTask(user.api, { title: "Noon", due_at: "2026-03-10T12:00:00Z" })
    expect((await user.api.get("/api/tasks/counts")).body.data.today).toBe(1)
    expect((await user.api.get("/api/tasks/counts")).body.data.today).toBe(1)
    const moved = await user.api.patch("/api/user/preferences", { timezone: "America/Los_Angeles" })
    expect(moved.status).toBe(200)
    expect((await user.api.get("/api/tasks/counts")).body.data.today).toBe(0)
    // Created now: counted on the Los Angeles date.
    const task = await createTask(user.api, { title: "Tonight" })
    expect(task.user_id).toBe(user.id)
    const stats = (await user.api.get("/api/stats")).body.data
    expect(stats.today.date).toBe("2026-03-09")
  })

  it.skipIf(databaseKind() !== "postgres")("a token deleted by hand in SQL is refused within moments, with no request to the service", async () => {
    const user = await service.user("cache-by-hand")
    expect((await user.api.get("/api/tasks")).status).toBe(200)
    expect((await user.api.get("/api/tasks")).status).toBe(200)
    await bySql("DELETE FROM api_tokens WHERE user_id = $1", [user.id])
    expect(await within2s(async () => (await user.api.get("/api/tasks")).status, 401)).toBe(401)
  })

  it.skipIf(databaseKind() !== "postgres")("a zone changed by hand in SQL applies within moments", async () => {
    const user = await service.user("cache-zone-by-hand", "UTC")
    await createTask(user.api, { title: "Noon", due_at: "2026-03-10T12:00:00Z" })
    expect((await user.api.get("/api/tasks/counts")).body.data.today).toBe(1)
    await bySql("UPDATE users SET timezone = 'America/Los_Angeles' WHERE id = $1", [user.id])
    expect(await within2s(async () => (await user.api.get("/api/tasks/counts")).body.data.today, 0)).toBe(0)
  })
})
