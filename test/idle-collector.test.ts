import { describe, expect, it } from "vitest"
import * as V8 from "node:v8"
import { collectIdleGarbage, exposeGc } from "../src/system/IdleCollector.js"

const newSpaceSize = () => V8.getHeapSpaceStatistics().find((space) => space.space_name === "new_space")!.space_size
const oldSpaceUsed = () => V8.getHeapSpaceStatistics().find((space) => space.space_name === "old_space")!.space_used_size

/**
 * A burst that keeps much of what it allocates alive for a while, as requests in flight do:
 * V8 grows its young generation when many objects survive its scavenges.
 */
const burst = () => {
  let kept: Array<ReadonlyArray<{ readonly n: number; readonly text: string }>> = []
  for (let round = 0; round < 400; round++) {
    kept.push(Array.from({ length: 5_000 }, (_, n) => ({ n, text: `row ${n} of ${round}` })))
    if (kept.length > 40) kept = kept.slice(-40)
  }
  return kept.length
}

describe("the idle collector", () => {
  it("gives back the young generation a burst grew, and the old generation's garbage", async () => {
    const collect = exposeGc()
    expect(collect).toBeTypeOf("function")
    const before = newSpaceSize()
    expect(burst()).toBe(40)
    const grown = newSpaceSize()
    // The burst grew it (to several MiB: the test process runs with V8's default semi-space).
    expect(grown).toBeGreaterThan(Math.max(before, 4 * 1024 * 1024))
    // A full collection right after the burst leaves the young generation as it is: V8
    // shrinks it only at a collection that follows little allocation.
    collect!()
    expect(newSpaceSize()).toBe(grown)
    // The quiet the service waits for before collecting (10 s there). V8 judges the rate
    // over its last ~5 s of collections, so a shorter wait still sees the burst.
    await new Promise((resolve) => setTimeout(resolve, 6_000))
    collectIdleGarbage(collect!)
    expect(newSpaceSize()).toBeLessThan(grown / 4)
    // Nothing of the burst is left in the old generation either.
    expect(oldSpaceUsed()).toBeLessThan(200 * 1024 * 1024)
  })
})
