import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { inSlices, nextTurn, SLICE_MS } from "../src/kernel/LoopTurns.js"

/**
 * Sliced CPU work (the calendar feed) shares the event loop through LoopTurns: one slice
 * per loop iteration for all jobs together, in turn, so requests between them wait for one
 * slice, not one per job.
 */

/** Counts the loop's check phases: one increment per iteration while running. */
const loopIterations = () => {
  let count = 0
  let running = true
  const tick = () => {
    count++
    if (running) setImmediate(tick)
  }
  setImmediate(tick)
  return { now: () => count, stop: () => void (running = false) }
}

describe("LoopTurns", () => {
  it.live("grants one turn per loop iteration, to the waiting jobs in turn", () =>
    Effect.gen(function*() {
      const iterations = loopIterations()
      const grants: Array<{ job: string; iteration: number }> = []
      const job = (name: string) =>
        Effect.gen(function*() {
          for (let i = 0; i < 4; i++) {
            yield* nextTurn
            grants.push({ job: name, iteration: iterations.now() })
          }
        })
      yield* Effect.all([job("a"), job("b"), job("c")], { concurrency: "unbounded" })
      iterations.stop()
      expect(grants.map((g) => g.job).join("")).toBe("abcabcabcabc")
      const perIteration = new Map<number, number>()
      for (const g of grants) perIteration.set(g.iteration, (perIteration.get(g.iteration) ?? 0) + 1)
      expect(Math.max(...perIteration.values())).toBe(1)
    }))

  it.live("a job interrupted while it waits leaves the queue: the others go on", () =>
    Effect.gen(function*() {
      let resumedAfterInterrupt = false
      const waiter = yield* Effect.fork(Effect.zipRight(nextTurn, Effect.sync(() => (resumedAfterInterrupt = true))))
      yield* Fiber.interrupt(waiter)
      const done: Array<number> = []
      for (let i = 0; i < 3; i++) {
        yield* nextTurn
        done.push(i)
      }
      expect(done).toEqual([0, 1, 2])
      expect(resumedAfterInterrupt).toBe(false)
    }))

  it.live("inSlices keeps every part but the pauses, in order, and waits for a turn once a slice has run SLICE_MS", () =>
    Effect.gen(function*() {
      const iterations = loopIterations()
      const PAUSE = ""
      let partsSeen = 0
      function* parts() {
        for (let i = 0; i < 40; i++) {
          const until = performance.now() + SLICE_MS / 4
          while (performance.now() < until) Math.sqrt(Math.random())
          partsSeen++
          yield `p${i}`
          yield PAUSE
        }
      }
      const started = iterations.now()
      const out = yield* inSlices(parts(), PAUSE)
      iterations.stop()
      expect(out).toEqual(Array.from({ length: 40 }, (_, i) => `p${i}`))
      expect(partsSeen).toBe(40)
      // 40 quarter slices of work: about ten slices, each in its own loop iteration.
      expect(iterations.now() - started).toBeGreaterThanOrEqual(8)
    }))
})
