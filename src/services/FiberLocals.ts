import { Effect, type Fiber, FiberRef } from "effect"

/** A FiberRef and the value it holds while an effect runs. */
export type Local = readonly [FiberRef.FiberRef<any>, unknown]

/** Sets each FiberRef to its value, in order: one runtime step per FiberRef. */
const setEach = (locals: ReadonlyArray<Local>): Effect.Effect<void> =>
  locals.reduce<Effect.Effect<void>>((effect, [ref, value]) => Effect.zipRight(effect, FiberRef.set(ref, value)), Effect.void)

/**
 * `Effect.locally` for several FiberRefs at once: each takes its value for `effect`'s run and
 * gets its own value back after, whatever the exit; other FiberRefs `effect` changes keep
 * their changes. `locals` reads the fiber as it is when the run starts (a context to add
 * to, say). `Effect.locally` is an acquire-use-release of about a dozen runtime steps per
 * FiberRef; a keyed write set three of them, on the write path (issue 14's cost of a key).
 * (`Effect.setFiberRefs` would be one call, but it sets every FiberRef the fiber has, one
 * step each.)
 */
export const locallyAll = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  locals: (fiber: Fiber.RuntimeFiber<unknown, unknown>) => ReadonlyArray<Local>
): Effect.Effect<A, E, R> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.withFiberRuntime<A, E, R>((fiber) => {
      const set = locals(fiber)
      const before = set.map(([ref]): Local => [ref, fiber.getFiberRef(ref)])
      return Effect.zipRight(setEach(set), Effect.exit(restore(effect))).pipe(
        Effect.flatMap((exit) => Effect.zipRight(setEach(before), exit))
      )
    })
  )
