import { Effect } from "effect"

/**
 * Turns of the event loop for CPU-bound work done in slices (the calendar feed's COUNT walks
 * and zone tables). Yielding with `setImmediate` alone is not enough: every slice waiting on
 * an immediate runs in the same check phase, so three feeds at once hold the loop for three
 * slices back to back and a request's timers and sockets wait for all of them. Here every
 * sliced job in the process waits in one queue and one of them is let go per loop
 * iteration (the next grant is queued from inside the check phase, which Node runs on the
 * next iteration, after timers and I/O). However many feeds run, the loop is held by one
 * slice at a time, and the jobs take turns in arrival order.
 *
 * Module state on purpose: the event loop is one per process, whatever layers are built.
 */
const waiting = new Set<() => void>()
let granting = false

const grant = () => {
  granting = false
  const [next] = waiting
  if (next !== undefined) {
    waiting.delete(next)
    next()
  }
  schedule()
}

const schedule = () => {
  if (granting || waiting.size === 0) return
  granting = true
  setImmediate(grant)
}

/** Waits for this job's next turn of the loop; an interrupted wait leaves the queue. */
export const nextTurn: Effect.Effect<void> = Effect.async<void>((resume) => {
  const go = () => resume(Effect.void)
  waiting.add(go)
  schedule()
  return Effect.sync(() => {
    waiting.delete(go)
  })
})

/** CPU time one slice may take before its job waits for its next turn. */
export const SLICE_MS = 2

/**
 * Runs a generator of parts in slices: `pause` parts are places where it may stop; once a
 * slice has run SLICE_MS it waits for its next turn there. The other parts are collected.
 */
export const inSlices = <A>(parts: Iterable<A>, pause: A): Effect.Effect<Array<A>> =>
  Effect.gen(function*() {
    const out: Array<A> = []
    yield* nextTurn
    let sliceStart = performance.now()
    for (const part of parts) {
      if (part !== pause) out.push(part)
      else if (performance.now() - sliceStart >= SLICE_MS) {
        yield* nextTurn
        sliceStart = performance.now()
      }
    }
    return out
  })
