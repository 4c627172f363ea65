import { Array as Arr, Effect, type Fiber, type FiberId, FiberRefs, RuntimeFlags } from "effect"
import type { FiberRef } from "effect"

/** A FiberRef and the value it holds while an effect runs. */
export type Local = readonly [FiberRef.FiberRef<any>, unknown]

/**
 * Sets every FiberRef of `locals` in one runtime step and one copy of the fiber's FiberRefs
 * (`FiberRef.set` is a step, a copy of all of them and a step for its answer, per FiberRef).
 */
const setAll = (fiberId: FiberId.Runtime, locals: ReadonlyArray<Local>): Effect.Effect<void> => {
  if (!Arr.isNonEmptyReadonlyArray(locals)) return Effect.void
  const entries = Arr.map(locals, ([ref, value]) => [ref, [[fiberId, value] as const]] as const)
  return Effect.updateFiberRefs((_, refs) => FiberRefs.updateManyAs(refs, { entries }))
}

/**
 * `Effect.locally` for several FiberRefs at once: each takes its value for `effect`'s run and
 * gets its own value back after, whatever the exit; other FiberRefs `effect` changes keep
 * their changes. `locals` reads the fiber as it is when the run starts (a context to add
 * to, say). `Effect.locally` is an acquire-use-release of about a dozen runtime steps per
 * FiberRef; a keyed write sets five of them, on the write path.
 * Already uninterruptible (a transaction's body, a keyed write), it needs no mask of its own.
 */
export const locallyAll = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  locals: (fiber: Fiber.RuntimeFiber<unknown, unknown>) => ReadonlyArray<Local>
): Effect.Effect<A, E, R> =>
  Effect.withFiberRuntime<A, E, R>((fiber, status) => {
    const set = locals(fiber)
    const before = set.map(([ref]): Local => [ref, fiber.getFiberRef(ref)])
    const id = fiber.id()
    const around = (self: Effect.Effect<A, E, R>) =>
      Effect.zipRight(setAll(id, set), Effect.exit(self)).pipe(Effect.flatMap((exit) => Effect.zipRight(setAll(id, before), exit)))
    return RuntimeFlags.interruption(status.runtimeFlags) ? Effect.uninterruptibleMask((restore) => around(restore(effect))) : around(effect)
  })
