import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Receiver, startReceiver } from "./support/receiver.js"
import { startService, type TestService } from "./support/service.js"
import { createTask } from "./support/tasks.js"
import { createWebhook } from "./support/webhooks.js"

/*
 * A backlog of deliveries goes out as fast as the receiver answers: a delivery that ends
 * frees its slot and the dispatcher claims the next one at once. (It used to wait for the
 * next 1 s poll whenever all 16 slots had been busy and no other write woke it, so a
 * backlog drained at 16 deliveries a second.)
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

  it("96 deliveries written by one transaction arrive well within the 6 s polling would take", async () => {
    const user = await service.user("backlog")
    receiver = await startReceiver()
    const HOOKS = 96
    for (let i = 0; i < HOOKS; i++) await createWebhook(user.api, receiver.url(`/hook/${i}`), ["task.created"])
    // One task, one event, one delivery per webhook, all written in the same transaction:
    // one wake-up, then nothing else writes.
    const startedAt = Date.now()
    await createTask(user.api, { title: "Fan-out" })
    const received = await receiver.waitFor(HOOKS, 20_000)
    const elapsed = Date.now() - startedAt
    expect(new Set(received.map((r) => r.path)).size).toBe(HOOKS)
    // 96 / 16 slots = 6 rounds; at one poll a second that is over 5 s.
    expect(elapsed).toBeLessThan(3_000)
  }, 30_000)
})
