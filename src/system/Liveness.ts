import { Context, Effect, type Fiber, Layer, Option, type Scope } from "effect"

/** The background fibers readiness reports on (`GET /api/health/ready`). */
export const WATCHED_FIBERS = [
  "quota_rollover",
  "reminder_roll_forward",
  "webhook_dispatcher",
  "enrichment",
  "ai_maintenance",
  "purges"
] as const
export type WatchedFiber = typeof WATCHED_FIBERS[number]

/** running; disabled by configuration; stopped (ended or died); never started. */
export type FiberState = "running" | "disabled" | "stopped" | "not_started"

/** Which background fibers this instance started and whether they still run. */
export class LivenessRegistry {
  private readonly fibers = new Map<WatchedFiber, Fiber.RuntimeFiber<unknown, unknown>>()
  private readonly disabled = new Set<WatchedFiber>()

  register(name: WatchedFiber, fiber: Fiber.RuntimeFiber<unknown, unknown>): void {
    this.fibers.set(name, fiber)
  }

  markDisabled(name: WatchedFiber): void {
    this.disabled.add(name)
  }

  report(): Record<WatchedFiber, FiberState> {
    const out = {} as Record<WatchedFiber, FiberState>
    for (const name of WATCHED_FIBERS) {
      const fiber = this.fibers.get(name)
      out[name] = fiber !== undefined
        ? (fiber.unsafePoll() === null ? "running" : "stopped")
        : this.disabled.has(name)
        ? "disabled"
        : "not_started"
    }
    return out
  }
}

export class Liveness extends Context.Tag("steady/Liveness")<Liveness, LivenessRegistry>() {
  static readonly Live = Layer.sync(Liveness, () => new LivenessRegistry())
}

/**
 * `Effect.forkScoped`, with the fiber registered for readiness. Optional: a host that runs
 * the scheduler without `Liveness` forks exactly as before.
 */
export const forkWatched = (name: WatchedFiber) =>
<A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<Fiber.RuntimeFiber<A, E>, never, R | Scope.Scope> =>
  Effect.tap(Effect.forkScoped(effect), (fiber) =>
    Effect.map(Effect.serviceOption(Liveness), Option.map((registry) => registry.register(name, fiber))))

/** Records that configuration turned a fiber off, so readiness does not wait for it. */
export const markDisabled = (name: WatchedFiber) =>
  Effect.map(Effect.serviceOption(Liveness), Option.map((registry) => registry.markDisabled(name)))
