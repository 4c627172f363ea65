import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { expectedPeriod, runPeriodOracle } from "../oracle/periods.js"

/*
 * The period half of the Temporal oracle at CI size: nextBoundary, nearestBoundary,
 * periodContaining and endedPeriods against Temporal over the odd zones (Lord Howe, Chatham,
 * St. John's, Havana, Santiago, Amman, Tehran, Apia, Fakaofo, Kiritimati, Troll, Dublin, …),
 * 1995-2040, biased to offset changes and local midnights. `npm run test:oracle` runs the
 * full million.
 */
describe("quota periods against the Temporal oracle", () => {
  for (const seed of [1, 2]) {
    it(`seed ${seed}: 1,500 cases, no divergence`, () => {
      const report = runPeriodOracle(1_500, seed)
      expect(report.examples).toEqual([])
      expect(report).toEqual({ cases: 1_500, divergences: 0, examples: [] })
    }, 120_000)
  }

  it.prop("any seed: 40 cases, no divergence", [fc.integer()], ([seed]) => {
    expect(runPeriodOracle(40, seed).examples).toEqual([])
  }, { fastCheck: { numRuns: 25 }, timeout: 120_000 })

  it("a seed reproduces its run", () => {
    expect(runPeriodOracle(200, 99)).toEqual(runPeriodOracle(200, 99))
  }, 120_000)

  it("the oracle's own answer for St. John's (UTC−3:30, DST at 02:00 local)", () => {
    // After 2008-11-02T02:49:38.945Z (the second Nov 1 23:19) the day ends at Nov 3 00:00 NST.
    const day = expectedPeriod({ freq: "DAILY", interval: 1 }, { zone: "America/St_Johns", weekStart: "sunday" }, Date.parse("2008-11-02T02:49:38.945Z"))
    expect([new Date(day.start).toISOString(), new Date(day.end).toISOString()])
      .toEqual(["2008-11-02T02:30:00.000Z", "2008-11-03T03:30:00.000Z"])
  })
})
