import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { periodRows, shiftPeriodBack, sweep } from "./support/quotas.js"
import { header, type Received, type Receiver, startReceiver } from "./support/receiver.js"
import { query } from "./support/rows.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, ISO_MS_Z } from "./support/tasks.js"
import {
  ALL_EVENTS,
  createWebhook,
  DELIVERY_LOG_FIELDS,
  deliveryLog,
  deliveryRows,
  settled,
  WEBHOOK_FIELDS
} from "./support/webhooks.js"

/*
 * Webhook registrations (spec §2.6, §4.8; WebhooksApi.ts) and the events they carry
 * (spec §6), against a real receiver on 127.0.0.1.
 */

const omit = (value: Record<string, any>, ...keys: Array<string>) =>
  Object.fromEntries(Object.entries(value).filter(([k]) => !keys.includes(k)))

const later = (hours: number) => new Date(Date.now() + hours * 3_600_000).toISOString().replace(/:\d\d\.\d{3}Z$/, ":00.000Z")

describe("webhook registrations (spec §4.8)", () => {
  let service: TestService
  let alice: TestUser
  let bob: TestUser
  let receiver: Receiver
  let counter = 0
  const freshUser = () => service.user(`hookuser${++counter}`)

  beforeAll(async () => {
    service = await startService()
    alice = await service.user("alice")
    bob = await service.user("bob")
    receiver = await startReceiver()
  })
  afterAll(async () => {
    await service?.stop()
    await receiver?.close()
  })

  it("POST answers 201 with the webhook and a 64-hex secret shown once", async () => {
    const res = await alice.api.post("/api/webhooks", { url: receiver.url("/a"), events: ["task.created", "task.completed"] })
    expect(res.status, res.text).toBe(201)
    const hook = res.body.data
    expect(Object.keys(hook).sort()).toEqual([...WEBHOOK_FIELDS, "secret", "standard_secret"].sort())
    expect(hook).toMatchObject({
      user_id: alice.id,
      url: receiver.url("/a"),
      events: ["task.created", "task.completed"],
      active: true
    })
    expect(hook.id).toEqual(expect.any(Number))
    expect(hook.secret).toMatch(/^[0-9a-f]{64}$/)
    // The same key for Standard Webhooks libraries: whsec_ + base64 of the secret's UTF-8 bytes.
    expect(hook.standard_secret).toBe(`whsec_${Buffer.from(hook.secret as string, "utf8").toString("base64")}`)
    expect(hook.created_at).toMatch(ISO_MS_Z)
    expect(hook.updated_at).toBe(hook.created_at)

    const second = await alice.api.post("/api/webhooks", { url: receiver.url("/b"), events: ["task.created"] })
    expect(second.body.data.secret).toMatch(/^[0-9a-f]{64}$/)
    expect(second.body.data.secret).not.toBe(hook.secret)

    // The list shows it, without any secret.
    const list = await alice.api.get("/api/webhooks")
    expect(list.status).toBe(200)
    expect(Object.keys(list.body.data)).toEqual(["webhooks"])
    const listed = (list.body.data.webhooks as Array<Record<string, unknown>>).find((w) => w.id === hook.id)
    expect(listed).toEqual(omit(hook, "secret", "standard_secret"))
    for (const w of list.body.data.webhooks) expect(Object.keys(w).sort()).toEqual([...WEBHOOK_FIELDS].sort())
    expect(list.text).not.toContain(hook.secret)
    expect(list.text).not.toContain("whsec_")
    expect(list.text).not.toContain(second.body.data.secret)
  })

  it("GET /api/webhooks lists only the caller's webhooks", async () => {
    const carol = await freshUser()
    expect((await carol.api.get("/api/webhooks")).body).toEqual({ data: { webhooks: [] } })
    const mine = await createWebhook(carol.api, receiver.url("/carol"), ["task.deleted"])
    const list = (await carol.api.get("/api/webhooks")).body.data.webhooks
    expect(list).toEqual([omit(mine, "secret", "standard_secret")])
    const others = (await bob.api.get("/api/webhooks")).body.data.webhooks as Array<{ id: number }>
    expect(others.map((w) => w.id)).not.toContain(mine.id)
  })

  it("PATCH changes url, events and active; the answer has no secret", async () => {
    const hook = await createWebhook(alice.api, receiver.url("/p"), ["task.created"])
    await new Promise((resolve) => setTimeout(resolve, 5))

    const url = await alice.api.patch(`/api/webhooks/${hook.id}`, { url: receiver.url("/p2") })
    expect(url.status, url.text).toBe(200)
    expect(Object.keys(url.body.data).sort()).toEqual([...WEBHOOK_FIELDS].sort())
    expect(url.body.data).toMatchObject({ id: hook.id, url: receiver.url("/p2"), events: ["task.created"], active: true })
    expect(Date.parse(url.body.data.updated_at)).toBeGreaterThan(Date.parse(hook.created_at as string))
    expect(url.text).not.toContain(hook.secret)

    const events = await alice.api.patch(`/api/webhooks/${hook.id}`, { events: ["task.deleted", "task.snoozed"] })
    expect(events.body.data).toMatchObject({ url: receiver.url("/p2"), events: ["task.deleted", "task.snoozed"], active: true })

    const off = await alice.api.patch(`/api/webhooks/${hook.id}`, { active: false })
    expect(off.body.data).toMatchObject({ url: receiver.url("/p2"), events: ["task.deleted", "task.snoozed"], active: false })

    const all = await alice.api.patch(`/api/webhooks/${hook.id}`, { url: receiver.url("/p3"), events: ["task.updated"], active: true })
    expect(all.body.data).toMatchObject({ url: receiver.url("/p3"), events: ["task.updated"], active: true, created_at: hook.created_at })
    expect(all.text).not.toContain(hook.secret)

    const listed = ((await alice.api.get("/api/webhooks")).body.data.webhooks as Array<Record<string, unknown>>)
      .find((w) => w.id === hook.id)
    expect(listed).toEqual(all.body.data)

    // The secret does not change with an edit: a delivery after the PATCH is still signed with it.
    const [row] = await query<{ secret: string }>(service, (sql) => sql`SELECT secret FROM webhooks WHERE id = ${hook.id}`)
    expect(row!.secret).toBe(hook.secret)
  })

  it("DELETE answers {deleted: true}; the webhook is gone", async () => {
    const hook = await createWebhook(alice.api, receiver.url("/d"))
    const res = await alice.api.delete(`/api/webhooks/${hook.id}`)
    expect(res.status, res.text).toBe(200)
    expect(res.body).toEqual({ data: { deleted: true } })
    const list = (await alice.api.get("/api/webhooks")).body.data.webhooks as Array<{ id: number }>
    expect(list.map((w) => w.id)).not.toContain(hook.id)
    expect((await alice.api.delete(`/api/webhooks/${hook.id}`)).status).toBe(404)
    expect((await alice.api.patch(`/api/webhooks/${hook.id}`, { active: true })).status).toBe(404)
    expect((await alice.api.get(`/api/webhooks/${hook.id}/deliveries`)).status).toBe(404)
  })

  it("another user's webhook is a 404 on every verb and stays untouched", async () => {
    const hook = await createWebhook(alice.api, receiver.url("/private"), ["task.created"])
    for (const res of [
      await bob.api.get(`/api/webhooks/${hook.id}/deliveries`),
      await bob.api.patch(`/api/webhooks/${hook.id}`, { active: false }),
      await bob.api.patch(`/api/webhooks/${hook.id}`, { url: receiver.url("/stolen") }),
      await bob.api.delete(`/api/webhooks/${hook.id}`)
    ]) {
      expect(res.status, res.text).toBe(404)
      expect(res.body.code).toBe("NOT_FOUND")
      expect(res.text).not.toContain(hook.secret)
    }
    const listed = ((await alice.api.get("/api/webhooks")).body.data.webhooks as Array<Record<string, unknown>>)
      .find((w) => w.id === hook.id)
    expect(listed).toEqual(omit(hook, "secret", "standard_secret"))
    // A webhook id that does not exist at all answers the same.
    expect((await bob.api.get("/api/webhooks/999999/deliveries")).status).toBe(404)
    expect((await bob.api.patch("/api/webhooks/999999", { active: false })).status).toBe(404)
    expect((await bob.api.delete("/api/webhooks/999999")).status).toBe(404)
    // Without credentials: 401.
    expect((await service.anonymous.get("/api/webhooks")).status).toBe(401)
    expect((await service.anonymous.post("/api/webhooks", { url: receiver.url(), events: ["task.created"] })).status).toBe(401)
  })

  it("validation: bad URLs, link-local and metadata addresses, bad events and malformed ids are 400s", async () => {
    const countHooks = async () =>
      (await query<{ n: number }>(service, (sql) => sql`SELECT count(*)::int AS n FROM webhooks`))[0]!.n
    const before = await countHooks()
    const bad: Array<Record<string, unknown>> = [
      { url: "ftp://127.0.0.1/hook", events: ["task.created"] },
      { url: "file:///etc/passwd", events: ["task.created"] },
      { url: "javascript:alert(1)", events: ["task.created"] },
      { url: "not a url", events: ["task.created"] },
      { url: "http://", events: ["task.created"] },
      { url: "", events: ["task.created"] },
      { url: "http://169.254.169.254/latest/meta-data/", events: ["task.created"] },
      { url: "http://169.254.1.1:8080/hook", events: ["task.created"] },
      { url: "http://[fe80::1]/hook", events: ["task.created"] },
      { url: "http://[fe80::1234:5678]:9000/hook", events: ["task.created"] },
      // The same addresses spelled differently: IPv4-mapped IPv6, a decimal integer.
      { url: "http://[::ffff:169.254.169.254]/latest/meta-data/", events: ["task.created"] },
      { url: "http://2852039166/latest/meta-data/", events: ["task.created"] },
      // IPv4-compatible, IPv4-translated and local-use NAT64 spellings of the metadata address.
      { url: "http://[::169.254.169.254]/latest/meta-data/", events: ["task.created"] },
      { url: "http://[::a9fe:a9fe]/latest/meta-data/", events: ["task.created"] },
      { url: "http://[::ffff:0:169.254.169.254]/latest/meta-data/", events: ["task.created"] },
      { url: "http://[64:ff9b:1::a9fe:a9fe]/latest/meta-data/", events: ["task.created"] },
      // Multicast and reserved addresses, in IPv4, IPv6 and embedded forms.
      { url: "http://224.0.0.1/hook", events: ["task.created"] },
      { url: "http://[ff02::1]/hook", events: ["task.created"] },
      { url: "http://[::ffff:239.255.255.250]/hook", events: ["task.created"] },
      { url: "http://240.0.0.1/hook", events: ["task.created"] },
      { url: "http://255.255.255.255/hook", events: ["task.created"] },
      { url: "http://[::0.0.0.0]/hook", events: ["task.created"] },
      { url: "http://user:pass@127.0.0.1/hook", events: ["task.created"] },
      { url: receiver.url(), events: [] },
      { url: receiver.url(), events: ["task.exploded"] },
      { url: receiver.url(), events: ["task.created", "task.exploded"] },
      { url: receiver.url(), events: ["TASK.CREATED"] },
      { url: receiver.url(), events: "task.created" },
      { url: receiver.url() },
      { events: ["task.created"] },
      { url: 42, events: ["task.created"] }
    ]
    for (const body of bad) {
      const res = await alice.api.post("/api/webhooks", body)
      expect(res.status, `${JSON.stringify(body)} -> ${res.text}`).toBe(400)
      expect(res.body.code).toBe("VALIDATION_ERROR")
      expect(typeof res.body.error).toBe("string")
      expect(res.body.details).toEqual(expect.any(Object))
    }
    expect(await countHooks()).toBe(before)

    const hook = await createWebhook(alice.api, receiver.url("/v"), ["task.created"])
    for (const body of [
      { url: "http://169.254.169.254/" },
      { url: "http://[fe80::1]/" },
      { url: "gopher://127.0.0.1/" },
      { events: [] },
      { events: ["task.nope"] },
      { active: "no" }
    ]) {
      const res = await alice.api.patch(`/api/webhooks/${hook.id}`, body)
      expect(res.status, `${JSON.stringify(body)} -> ${res.text}`).toBe(400)
      expect(res.body.code).toBe("VALIDATION_ERROR")
    }
    const listed = ((await alice.api.get("/api/webhooks")).body.data.webhooks as Array<Record<string, unknown>>)
      .find((w) => w.id === hook.id)
    expect(listed).toEqual(omit(hook, "secret", "standard_secret"))

    for (const path of ["/api/webhooks/abc", "/api/webhooks/1.5", "/api/webhooks/-1", "/api/webhooks/99999999999"]) {
      expect((await alice.api.patch(path, { active: false })).status, path).toBe(400)
      expect((await alice.api.delete(path)).status, path).toBe(400)
      expect((await alice.api.get(`${path}/deliveries`)).status, path).toBe(400)
    }
  })

  it("deliveries: the last 50 attempts, newest first, with every field; no secret", async () => {
    const user = await freshUser()
    const hook = await createWebhook(user.api, receiver.url("/log"), ["task.created"])
    expect(await deliveryLog(user.api, hook.id)).toEqual([])
    const titles = Array.from({ length: 55 }, (_, i) => `Log task ${i + 1}`)
    for (const title of titles) await createTask(user.api, { title })
    await settled(service, user.id)

    const log = await deliveryLog(user.api, hook.id)
    expect(log).toHaveLength(50)
    for (const entry of log) expect(Object.keys(entry).sort()).toEqual([...DELIVERY_LOG_FIELDS].sort())
    const [all] = await query<{ ids: Array<number> }>(service, (sql) =>
      sql`SELECT coalesce(array_agg(id::int ORDER BY created_at DESC, id DESC), '{}') AS ids FROM webhook_attempts WHERE webhook_id = ${hook.id}`)
    expect(all!.ids).toHaveLength(55)
    expect(log.map((e) => e.id)).toEqual(all!.ids.slice(0, 50))
    const times = log.map((e) => Date.parse(e.created_at))
    expect([...times].sort((a, b) => b - a)).toEqual(times)

    const requests = receiver.received.filter((r) => r.path === "/log")
    expect(requests).toHaveLength(55)
    const byDelivery = new Map(requests.map((r) => [header(r, "x-service-delivery"), r]))
    for (const entry of log) {
      const request = byDelivery.get(entry.delivery_id)
      expect(request, entry.delivery_id).toBeDefined()
      expect(entry).toMatchObject({
        webhook_id: hook.id,
        event: "task.created",
        status_code: 200,
        error: null,
        attempt: 1,
        success: true
      })
      expect(entry.payload).toEqual(request!.body)
      expect(Number.isInteger(entry.duration_ms) && entry.duration_ms >= 0).toBe(true)
      expect(entry.created_at).toMatch(ISO_MS_Z)
    }
    // The five oldest are not in the page.
    const shown = new Set(log.map((e) => e.payload.data.task.title))
    expect(titles.filter((t) => !shown.has(t)).length).toBe(5)

    const text = (await user.api.get(`/api/webhooks/${hook.id}/deliveries`)).text
    expect(text).not.toContain(hook.secret)
    // Another user cannot read the log.
    expect((await alice.api.get(`/api/webhooks/${hook.id}/deliveries`)).status).toBe(404)
  })

  it("the secret is never sent to the receiver", async () => {
    const user = await freshUser()
    const hook = await createWebhook(user.api, receiver.url("/nosecret"), ["task.created"])
    await createTask(user.api, { title: "Secret keeper" })
    const [request] = await receiver.waitFor(1, 15_000, (r) => r.path === "/nosecret")
    expect(request!.raw.toString("utf8")).not.toContain(hook.secret)
    expect(JSON.stringify(request!.headers)).not.toContain(hook.secret)
  })
})

describe("webhook events (spec §6)", () => {
  let service: TestService
  let alice: TestUser
  let all: Receiver
  let completedOnly: Receiver
  let inactive: Receiver
  let hook: { id: number; secret: string }
  let completedHook: { id: number }

  beforeAll(async () => {
    service = await startService()
    alice = await service.user("alice")
    all = await startReceiver()
    completedOnly = await startReceiver()
    inactive = await startReceiver()
    hook = await createWebhook(alice.api, all.url(), ALL_EVENTS)
    completedHook = await createWebhook(alice.api, completedOnly.url(), ["task.completed"])
    const off = await createWebhook(alice.api, inactive.url(), ALL_EVENTS)
    expect((await alice.api.patch(`/api/webhooks/${off.id}`, { active: false })).status).toBe(200)
  })
  afterAll(async () => {
    await service?.stop()
    await Promise.all([all?.close(), completedOnly?.close(), inactive?.close()])
  })

  const taskIdOf = (r: Received): number | undefined => r.body?.data?.task?.id ?? r.body?.data?.task_id
  /** Every request the all-events receiver got about one task, once nothing is pending any more. */
  const eventsOf = async (taskId: number) => {
    await settled(service, alice.id)
    return all.received.filter((r) => taskIdOf(r) === taskId)
  }
  const names = (requests: ReadonlyArray<Received>) => requests.map((r) => r.body.event)

  /** Every request has exactly the body shape {event, timestamp, data} and a matching header. */
  const checkEnvelope = (r: Received, event: string, dataKeys: ReadonlyArray<string>) => {
    expect(Object.keys(r.body).sort()).toEqual(["data", "event", "timestamp"])
    expect(r.body.event).toBe(event)
    expect(r.body.timestamp).toMatch(ISO_MS_Z)
    expect(Math.abs(Date.parse(r.body.timestamp) - Date.now())).toBeLessThan(120_000)
    expect(header(r, "x-service-event")).toBe(event)
    expect(Object.keys(r.body.data).sort()).toEqual([...dataKeys].sort())
  }

  it("task.created sends {task}, the task as the API answered it", async () => {
    const task = await createTask(alice.api, { title: "Buy oat milk – café ☕", priority: 2, labels: ["shop"] })
    const got = await eventsOf(task.id)
    expect(names(got)).toEqual(["task.created"])
    checkEnvelope(got[0]!, "task.created", ["task"])
    expect(got[0]!.body.data.task).toEqual(task)
  })

  it("task.updated sends {task, fields_changed}; an edit that changes nothing sends nothing", async () => {
    const task = await createTask(alice.api, { title: "Call mum", priority: 1 })
    const res = await alice.api.patch(`/api/tasks/${task.id}`, { title: "Call mum and dad", priority: 3 })
    expect(res.status, res.text).toBe(200)
    const unchanged = await alice.api.patch(`/api/tasks/${task.id}`, { priority: 3 })
    expect(unchanged.body.data.fields_changed).toEqual([])
    const got = await eventsOf(task.id)
    expect(names(got)).toEqual(["task.created", "task.updated"])
    checkEnvelope(got[1]!, "task.updated", ["task", "fields_changed"])
    expect(got[1]!.body.data.fields_changed).toEqual(res.body.data.fields_changed)
    expect(got[1]!.body.data.fields_changed).toEqual(expect.arrayContaining(["title", "priority"]))
    expect(got[1]!.body.data.task).toEqual(omit(res.body.data, "fields_changed", "description"))
  })

  it("task.completed sends {task}", async () => {
    const task = await createTask(alice.api, { title: "File taxes" })
    const res = await alice.api.post(`/api/tasks/${task.id}/done`)
    expect(res.status, res.text).toBe(200)
    const got = await eventsOf(task.id)
    expect(names(got)).toEqual(["task.created", "task.completed"])
    checkEnvelope(got[1]!, "task.completed", ["task"])
    expect(got[1]!.body.data.task).toEqual(omit(res.body.data, "was_recurring", "next_due_at"))
    expect(got[1]!.body.data.task.done).toBe(true)
  })

  it("task.deleted sends {task_id, title}", async () => {
    const task = await createTask(alice.api, { title: "Old idea" })
    expect((await alice.api.delete(`/api/tasks/${task.id}`)).status).toBe(200)
    const got = await eventsOf(task.id)
    expect(names(got)).toEqual(["task.created", "task.deleted"])
    checkEnvelope(got[1]!, "task.deleted", ["task_id", "title"])
    expect(got[1]!.body.data).toEqual({ task_id: task.id, title: "Old idea" })
  })

  it("task.snoozed sends {task, previous_due_at}", async () => {
    const due = later(2)
    const until = later(26)
    const task = await createTask(alice.api, { title: "Water plants", due_at: due })
    const res = await alice.api.post(`/api/tasks/${task.id}/snooze`, { until })
    expect(res.status, res.text).toBe(200)
    const got = await eventsOf(task.id)
    expect(names(got)).toEqual(["task.created", "task.snoozed"])
    checkEnvelope(got[1]!, "task.snoozed", ["task", "previous_due_at"])
    expect(got[1]!.body.data.previous_due_at).toBe(due)
    expect(got[1]!.body.data.task.due_at).toBe(until)
    expect(got[1]!.body.data.task).toEqual(omit(res.body.data, "previous_due_at", "description"))
  })

  it("task.skipped sends {task}; a skip never sends task.completed", async () => {
    const task = await createTask(alice.api, { title: "Stand-up", due_at: later(3), rrule: "FREQ=DAILY" })
    const res = await alice.api.post(`/api/tasks/${task.id}/skip-occurrence`)
    expect(res.status, res.text).toBe(200)
    const got = await eventsOf(task.id)
    expect(names(got)).toEqual(["task.created", "task.skipped"])
    checkEnvelope(got[1]!, "task.skipped", ["task"])
    expect(got[1]!.body.data.task).toEqual(omit(res.body.data, "was_recurring", "description"))
    expect(got[1]!.body.data.task.due_at).not.toBe(task.due_at)
  })

  it("task.progressed sends {task, progress_current, progress_target, met}; progress never sends task.completed", async () => {
    const quota = await createTask(alice.api, { title: "Push-ups", progress_target: 2, rrule: "FREQ=WEEKLY" })
    const expected: Array<[number, boolean]> = []
    for (const [delta, current, met] of [[1, 1, false], [1, 2, true], [5, 7, true], [-6, 1, false], [-100, 0, false]] as const) {
      const res = await alice.api.post(`/api/tasks/${quota.id}/progress`, { delta })
      expect(res.status, res.text).toBe(200)
      expect(res.body.data.progress_current).toBe(current)
      expected.push([current, met])
      // One at a time, so the arrival order is the order of the logs.
      await settled(service, alice.id)
    }
    const got = await eventsOf(quota.id)
    expect(names(got)).toEqual(["task.created", ...expected.map(() => "task.progressed")])
    for (const [i, [current, met]] of expected.entries()) {
      const r = got[i + 1]!
      checkEnvelope(r, "task.progressed", ["task", "progress_current", "progress_target", "met"])
      expect(omit(r.body.data, "task")).toEqual({ progress_current: current, progress_target: 2, met })
      expect(r.body.data.task).toMatchObject({ id: quota.id, progress_current: current, progress_target: 2 })
    }
  })

  it("Did it on a quota reminder sends task.progressed, not task.completed", async () => {
    const quota = await createTask(alice.api, { title: "Drink water", progress_target: 2, rrule: "FREQ=DAILY" })
    const reminders = await alice.api.get("/api/reminders")
    expect(reminders.status, reminders.text).toBe(200)
    // The highest-numbered prompt row of the quota (late in the day both numbers share the last slot).
    const prompt = (reminders.body.data.groups as Array<{ prompts: Array<Record<string, any>> }>)
      .flatMap((g) => g.prompts).filter((p) => p.task_id === quota.id).sort((a, b) => b.number - a.number)[0]
    expect(prompt, "a prompt for the daily quota").toBeDefined()
    const did = await alice.api.post("/api/quota-prompts/did", { keys: [prompt!.prompt_key] })
    expect(did.status, did.text).toBe(200)
    const current = (await alice.api.get(`/api/tasks/${quota.id}`)).body.data.progress_current
    expect(current).toBeGreaterThan(0)
    const got = await eventsOf(quota.id)
    expect(names(got)).toEqual(["task.created", "task.progressed"])
    checkEnvelope(got[1]!, "task.progressed", ["task", "progress_current", "progress_target", "met"])
    expect(omit(got[1]!.body.data, "task")).toEqual({ progress_current: current, progress_target: 2, met: current >= 2 })
  })

  it("a quota period rollover records the period and sends nothing", async () => {
    const quota = await createTask(alice.api, { title: "Read", progress_target: 3, rrule: "FREQ=DAILY" })
    expect((await alice.api.post(`/api/tasks/${quota.id}/progress`, { delta: 2 })).status).toBe(200)
    const before = await eventsOf(quota.id)
    expect(names(before)).toEqual(["task.created", "task.progressed"])
    const rowsBefore = await deliveryRows(service, hook.id)

    await shiftPeriodBack(service, quota.id, 3)
    await sweep(service)
    const periods = await periodRows(service, quota.id)
    expect(periods.length).toBeGreaterThanOrEqual(1)
    expect(periods[0]).toMatchObject({ count: 2, target: 3, met: false })
    expect((await alice.api.get(`/api/tasks/${quota.id}`)).body.data.progress_current).toBe(0)

    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(names(await eventsOf(quota.id))).toEqual(["task.created", "task.progressed"])
    expect(await deliveryRows(service, hook.id)).toHaveLength(rowsBefore.length)
  })

  it("undo and redo send task.updated with the fields they changed", async () => {
    const task = await createTask(alice.api, { title: "Draft letter" })
    expect((await alice.api.patch(`/api/tasks/${task.id}`, { title: "Draft the letter" })).status).toBe(200)
    await settled(service, alice.id)
    const undo = await alice.api.post("/api/undo")
    expect(undo.status, undo.text).toBe(200)
    await settled(service, alice.id)
    const redo = await alice.api.post("/api/redo")
    expect(redo.status, redo.text).toBe(200)
    const got = await eventsOf(task.id)
    expect(names(got)).toEqual(["task.created", "task.updated", "task.updated", "task.updated"])
    const [, , undone, redone] = got
    checkEnvelope(undone!, "task.updated", ["task", "fields_changed"])
    expect(undone!.body.data.fields_changed).toContain("title")
    expect(undone!.body.data.task.title).toBe("Draft letter")
    checkEnvelope(redone!, "task.updated", ["task", "fields_changed"])
    expect(redone!.body.data.fields_changed).toContain("title")
    expect(redone!.body.data.task.title).toBe("Draft the letter")
  })

  it("undoing a delete sends task.updated (not task.created) with deleted_at changed", async () => {
    const task = await createTask(alice.api, { title: "Back from the trash" })
    // Deliveries run concurrently, so only settled writes arrive in their order.
    await settled(service, alice.id)
    expect((await alice.api.delete(`/api/tasks/${task.id}`)).status).toBe(200)
    await settled(service, alice.id)
    expect((await alice.api.post("/api/undo")).status).toBe(200)
    const got = await eventsOf(task.id)
    expect(names(got)).toEqual(["task.created", "task.deleted", "task.updated"])
    expect(got[2]!.body.data.fields_changed).toEqual(["deleted_at"])
    expect(got[2]!.body.data.task).toMatchObject({ id: task.id, deleted_at: null })
  })

  it("only subscribed events reach a webhook; an inactive one gets nothing", async () => {
    const task = await createTask(alice.api, { title: "Subscribed" })
    expect((await alice.api.post(`/api/tasks/${task.id}/done`)).status).toBe(200)
    await settled(service, alice.id)
    const completedSeen = all.received.filter((r) => r.body.event === "task.completed")
    expect(completedSeen.length).toBeGreaterThanOrEqual(2)
    expect(completedOnly.received.map((r) => r.body.event)).toEqual(completedSeen.map(() => "task.completed"))
    expect(new Set(completedOnly.received.map(taskIdOf))).toEqual(new Set(completedSeen.map(taskIdOf)))
    expect(inactive.received).toEqual([])
    // Its outbox holds only task.completed rows; the inactive webhook has none.
    const rows = await deliveryRows(service, completedHook.id)
    expect(new Set(rows.map((r) => r.event))).toEqual(new Set(["task.completed"]))
  })

  it("changing the events of a webhook changes what it receives from then on", async () => {
    const receiver = await startReceiver()
    try {
      const user = await service.user("switcher")
      const w = await createWebhook(user.api, receiver.url(), ["task.created"])
      const first = await createTask(user.api, { title: "First" })
      await settled(service, user.id)
      expect((await user.api.patch(`/api/webhooks/${w.id}`, { events: ["task.deleted"] })).status).toBe(200)
      const second = await createTask(user.api, { title: "Second" })
      expect((await user.api.delete(`/api/tasks/${first.id}`)).status).toBe(200)
      await settled(service, user.id)
      expect(receiver.received.map((r) => [r.body.event, taskIdOf(r)])).toEqual([
        ["task.created", first.id],
        ["task.deleted", first.id]
      ])
      expect(second.id).not.toBe(first.id)
    } finally {
      await receiver.close()
    }
  })
})
