import { describe, expect, it } from "@effect/vitest"
import { runOccurrenceOracle } from "../oracle/occurrences.js"

/*
 * The occurrence half of the Temporal oracle at CI size: nextOccurrence and firstOccurrence
 * against Temporal over the odd zones (Lord Howe, Chatham, St. John's, Havana, Santiago,
 * Amman, Tehran, Apia, Fakaofo, Kiritimati, Troll, Dublin, New York, Berlin, …), 1995-2040,
 * biased to offset changes, with anchors inside gaps and repeated hours. `npm run
 * test:oracle` runs the full size.
 */
describe("occurrences against the Temporal oracle", () => {
  for (const seed of [1, 2]) {
    it(`seed ${seed}: 2,000 cases, no divergence`, () => {
      const report = runOccurrenceOracle(2_000, seed)
      expect(report.examples).toEqual([])
      expect(report).toEqual({ cases: 2_000, divergences: 0, examples: [] })
    }, 120_000)
  }

  it("a seed reproduces its run", () => {
    expect(runOccurrenceOracle(200, 99)).toEqual(runOccurrenceOracle(200, 99))
  }, 120_000)
})
