import { ConfigProvider, Effect } from "effect"
import * as Net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { appConfig } from "../src/kernel/AppConfig.js"
import { freshDatabase, type TestDatabase } from "./support/database.js"
import {
  closedPort,
  eventually,
  expectedServiceSignature,
  header,
  type Receiver,
  sleep,
  startReceiver,
  verifySignatures
} from "./support/receiver.js"
import { type Client, startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, ISO_MS_Z } from "./support/tasks.js"
import { createWebhook, deliveryLog, deliveryRows, settled } from "./support/webhooks.js"

/*
 * How deliveries go out (spec §6 delivery behaviour; WebhookSender.ts, WebhookDispatcher.ts): headers and
 * signatures checked by a real receiver on 127.0.0.1, the retry schedule, timeouts,
 * connection errors and the private-address rule.
 */

describe("webhook delivery (spec §6)", () => {
  let service: TestService
  const receivers: Array<Receiver> = []
  let counter = 0
  /** Each test has its own user, so no other test's webhooks see its events. */
  const freshUser = () => service.user(`deliver${++counter}`)
  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const r = await startReceiver(...args)
    receivers.push(r)
    return r
  }

  beforeAll(async () => {
    service = await startService({ webhookAllowPrivate: true, webhookDispatch: true })
  })
  afterAll(async () => {
    await service?.stop()
    await Promise.all(receivers.map((r) => r.close()))
  })

  it("signs the raw body: X-Service-Signature, X-Service-Delivery and the Standard Webhooks headers", async () => {
    const user = await freshUser()
    const r = await receiver()
    const hook = await createWebhook(user.api, r.url(), ["task.created"])
    // Non-ASCII text makes bytes and characters differ, so a signature over anything but the raw bytes fails.
    const task = await createTask(user.api, { title: "Café crème ☕ — naïve \u{1F600} \"quoted\" \\ slash" })
    const [request] = await r.waitFor(1)
    const sentAt = Date.now()

    expect(request!.method).toBe("POST")
    expect(request!.path).toBe("/hook")
    expect(header(request!, "content-type")).toMatch(/^application\/json\b/)
    expect(header(request!, "x-service-event")).toBe("task.created")
    expect(request!.body).toMatchObject({ event: "task.created", data: { task: { id: task.id, title: task.title } } })
    expect(Number(header(request!, "content-length"))).toBe(request!.raw.length)

    // Spec §6 signature: sha256=<hex HMAC-SHA256 of the raw body, keyed with the secret>.
    expect(header(request!, "x-service-signature")).toMatch(/^sha256=[0-9a-f]{64}$/)
    expect(header(request!, "x-service-signature")).toBe(expectedServiceSignature(hook.secret, request!.raw))
    // A receiver holding another secret would reject it.
    expect(header(request!, "x-service-signature")).not.toBe(expectedServiceSignature("0".repeat(64), request!.raw))

    // The delivery id is the one stored in the outbox, so a receiver can deduplicate retries; webhook-id is the same.
    const [row] = await deliveryRows(service, hook.id)
    expect(header(request!, "x-service-delivery")).toBe(row!.delivery_id)
    expect(header(request!, "webhook-id")).toBe(row!.delivery_id)
    // The body bytes are the ones frozen at commit.
    expect(request!.raw.toString("utf8")).toBe(row!.body)
    const timestamp = header(request!, "webhook-timestamp")
    expect(timestamp).toMatch(/^\d{10}$/)
    expect(Math.abs(Number(timestamp) - sentAt / 1000)).toBeLessThan(60)
    expect(header(request!, "webhook-signature")).toMatch(/^v1,[A-Za-z0-9+/]+={0,2}$/)
    expect(verifySignatures(hook.secret, request!)).toEqual({ service: true, standard: true })
    expect(verifySignatures("f".repeat(64), request!)).toEqual({ service: false, standard: false })

    const log = await eventually(async () => {
      const entries = await deliveryLog(user.api, hook.id)
      return entries.length === 1 ? entries : undefined
    })
    expect(log[0]).toMatchObject({
      webhook_id: hook.id,
      delivery_id: row!.delivery_id,
      event: "task.created",
      status_code: 200,
      error: null,
      attempt: 1,
      success: true
    })
    expect(log[0]!.payload).toEqual(request!.body)
    expect(log[0]!.created_at).toMatch(ISO_MS_Z)
    // The outbox row is finished just after the attempt is logged.
    await settled(service, user.id)
    expect((await deliveryRows(service, hook.id))[0]).toMatchObject({ status: "delivered", attempts: 1, lease_until: null })
  })

  it("any 2xx is a success: 204 and 202 are not retried", async () => {
    const user = await freshUser()
    const r = await receiver((_, i) => (i === 0 ? 204 : 202))
    const hook = await createWebhook(user.api, r.url(), ["task.created"])
    await createTask(user.api, { title: "No content" })
    await createTask(user.api, { title: "Accepted" })
    await r.waitFor(2)
    await eventually(async () => {
      const rows = await deliveryRows(service, hook.id)
      return rows.every((d) => d.status === "delivered") ? rows : undefined
    })
    await sleep(1_800)
    expect(r.received).toHaveLength(2)
    const log = await deliveryLog(user.api, hook.id)
    expect(log.map((e) => [e.status_code, e.success, e.attempt]).sort()).toEqual([[202, true, 1], [204, true, 1]])
  })

  it("500, 500, 200: three attempts about 1 s and 5 s apart, one delivery id, each logged", async () => {
    const user = await freshUser()
    const statuses = [500, 500, 200]
    const r = await receiver((_, i) => statuses[i] ?? 200)
    const hook = await createWebhook(user.api, r.url(), ["task.created"])
    await createTask(user.api, { title: "Flaky receiver" })
    const requests = await r.waitFor(3, 20_000)
    const [first, second, third] = requests

    const gap1 = second!.at - first!.at
    const gap2 = third!.at - second!.at
    expect(gap1, `first retry after ${gap1} ms`).toBeGreaterThanOrEqual(800)
    expect(gap1, `first retry after ${gap1} ms`).toBeLessThanOrEqual(3_000)
    expect(gap2, `second retry after ${gap2} ms`).toBeGreaterThanOrEqual(4_500)
    expect(gap2, `second retry after ${gap2} ms`).toBeLessThanOrEqual(8_000)

    // The same delivery, byte for byte, under one id; each attempt signed.
    const ids = new Set(requests.map((q) => header(q, "x-service-delivery")))
    expect(ids.size).toBe(1)
    expect(new Set(requests.map((q) => header(q, "webhook-id")))).toEqual(ids)
    expect(new Set(requests.map((q) => q.raw.toString("base64"))).size).toBe(1)
    for (const q of requests) expect(verifySignatures(hook.secret, q)).toEqual({ service: true, standard: true })

    const log = await eventually(async () => {
      const entries = await deliveryLog(user.api, hook.id)
      return entries.length === 3 ? entries : undefined
    })
    const [id] = [...ids]
    expect(log.map((e) => ({ attempt: e.attempt, status_code: e.status_code, success: e.success, error: e.error, delivery_id: e.delivery_id })))
      .toEqual([
        { attempt: 3, status_code: 200, success: true, error: null, delivery_id: id },
        { attempt: 2, status_code: 500, success: false, error: null, delivery_id: id },
        { attempt: 1, status_code: 500, success: false, error: null, delivery_id: id }
      ])
    await settled(service, user.id)
    const rows = await deliveryRows(service, hook.id)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ delivery_id: id, status: "delivered", attempts: 3, lease_until: null })
    await sleep(1_500)
    expect(r.received).toHaveLength(3)
  })

  it("500 three times: three attempts, then it stops, logged as failures", async () => {
    const user = await freshUser()
    const r = await receiver(() => 500)
    const hook = await createWebhook(user.api, r.url(), ["task.created"])
    await createTask(user.api, { title: "Broken receiver" })
    await r.waitFor(3, 20_000)
    await eventually(async () => ((await deliveryRows(service, hook.id))[0]?.status === "failed" ? true : undefined))
    // Nothing after the third: the next delay would have been due by now if there were one.
    await sleep(2_500)
    expect(r.received).toHaveLength(3)
    const log = await deliveryLog(user.api, hook.id)
    expect(log.map((e) => [e.attempt, e.status_code, e.success])).toEqual([[3, 500, false], [2, 500, false], [1, 500, false]])
    expect((await deliveryRows(service, hook.id))[0]).toMatchObject({ status: "failed", attempts: 3, lease_until: null })
  })

  it("a hanging receiver never blocks the task operation; after 10 s the attempt is logged as a timeout", async () => {
    const user = await freshUser()
    const r = await receiver(() => "hang")
    const hook = await createWebhook(user.api, r.url(), ["task.created", "task.updated"])

    const created = await user.api.post("/api/tasks", { title: "Behind a slow receiver" })
    expect(created.status, created.text).toBe(201)
    // The delivery happens in the background; the receiver holds it open.
    const [held] = await r.waitFor(1)
    const heldAt = Date.now()
    expect(held!.body.data.task.id).toBe(created.body.data.id)
    // While that request hangs the service goes on answering, and writes more events.
    const edited = await user.api.patch(`/api/tasks/${created.body.data.id}`, { title: "Still answering" })
    expect(edited.status, edited.text).toBe(200)
    expect((await user.api.get(`/api/tasks/${created.body.data.id}`)).status).toBe(200)
    await r.waitFor(2)

    const log = await eventually(async () => {
      const entries = await deliveryLog(user.api, hook.id)
      return entries.some((e) => e.event === "task.created") ? entries : undefined
    }, 16_000, "the timed-out attempt in the log")
    const attempt = log.find((e) => e.event === "task.created")!
    expect(Date.now() - heldAt).toBeGreaterThanOrEqual(8_500)
    expect(attempt).toMatchObject({ attempt: 1, status_code: null, error: "timeout", success: false })
    expect(attempt.duration_ms).toBeGreaterThanOrEqual(9_500)
    expect(attempt.duration_ms).toBeLessThan(15_000)
    // Stop the retries: they would hang 10 s each.
    expect((await user.api.patch(`/api/webhooks/${hook.id}`, { active: false })).status).toBe(200)
  })

  it("a closed port is logged as connection refused, with no status code", async () => {
    const user = await freshUser()
    const port = await closedPort()
    const hook = await createWebhook(user.api, `http://127.0.0.1:${port}/hook`, ["task.created"])
    await createTask(user.api, { title: "Nobody home" })
    const log = await eventually(async () => {
      const entries = await deliveryLog(user.api, hook.id)
      return entries.length > 0 ? entries : undefined
    })
    expect(log[0]).toMatchObject({ attempt: 1, status_code: null, error: "connection refused", success: false, event: "task.created" })
    expect(Number.isInteger(log[0]!.duration_ms)).toBe(true)
  })

  it("a port that answers without HTTP, or resets, is logged as connection failed, never the socket's own error", async () => {
    const user = await freshUser()
    const sockets = new Set<Net.Socket>()
    const servers = [
      // A banner instead of an HTTP answer, as SSH, SMTP or a database might send.
      Net.createServer((socket) => socket.end("SSH-2.0-OpenSSH_9.6\r\n")),
      Net.createServer((socket) => socket.resetAndDestroy())
    ]
    for (const server of servers) server.on("connection", (socket) => sockets.add(socket))
    try {
      const ports = await Promise.all(servers.map((server) =>
        new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as Net.AddressInfo).port)))
      ))
      const hooks = await Promise.all(ports.map((port) => createWebhook(user.api, `http://127.0.0.1:${port}/hook`, ["task.created"])))
      await createTask(user.api, { title: "Not a receiver" })
      for (const hook of hooks) {
        const log = await eventually(async () => {
          const entries = await deliveryLog(user.api, hook.id)
          return entries.length > 0 ? entries : undefined
        })
        expect(log[0]).toMatchObject({ attempt: 1, status_code: null, error: "connection failed", success: false })
        expect((await user.api.patch(`/api/webhooks/${hook.id}`, { active: false })).status).toBe(200)
      }
    } finally {
      for (const socket of sockets) socket.destroy()
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))
    }
  })

  it("Azure's wire server and Teredo addresses are refused at create in every spelling, private addresses allowed or not (400)", async () => {
    const user = await freshUser()
    for (
      const url of [
        "http://168.63.129.16/machine?comp=goalstate",
        "http://2822734096/",
        "http://0xa8.0x3f.0x81.0x10/",
        "http://[::ffff:168.63.129.16]/",
        "http://[64:ff9b::a83f:8110]/",
        "http://[2002:a83f:8110::1]/",
        "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
        "http://[2001:0000:4136:E378:8000:63BF:3FFF:FDD2]:8080/hook",
        "http://[2001::1]/"
      ]
    ) {
      const res = await user.api.post("/api/webhooks", { url, events: ["task.created"] })
      expect(res.status, `${url} -> ${res.text}`).toBe(400)
      expect(res.body.code).toBe("VALIDATION_ERROR")
    }
    expect((await user.api.get("/api/webhooks")).body.data.webhooks).toEqual([])
  })

  it("redirects are not followed: a 302 is a failed attempt and its target is never called", async () => {
    const user = await freshUser()
    const r = await receiver((q) => (q.path === "/moved" ? { status: 302, headers: { location: "/elsewhere" } } : 200))
    const hook = await createWebhook(user.api, r.url("/moved"), ["task.created"])
    await createTask(user.api, { title: "Redirected" })
    const log = await eventually(async () => {
      const entries = await deliveryLog(user.api, hook.id)
      return entries.length > 0 ? entries : undefined
    })
    expect(log[0]).toMatchObject({ attempt: 1, status_code: 302, success: false })
    await sleep(300)
    expect(r.received.map((q) => q.path)).not.toContain("/elsewhere")
  })
})

describe("private addresses (SERVICE_WEBHOOK_ALLOW_PRIVATE)", () => {
  let db: TestDatabase
  let service: TestService | undefined
  let user: TestUser
  let api: Client
  let r: Receiver
  let byName: { id: number; secret: string }
  let byAddress: { id: number; secret: string }
  let byEmbedded: { id: number; secret: string }

  beforeAll(async () => {
    db = await freshDatabase()
    r = await startReceiver()
    // Registered while private addresses are allowed, with dispatch off so nothing goes out yet...
    const allowing = await startService({ webhookAllowPrivate: true, webhookDispatch: false }, db)
    try {
      user = await allowing.user("homelab")
      byName = await createWebhook(user.api, `http://localhost:${r.port}/by-name`, ["task.created"])
      byAddress = await createWebhook(user.api, r.url("/by-address"), ["task.created"])
      // Loopback spelled as an IPv4-translated IPv6 address.
      byEmbedded = await createWebhook(user.api, `http://[::ffff:0:127.0.0.1]:${r.port}/by-embedded`, ["task.created"])
    } finally {
      await allowing.stop()
    }
    // ...then delivered by a service that refuses them.
    service = await startService({ webhookAllowPrivate: false, webhookDispatch: true }, db)
    api = service.client({ authorization: `Bearer ${user.token}` })
  })
  afterAll(async () => {
    await service?.stop()
    await r?.close()
    await db?.drop()
  })

  it("a loopback or private literal address is refused at create and at PATCH (400)", async () => {
    for (const url of [
      r.url(),
      "http://127.0.0.2:8080/hook",
      "http://10.1.2.3/hook",
      "http://192.168.1.10/hook",
      "http://172.16.0.1/hook",
      `http://[::1]:${r.port}/hook`,
      "http://[::ffff:127.0.0.1]/hook",
      `http://[::127.0.0.1]:${r.port}/hook`,
      `http://[::7f00:1]:${r.port}/hook`,
      `http://[::ffff:0:127.0.0.1]:${r.port}/hook`,
      `http://[64:ff9b:1::7f00:1]:${r.port}/hook`,
      "http://[::10.1.2.3]/hook",
      "http://100.64.0.1/hook",
      "http://169.254.169.254/latest/meta-data/"
    ]) {
      const res = await api.post("/api/webhooks", { url, events: ["task.created"] })
      expect(res.status, `${url} -> ${res.text}`).toBe(400)
      expect(res.body.code).toBe("VALIDATION_ERROR")
    }
    const res = await api.patch(`/api/webhooks/${byName.id}`, { url: r.url("/patched") })
    expect(res.status, res.text).toBe(400)
    const list = (await api.get("/api/webhooks")).body.data.webhooks as Array<{ id: number; url: string }>
    expect(list.find((w) => w.id === byName.id)!.url).toBe(`http://localhost:${r.port}/by-name`)
  })

  it("a host name resolving to 127.0.0.1, and a stored loopback address (also as ::ffff:0:127.0.0.1), are blocked at connect time", async () => {
    await createTask(api, { title: "Should not leave" })
    for (const hook of [byName, byAddress, byEmbedded]) {
      const log = await eventually(async () => {
        const entries = await deliveryLog(api, hook.id)
        return entries.length > 0 ? entries : undefined
      })
      expect(log[0]).toMatchObject({ attempt: 1, status_code: null, success: false })
      expect(log[0]!.error).toMatch(/^blocked/)
    }
    await sleep(500)
    expect(r.received).toEqual([])
  })
})

describe("private targets refused (SERVICE_WEBHOOK_ALLOW_PRIVATE=false)", () => {
  let service: TestService
  let user: TestUser

  beforeAll(async () => {
    const refusing = Effect.runSync(
      Effect.withConfigProvider(appConfig, ConfigProvider.fromMap(new Map([["SERVICE_WEBHOOK_ALLOW_PRIVATE", "false"]])))
    )
    service = await startService({ webhookAllowPrivate: refusing.webhookAllowPrivate, webhookDispatch: true })
    user = await service.user("no-homelab")
  })
  afterAll(async () => {
    await service?.stop()
  })

  it("the service's own port, PostgreSQL's and a closed port on loopback are refused at create (400), nothing stored", async () => {
    for (
      const url of [
        `${service.baseUrl}/api/tasks`,
        "http://127.0.0.1:4811/api/health",
        "http://127.0.0.1:5432/",
        "http://127.0.0.1:1/",
        "http://[::1]:5432/",
        "http://10.0.0.1/hook",
        "http://192.168.1.10:8123/api/webhook/x"
      ]
    ) {
      const res = await user.api.post("/api/webhooks", { url, events: ["task.created"] })
      expect(res.status, `${url} -> ${res.text}`).toBe(400)
      expect(res.body.details.url).toMatch(/private/)
    }
    expect((await user.api.get("/api/webhooks")).body.data.webhooks).toEqual([])
  })

  it("a host name resolving to loopback is blocked at connect time, and the log names no address", async () => {
    const port = await closedPort()
    const hook = await createWebhook(user.api, `http://localhost:${port}/hook`, ["task.created"])
    await createTask(user.api, { title: "Stays home" })
    const log = await eventually(async () => {
      const entries = await deliveryLog(user.api, hook.id)
      return entries.length > 0 ? entries : undefined
    })
    expect(log[0]).toMatchObject({ attempt: 1, status_code: null, success: false, error: "blocked: private (SERVICE_WEBHOOK_ALLOW_PRIVATE is not true)" })
    await settled(service, user.id)
    expect(await deliveryLog(user.api, hook.id)).toHaveLength(1)
  })
})
