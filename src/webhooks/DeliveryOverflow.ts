/**
 * What a write's events do to its user's webhook deliveries (CONTRACT §9), as a pure function:
 * the TypeScript twin of `steady_deliver` (migrations/functions/steady_deliver.sql), which runs
 * inside the commit statement. test/sql-rules.test.ts evaluates both on random backlogs.
 *
 * Each event makes one delivery per active webhook subscribed to it. At most `max`
 * deliveries wait per webhook (MAX_PENDING_PER_WEBHOOK): the newest are kept, the write's own
 * first. Beyond `max` of them in one write, the older ones are written already dropped; what
 * was waiting is kept, newest first, in the room they leave, and the rest is dropped, except
 * deliveries in flight (leased), which take room but are left alone.
 */

export interface DeliveryWebhook {
  readonly id: number
  readonly active: boolean
  readonly events: ReadonlyArray<string>
}

/** A delivery row already there; `leased` when `lease_until` is set (a dispatcher holds it). */
export interface KnownDelivery {
  readonly id: number
  readonly webhook_id: number
  readonly status: "pending" | "delivered" | "failed" | "dropped"
  readonly leased: boolean
}

/** An event of the write, `n` its place in the write's order. */
export interface WriteEvent {
  readonly n: number
  readonly event: string
}

export interface NewDelivery {
  readonly webhook_id: number
  readonly n: number
  readonly status: "pending" | "dropped"
}

export interface Delivered {
  /** The rows written, in the order they are inserted (event order, then webhook). */
  readonly written: ReadonlyArray<NewDelivery>
  /** The known deliveries set to `dropped`, by id. */
  readonly dropped: ReadonlyArray<number>
}

/** `webhooks` are the user's (active or not); `known` their delivery rows. */
export const deliver = (
  webhooks: ReadonlyArray<DeliveryWebhook>,
  known: ReadonlyArray<KnownDelivery>,
  events: ReadonlyArray<WriteEvent>,
  max: number
): Delivered => {
  const written: Array<NewDelivery> = []
  const dropped: Array<number> = []
  for (const webhook of webhooks) {
    const fresh = webhook.active ? events.filter((e) => webhook.events.includes(e.event)) : []
    const newestFirst = [...fresh].sort((a, b) => b.n - a.n)
    newestFirst.forEach((e, i) => written.push({ webhook_id: webhook.id, n: e.n, status: i < max ? "pending" : "dropped" }))
    const room = Math.max(max - fresh.length, 0)
    known
      .filter((d) => d.webhook_id === webhook.id && d.status === "pending")
      .sort((a, b) => b.id - a.id)
      .slice(room)
      .forEach((d) => {
        if (!d.leased) dropped.push(d.id)
      })
  }
  return {
    written: written.sort((a, b) => a.n - b.n || a.webhook_id - b.webhook_id),
    dropped: dropped.sort((a, b) => a - b)
  }
}
