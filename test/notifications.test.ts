import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import * as Crypto from "node:crypto"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase, type TestDatabase } from "./support/database.js"
import { type FrozenClock, freezeServiceClock } from "./support/frozen-clock.js"
import { snapshot, undoEntries } from "./support/rows.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, TASK_FIELDS } from "./support/tasks.js"

/**
 * The public endpoints (spec §4.10, §5; PublicApi.ts): notification actions authenticated by
 * the API token in the body, and the VAPID public key. Snooze instants are asserted to the
 * millisecond by stopping the service clock (it runs in this process on Date.now).
 *
 * The clock is pinned at 12:20 UTC on Tuesday 10 March 2026.
 */
const NOW = new Date("2026-03-10T12:20:00Z")
const PATH = "/api/notifications/actions"

type Task = Record<string, any>

describe("POST /api/notifications/actions", () => {
  let database: TestDatabase
  let service: TestService
  let alice: TestUser
  let bob: TestUser
  let clock: FrozenClock | undefined

  /** Sent without an Authorization header. */
  const act = (body: unknown, headers: Record<string, string> = {}) => service.anonymous.request("POST", PATH, body, headers)
  const actOk = async (body: Record<string, unknown>) => {
    const res = await act(body)
    if (res.status !== 200) throw new Error(`POST ${PATH} ${JSON.stringify(body)} -> ${res.status} ${res.text}`)
    expect(Object.keys(res.body)).toEqual(["data"])
    const data = res.body.data
    expect(Object.keys(data).sort()).toEqual(body.action === "done" || body.action === "delete"
      ? ["action", "task", "task_id"]
      : ["action", "task", "task_id", "until"])
    // The task as GET /api/tasks/{id} shows it afterwards, nothing more.
    expect(Object.keys(data.task).sort()).toEqual([...TASK_FIELDS].sort())
    expect(data.task).toEqual((await alice.api.get(`/api/tasks/${data.task_id}`)).body.data)
    return data as { action: string; task_id: number; until?: string; task: Task }
  }
  const at = async (instant: string) => {
    clock ??= freezeServiceClock(service)
    await clock.set(new Date(instant))
  }

  beforeAll(async () => {
    database = await freshDatabase()
    service = await startService({ serviceNow: Option.some(NOW) }, database)
    alice = await service.user("notify-alice", "Europe/Berlin")
    bob = await service.user("notify-bob", "UTC")
  })
  afterEach(() => {
    clock?.restore()
    clock = undefined
  })
  afterAll(async () => {
    await service.stop()
    await database.drop()
  })

  it("done completes the task (a recurring one advances); the action is undoable", async () => {
    const task = await createTask(alice.api, { title: "Take out bins", due_at: "2026-03-10T11:00:00Z" })
    const data = await actOk({ token: alice.token, action: "done", task_id: task.id })
    expect(data).toMatchObject({ action: "done", task_id: task.id, task: { id: task.id, done: true } })
    expect(data.task.done_at).toBe(data.task.archived_at)

    const daily = await createTask(alice.api, { title: "Vitamins", due_at: "2026-03-10T07:00:00Z", rrule: "FREQ=DAILY" })
    const advanced = await actOk({ token: alice.token, action: "done", task_id: daily.id })
    expect(advanced.task).toMatchObject({ done: false, due_at: "2026-03-11T07:00:00.000Z", completion_count: 1 })
    const entries = await undoEntries(service, alice.id)
    expect(entries.filter((e) => e.action !== "create").slice(-2).map((e) => [e.action, e.description])).toEqual([
      ["done", "Marked 'Take out bins' done"],
      ["done", "Marked 'Vitamins' done"]
    ])
    const undo = await alice.api.post("/api/undo")
    expect(undo.body.data).toMatchObject({ undone_action: "done", description: "Marked 'Vitamins' done" })
    expect((await alice.api.get(`/api/tasks/${daily.id}`)).body.data).toMatchObject({ due_at: "2026-03-10T07:00:00.000Z", completion_count: 0 })
  })

  it("snooze is now + 1 hour rounded to the nearest hour; snooze2h now + 2 hours rounded; snooze30 now + 30 minutes exactly", async () => {
    const cases: Array<[now: string, action: string, until: string]> = [
      ["2026-03-10T12:20:00.000Z", "snooze", "2026-03-10T13:00:00.000Z"],
      ["2026-03-10T12:29:59.999Z", "snooze", "2026-03-10T13:00:00.000Z"],
      ["2026-03-10T12:30:00.000Z", "snooze", "2026-03-10T14:00:00.000Z"],
      ["2026-03-10T12:40:00.000Z", "snooze", "2026-03-10T14:00:00.000Z"],
      ["2026-03-10T23:45:10.000Z", "snooze", "2026-03-11T01:00:00.000Z"],
      ["2026-03-10T12:20:00.000Z", "snooze2h", "2026-03-10T14:00:00.000Z"],
      ["2026-03-10T12:45:00.000Z", "snooze2h", "2026-03-10T15:00:00.000Z"],
      ["2026-03-10T12:20:17.123Z", "snooze30", "2026-03-10T12:50:17.123Z"],
      ["2026-03-10T23:45:00.001Z", "snooze30", "2026-03-11T00:15:00.001Z"]
    ]
    for (const [now, action, until] of cases) {
      const task = await createTask(alice.api, { title: `${action} at ${now}`, due_at: "2026-03-10T12:00:00Z" })
      await at(now)
      const data = await actOk({ token: alice.token, action, task_id: task.id })
      expect(data, `${action} at ${now}`).toMatchObject({ action, task_id: task.id, until })
      expect(data.task).toMatchObject({ due_at: until, snooze_count: 1, is_snoozed: true, original_due_at: "2026-03-10T12:00:00.000Z" })
      const [entry] = (await undoEntries(service, alice.id)).slice(-1)
      expect(entry!.action).toBe("snooze")
    }
  })

  it("delete moves the task to the trash", async () => {
    await at("2026-03-10T12:20:00.000Z")
    const task = await createTask(alice.api, { title: "Old idea" })
    const data = await actOk({ token: alice.token, action: "delete", task_id: task.id })
    expect(data).toMatchObject({ action: "delete", task_id: task.id, task: { deleted_at: "2026-03-10T12:20:00.000Z" } })
    const trash = (await alice.api.get("/api/trash")).body.data.tasks as Array<Task>
    expect(trash.map((t) => t.id)).toContain(task.id)
    expect((await undoEntries(service, alice.id)).at(-1)!.action).toBe("delete")
  })

  it("the token in the body decides who acts; an Authorization header is ignored", async () => {
    const mine = await createTask(alice.api, { title: "Mine" })
    const res = await act({ token: alice.token, action: "done", task_id: mine.id }, { authorization: `Bearer ${bob.token}` })
    expect(res.status).toBe(200)
    expect(res.body.data.task.done).toBe(true)
    const other = await createTask(alice.api, { title: "Other" })
    const refused = await act({ token: "f".repeat(64), action: "done", task_id: other.id }, { authorization: `Bearer ${alice.token}` })
    expect(refused.status).toBe(401)
    expect((await alice.api.get(`/api/tasks/${other.id}`)).body.data.done).toBe(false)
  })

  it("a bad token is a 401 and changes nothing", async () => {
    const task = await createTask(alice.api, { title: "Untouched" })
    const before = await snapshot(service)
    for (const token of ["f".repeat(64), alice.token.slice(0, -1) + (alice.token.endsWith("0") ? "1" : "0"), "x", alice.token.toUpperCase()]) {
      for (const action of ["done", "snooze", "snooze30", "snooze2h", "delete"]) {
        const res = await act({ token, action, task_id: task.id })
        expect(res.status, `${action} ${token}`).toBe(401)
        expect(res.body).toEqual({ error: "Invalid API token", code: "UNAUTHORIZED", details: {} })
      }
    }
    // A deleted token stops working at once.
    const extra = await alice.api.post("/api/tokens", { name: "phone" })
    expect(extra.status).toBe(201)
    expect((await alice.api.delete(`/api/tokens/${extra.body.data.id}`)).status).toBe(200)
    const after = await snapshot(service)
    const revoked = await act({ token: extra.body.data.token, action: "done", task_id: task.id })
    expect(revoked.status).toBe(401)
    expect(await snapshot(service)).toEqual(after)
    expect(before.tasks).toEqual(after.tasks)
  })

  it("bad input is a 400; someone else's private task a 404; a quota or a trashed task cannot be snoozed", async () => {
    const task = await createTask(alice.api, { title: "Target" })
    const before = await snapshot(service)
    for (const body of [
      { token: alice.token, action: "archive", task_id: task.id },
      { token: alice.token, action: "SNOOZE", task_id: task.id },
      { token: alice.token, task_id: task.id },
      { token: alice.token, action: "done" },
      { token: alice.token, action: "done", task_id: "abc" },
      { token: alice.token, action: "done", task_id: 0 },
      { token: alice.token, action: "done", task_id: 2 ** 31 },
      { token: "", action: "done", task_id: task.id },
      { action: "done", task_id: task.id },
      "{not json"
    ]) {
      const res = await act(body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.body.code).toBe("VALIDATION_ERROR")
    }
    const unknownAction = await act({ token: alice.token, action: "archive", task_id: task.id })
    expect(unknownAction.body.details).toEqual({ action: "must be done, snooze, snooze30, snooze2h or delete" })
    expect(await snapshot(service)).toEqual(before)

    const bobs = await createTask(bob.api, { title: "Bob's" })
    for (const action of ["done", "snooze", "delete"]) {
      const res = await act({ token: alice.token, action, task_id: bobs.id })
      expect(res.status).toBe(404)
      expect(res.body.code).toBe("NOT_FOUND")
    }
    expect((await act({ token: alice.token, action: "done", task_id: 2_000_000_000 })).status).toBe(404)

    const quota = await createTask(alice.api, { title: "Quota", progress_target: 2, rrule: "FREQ=WEEKLY" })
    expect((await act({ token: alice.token, action: "snooze", task_id: quota.id })).status).toBe(400)
    expect((await act({ token: alice.token, action: "done", task_id: quota.id })).status).toBe(400)
    const trashed = await createTask(alice.api, { title: "Trashed" })
    expect((await alice.api.delete(`/api/tasks/${trashed.id}`)).status).toBe(200)
    expect((await act({ token: alice.token, action: "snooze30", task_id: trashed.id })).status).toBe(400)
    expect((await act({ token: alice.token, action: "done", task_id: trashed.id })).status).toBe(400)
  })
})

describe("GET /api/push/vapid-key", () => {
  let database: TestDatabase
  let service: TestService

  const vapid = async (client = service.anonymous) => {
    const res = await client.get("/api/push/vapid-key")
    expect(res.status).toBe(200)
    expect(Object.keys(res.body)).toEqual(["data"])
    expect(Object.keys(res.body.data).sort()).toEqual(["configured", "public_key"])
    expect(res.body.data.configured).toBe(true)
    return res.body.data.public_key as string
  }

  beforeAll(async () => {
    database = await freshDatabase()
    service = await startService({ serviceNow: Option.some(NOW) }, database)
  })
  afterAll(async () => {
    await service.stop()
    await database.drop()
  })

  it("is public, an uncompressed P-256 point in base64url, the same on every call, concurrent or not, and after a restart", async () => {
    // The first calls race to create the key pair; all of them see the one that was stored.
    const first = await Promise.all(Array.from({ length: 6 }, () => vapid()))
    expect(new Set(first).size).toBe(1)
    const key = first[0]!
    expect(key).toMatch(/^[A-Za-z0-9_-]{87}$/)
    const raw = Buffer.from(key, "base64url")
    expect(raw.length).toBe(65)
    expect(raw[0]).toBe(0x04)
    // A real point on the curve.
    const x = raw.subarray(1, 33).toString("base64url")
    const y = raw.subarray(33).toString("base64url")
    const publicKey = Crypto.createPublicKey({ key: { kty: "EC", crv: "P-256", x, y }, format: "jwk" })
    expect(publicKey.asymmetricKeyType).toBe("ec")

    // The stored private key belongs to it.
    const [row] = await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ value: { public_key: string; private_key: string } }>`SELECT value FROM app_settings WHERE key = 'vapid'`))
    expect(row!.value.public_key).toBe(key)
    const privateKey = Crypto.createPrivateKey({ key: { kty: "EC", crv: "P-256", x, y, d: row!.value.private_key }, format: "jwk" })
    const derived = Crypto.createPublicKey(privateKey).export({ format: "jwk" })
    expect([derived.x, derived.y]).toEqual([x, y])
    // And signs what it verifies.
    const signature = Crypto.sign("sha256", Buffer.from("push"), privateKey)
    expect(Crypto.verify("sha256", Buffer.from("push"), publicKey, signature)).toBe(true)

    expect(await vapid()).toBe(key)
    const user = await service.user("vapid-user", "UTC")
    expect(await vapid(user.api)).toBe(key)

    await service.stop()
    service = await startService({ serviceNow: Option.some(new Date("2026-04-01T00:00:00Z")) }, database)
    expect(await vapid()).toBe(key)
    expect(await vapid()).toBe(key)
  })
})
