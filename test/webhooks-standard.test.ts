import * as Crypto from "node:crypto"
import { Webhook, WebhookVerificationError } from "standardwebhooks"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Receiver, startReceiver } from "./support/receiver.js"
import { startService, type TestService } from "./support/service.js"
import { createWebhook } from "./support/webhooks.js"

/**
 * A receiver built on the Standard Webhooks reference library verifies real deliveries the
 * way its README says: `new Webhook(standard_secret)` and `verify(body, headers)`; one that
 * checks `X-Service-Signature` by hand uses `secret` as the HMAC key. Both keys are the same.
 */
describe("webhooks a standard receiver can verify", () => {
  let service: TestService
  let receiver: Receiver

  beforeAll(async () => {
    service = await startService({ webhookAllowPrivate: true, webhookDispatch: true })
    receiver = await startReceiver()
  })
  afterAll(async () => {
    await service?.stop()
    await receiver?.close()
  })

  it("verifies with the standardwebhooks package's default, and by hand with the hex secret", async () => {
    const user = await service.user("standard")
    const hook = await createWebhook(user.api, receiver.url("/hook"), ["task.created"])
    expect(hook.standard_secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/)
    const created = await user.api.post("/api/tasks", { title: "Verify me — ünïcode" })
    expect(created.status).toBe(201)
    const [delivery] = await receiver.waitFor(1)
    const headers = delivery!.headers as Record<string, string>

    // Standard Webhooks: the library's documented default, the whsec_ key as it is.
    const verified = new Webhook(hook.standard_secret as string).verify(delivery!.raw.toString("utf8"), headers) as any
    expect(verified).toEqual(delivery!.body)
    expect(verified.data.task).toMatchObject({ id: created.body.data.id, title: "Verify me — ünïcode" })
    // The hex secret is not a whsec_ key: given as it is, the library rejects every signature…
    expect(() => new Webhook(hook.secret).verify(delivery!.raw.toString("utf8"), headers)).toThrow(WebhookVerificationError)
    // …but it is the same key: its UTF-8 bytes, given raw, verify too.
    expect(() => new Webhook(hook.secret, { format: "raw" }).verify(delivery!.raw.toString("utf8"), headers)).not.toThrow()
    // A tampered body fails.
    expect(() => new Webhook(hook.standard_secret as string).verify(delivery!.raw.toString("utf8").replace("Verify", "Forged"), headers))
      .toThrow(WebhookVerificationError)

    // X-Service-Signature by hand: HMAC-SHA256 of the raw body keyed with the secret's UTF-8 bytes.
    const expected = `sha256=${Crypto.createHmac("sha256", Buffer.from(hook.secret, "utf8")).update(delivery!.raw).digest("hex")}`
    expect(headers["x-service-signature"]).toBe(expected)
  })
})
