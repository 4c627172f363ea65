import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Receiver, startReceiver } from "./support/receiver.js"
import { startService, type TestService } from "./support/service.js"
import { createTask } from "./support/tasks.js"
import { createWebhook } from "./support/webhooks.js"

/*
 * A backlog of deliveries goes out as fast as the receiver answers: a delivery that ends
 * frees its slot and the dispatcher claims the next one at once. (It used to wait for the
 * next 1 s poll whenever all 16 slots had been busy and no other write woke it, so a
 * backlog drained at 16 deliveries a second; with one user's share of 4 slots it would
 * drain at 4 a second.)
 */

describe("webhook backlog", () => {
  let service: TestService
  let receiver: Receiver | undefined

  beforeAll(async () => {
    service = await startService({ webhookAllowPrivate: true, webhookDispatch: true })
  })
  afterAll(async () => {
    await service?.stop()
    await receiver?.close()
  })

  it("100 deliveries written by one transaction arrive well within the 25 s polling would take", async () => {
    const user = await service.user("backlog")
    receiver = await startReceiver()
    // 20 webhooks (the per-user cap) × 5 completions in one bulk action; one user holds at
    // most 4 of the 16 slots, so 25 rounds.
    const HOOKS = 20
    for (let i = 0; i < HOOKS; i++) await createWebhook(user.api, receiver.url(`/hook/${i}`), ["task.completed"])
    const ids = []
    for (let i = 0; i < 5; i++) ids.push((await createTask(user.api, { title: `Fan-out ${i}` })).id)
    // One transaction, one wake-up, then nothing else writes.
    const startedAt = Date.now()
    const res = await user.api.post("/api/tasks/bulk/done", { ids })
    expect(res.status).toBe(200)
    const received = await receiver.waitFor(HOOKS * ids.length, 30_000)
    const elapsed = Date.now() - startedAt
    expect(new Set(received.map((r) => r.headers["x-service-delivery"])).size).toBe(HOOKS * ids.length)
    expect(new Set(received.map((r) => r.path)).size).toBe(HOOKS)
    // At one poll a second, 100 deliveries 4 at a time would take over 24 s; the bound leaves
    // room for a loaded machine (about 2 s here).
    expect(elapsed).toBeLessThan(10_000)
  }, 45_000)
})
