import { describe, expect, it } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, FiberRef } from "effect"
import { locallyAll } from "../src/kernel/FiberLocals.js"

/** Several FiberRefs set for one run in one go (the keyed write path), and given back after. */
describe("locallyAll", () => {
  const a = FiberRef.unsafeMake("a0")
  const b = FiberRef.unsafeMake(0)
  const other = FiberRef.unsafeMake("untouched")
  class Greeting extends Context.Tag("test/Greeting")<Greeting, string>() {}

  // The context it sets provides Greeting, which locallyAll's type cannot tell.
  const both = <X, E>(effect: Effect.Effect<X, E, Greeting>) =>
    locallyAll(effect, (fiber) => [[a, "a1"], [b, 1], [FiberRef.currentContext, Context.add(fiber.currentContext, Greeting, "hi")]]) as Effect.Effect<X, E>

  const readAll = Effect.all([FiberRef.get(a), FiberRef.get(b), Effect.serviceOption(Greeting)])

  it.effect("sets every value for the run, context included, and gives each back after", () =>
    Effect.gen(function*() {
      const inside = yield* both(Effect.zip(readAll, Greeting))
      expect(inside[0].slice(0, 2)).toEqual(["a1", 1])
      expect(inside[1]).toBe("hi")
      const [afterA, afterB, afterGreeting] = yield* readAll
      expect([afterA, afterB, afterGreeting._tag]).toEqual(["a0", 0, "None"])
    }))

  it.effect("gives them back after a failure and a defect too", () =>
    Effect.gen(function*() {
      const failed = yield* Effect.exit(both(Effect.fail("no")))
      expect(Exit.isFailure(failed)).toBe(true)
      expect((yield* readAll).slice(0, 2)).toEqual(["a0", 0])
      const died = yield* Effect.exit(both(Effect.die("boom")))
      expect(Exit.isFailure(died)).toBe(true)
      expect((yield* readAll).slice(0, 2)).toEqual(["a0", 0])
    }))

  it.effect("keeps what the run did to other FiberRefs", () =>
    Effect.gen(function*() {
      yield* both(FiberRef.set(other, "changed"))
      expect(yield* FiberRef.get(other)).toBe("changed")
      yield* FiberRef.set(other, "untouched")
    }))

  it.effect("an interrupted run gives them back as well", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const seen = yield* Deferred.make<ReadonlyArray<unknown>>()
      const fiber = yield* Effect.fork(
        Effect.onInterrupt(
          both(Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)),
          () => Effect.flatMap(Effect.all([FiberRef.get(a), FiberRef.get(b)]), (values) => Deferred.succeed(seen, values))
        )
      )
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      expect(yield* Deferred.await(seen)).toEqual(["a0", 0])
    }))

  it.effect("nests: an inner run sees its own values, the outer ones come back after it", () =>
    Effect.gen(function*() {
      const seen = yield* locallyAll(
        Effect.zip(locallyAll(FiberRef.get(a), () => [[a, "inner"]]), FiberRef.get(a)),
        () => [[a, "outer"]]
      )
      expect(seen).toEqual(["inner", "outer"])
      expect(yield* FiberRef.get(a)).toBe("a0")
    }))
})
