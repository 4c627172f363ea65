import { expect } from "vitest"
import { eventually } from "./receiver.js"
import { query } from "./rows.js"
import type { Client, TestService } from "./service.js"

export const ALL_EVENTS = [
  "task.created",
  "task.updated",
  "task.completed",
  "task.deleted",
  "task.snoozed",
  "task.skipped",
  "task.progressed"
] as const

export const WEBHOOK_FIELDS = ["active", "created_at", "events", "id", "updated_at", "url", "user_id"] as const
export const DELIVERY_LOG_FIELDS = [
  "attempt", "created_at", "delivery_id", "duration_ms", "error", "event", "id", "payload", "status_code", "success", "webhook_id"
] as const

export interface CreatedWebhook {
  readonly id: number
  readonly secret: string
  readonly [k: string]: unknown
}

/** POST /api/webhooks; fails the test on anything but 201. */
export const createWebhook = async (
  api: Client,
  url: string,
  events: ReadonlyArray<string> = ALL_EVENTS
): Promise<CreatedWebhook> => {
  const res = await api.post("/api/webhooks", { url, events })
  if (res.status !== 201) throw new Error(`POST /api/webhooks ${url} -> ${res.status} ${res.text}`)
  return res.body.data
}

/** One row of the outbox as stored. */
export interface DeliveryRow {
  readonly id: number
  readonly webhook_id: number
  readonly delivery_id: string
  readonly event: string
  readonly body: string
  readonly status: string
  readonly attempts: number
  readonly lease_until: string | null
}

export const deliveryRows = (service: TestService, webhookId: number) =>
  query<DeliveryRow>(service, (sql) =>
    sql<DeliveryRow>`SELECT id::int AS id, webhook_id, delivery_id, event, body, status, attempts,
        steady_iso(lease_until) AS lease_until
      FROM webhook_deliveries WHERE webhook_id = ${webhookId} ORDER BY id`)

/** GET /api/webhooks/{id}/deliveries; fails the test on anything but 200. */
export const deliveryLog = async (api: Client, webhookId: number): Promise<Array<Record<string, any>>> => {
  const res = await api.get(`/api/webhooks/${webhookId}/deliveries`)
  expect(res.status, res.text).toBe(200)
  return res.body.data.deliveries
}

/** Waits until none of the user's outbox rows is pending any more. */
export const settled = (service: TestService, userId: number, timeoutMs = 20_000) =>
  eventually(async () => {
    const [row] = await query<{ n: number }>(service, (sql) =>
      sql`SELECT count(*)::int AS n FROM webhook_deliveries WHERE user_id = ${userId} AND status = 'pending'`)
    return row!.n === 0 ? true : undefined
  }, timeoutMs, "every delivery to leave pending")
