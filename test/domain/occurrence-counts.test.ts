import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { renderFeed } from "../../src/changes/CalendarFeed.js"
import { nextOccurrence, occurrencesBetween as walkBetween, type RecurrenceInput } from "../../src/recurrence/Occurrences.js"
import { MAX_PERIOD_CANDIDATES, parseRule } from "../../src/recurrence/Recurrence.js"
import { type ExpansionBudget, PAUSE_UNITS, runToEnd, search } from "../../src/recurrence/RuleExpansion.js"
import { wallOf } from "../../src/kernel/ZoneOffsets.js"

/**
 * The calendar feed turns a stored COUNT into the count left from the current occurrence
 * with one forward pass (occurrencesBetween). COUNT counts the rule's candidates (RFC 5545,
 * and the expander's own COUNT check): two wall times a DST gap moves onto one instant are
 * two. The slow, obvious reading of the same thing steps through the series one wall time
 * at a time with `search` and counts the instants strictly between the two bounds.
 */
const DAY = 86_400_000
const seriesWall = (start: Date, input: RecurrenceInput) => {
  const wall = wallOf(input.zone, start.getTime())
  if (input.anchorTime === null) return wall - (((wall % 1000) + 1000) % 1000)
  const [h, m] = input.anchorTime.split(":").map(Number) as [number, number]
  return Math.floor(wall / DAY) * DAY + (h * 60 + m) * 60_000
}

const stepped = (input: RecurrenceInput, start: Date, before: Date, limit: number): number | undefined => {
  const rule = Either.getOrThrow(parseRule(input.rule))
  const dtWall = seriesWall(start, input)
  let n = 0
  let wall = dtWall
  for (;;) {
    const hit = search(rule, dtWall, input.zone, { kind: "wall", wall })
    if (Either.isLeft(hit)) return undefined
    if (hit.right === undefined || hit.right.instant >= before.getTime()) return n
    if (hit.right.instant > start.getTime() && ++n >= limit) return limit
    wall = hit.right.wall + 1
  }
}

/** Where no DST gap can fold two wall times together, it is also one nextOccurrence after another. */
const steppedByInstant = (input: RecurrenceInput, start: Date, before: Date, limit: number): number | undefined => {
  let n = 0
  let at = start
  for (;;) {
    const next = nextOccurrence(input, start, at)
    if (Either.isLeft(next)) return undefined
    if (next.right === undefined || next.right.getTime() >= before.getTime()) return n
    if (++n >= limit) return limit
    at = next.right
  }
}

const ZONES = ["America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata", "UTC", "America/Santiago"] as const
const RULES = [
  "FREQ=HOURLY",
  "FREQ=HOURLY;INTERVAL=5",
  "FREQ=HOURLY;BYHOUR=1,2,3",
  "FREQ=DAILY",
  "FREQ=DAILY;INTERVAL=3",
  "FREQ=DAILY;BYHOUR=0,1,2,3,12;BYMINUTE=0,30",
  "FREQ=DAILY;BYHOUR=1,2;BYMINUTE=0,30;BYMONTH=3,10,11",
  "FREQ=DAILY;BYDAY=MO,WE,FR",
  "FREQ=WEEKLY;BYDAY=SU,TU",
  "FREQ=WEEKLY;INTERVAL=2;BYDAY=SA",
  "FREQ=MONTHLY;BYMONTHDAY=31",
  "FREQ=MONTHLY;BYMONTHDAY=1,15",
  "FREQ=MONTHLY;BYDAY=-1FR",
  "FREQ=MONTHLY;BYDAY=MO,TU;BYSETPOS=2",
  "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29",
  "FREQ=YEARLY;BYMONTH=3,11;BYDAY=2SU",
  "FREQ=DAILY;UNTIL=20300101T000000",
  "FREQ=HOURLY;UNTIL=20290315T063000Z"
] as const

const instantArb = fc.date({ min: new Date("2024-01-01T00:00:00Z"), max: new Date("2031-12-31T00:00:00Z"), noInvalidDate: true })

const occurrencesBetween = (input: RecurrenceInput, start: Date, before: Date, limit: number, budget: ExpansionBudget) =>
  runToEnd(walkBetween(input, start, before, limit, budget))

describe("occurrencesBetween", () => {
  it.prop(
    "counts what stepping through the series one occurrence at a time counts",
    [
      fc.constantFrom(...RULES),
      fc.constantFrom(...ZONES),
      fc.option(fc.constantFrom("00:30", "02:30", "09:00", "23:45"), { nil: null }),
      instantArb,
      fc.integer({ min: 0, max: 400 * 24 }),
      fc.integer({ min: 1, max: 300 })
    ],
    ([rule, zone, anchorTime, start, hoursLater, limit]) => {
      const input = { rule, zone, anchorTime }
      const before = new Date(start.getTime() + hoursLater * 3_600_000)
      const expected = stepped(input, start, before, limit)
      const got = occurrencesBetween(input, start, before, limit, { left: 1_000_000 })
      expect(got).toBe(expected)
      if (zone === "UTC") expect(got).toBe(steppedByInstant(input, start, before, limit))
    },
    { fastCheck: { numRuns: 300 } }
  )

  it("counts both wall times a DST gap moves onto one instant, as COUNT does (Lord Howe's half-hour gap)", () => {
    // 2025-10-05 02:00 local does not exist on Lord Howe (02:00 → 02:30): it moves to 02:30,
    // where the 02:30 candidate also is. Both count toward COUNT.
    const input = { rule: "FREQ=DAILY;BYHOUR=1,2;BYMINUTE=0,30;BYMONTH=3,10,11", zone: "Australia/Lord_Howe", anchorTime: null }
    const start = new Date("2025-06-09T01:30:00.001Z")
    const before = new Date("2025-10-05T12:00:00Z")
    expect(occurrencesBetween(input, start, before, 100, { left: 1_000_000 })).toBe(stepped(input, start, before, 100))
    // Oct 1–4 hold 4 each, Oct 5 its 01:00, 01:30 and the two that land on 02:30.
    expect(occurrencesBetween(input, start, before, 100, { left: 1_000_000 })).toBe(20)
  })

  it("counts a series snoozed 18 years ahead in one pass, within the budget", () => {
    const hours = Array.from({ length: 24 }, (_, h) => h).join(",")
    const input = { rule: `FREQ=DAILY;BYHOUR=${hours};BYMINUTE=0,30;BYMONTH=1`, zone: "UTC", anchorTime: null }
    const budget = { left: 400_000 }
    // Every January holds 31 × 48 occurrences; 2027…2044 is 18 Januaries, minus the start itself.
    expect(occurrencesBetween(input, new Date("2027-01-01T00:00:00Z"), new Date("2045-01-01T00:00:00Z"), 30_000, budget))
      .toBe(18 * 31 * 48 - 1)
    expect(400_000 - budget.left).toBeLessThan(60_000)
    // An hourly series does it by arithmetic: 18 years of hours for a handful of units.
    const hourly = { left: 1000 }
    expect(occurrencesBetween({ rule: "FREQ=HOURLY", zone: "UTC", anchorTime: null }, new Date("2027-01-01T00:00:00Z"), new Date("2045-01-01T00:00:00Z"), 1_000_000, hourly))
      .toBe((Date.UTC(2045, 0, 1) - Date.UTC(2027, 0, 1)) / 3_600_000 - 1)
    expect(hourly.left).toBeGreaterThan(900)
  })

  it("pauses every PAUSE_UNITS or so: no stretch of a long walk spends more than that and one period", () => {
    const hours = Array.from({ length: 24 }, (_, h) => h).join(",")
    const input = { rule: `FREQ=DAILY;BYHOUR=${hours};BYMINUTE=0,15,30,45;BYMONTH=1,7`, zone: "Europe/Berlin", anchorTime: null }
    const budget = { left: 400_000 }
    const walk = walkBetween(input, new Date("2027-01-01T00:00:00Z"), new Date("2045-01-01T00:00:00Z"), 200_000, budget)
    const stretches: Array<number> = []
    let spentAt = budget.left
    for (let step = walk.next(); ; step = walk.next()) {
      stretches.push(spentAt - budget.left)
      spentAt = budget.left
      if (step.done === true) {
        // 18 years of 62 days × 96 quarter hours, less the start itself: the same answer as in one go.
        expect(step.value).toBe(18 * 62 * 96 - 1)
        break
      }
    }
    expect(stretches.length).toBeGreaterThan(40)
    expect(Math.max(...stretches)).toBeLessThanOrEqual(PAUSE_UNITS + MAX_PERIOD_CANDIDATES + 400)
  })
})

describe("the feed's expansion budget", () => {
  it("holds across every task of one feed: a thousand hostile series cost one budget, not one each", () => {
    const hours = Array.from({ length: 24 }, (_, h) => h).join(",")
    const tasks = Array.from({ length: 1000 }, (_, i) => ({
      id: i + 1,
      title: "x",
      notes: "",
      priority: 0,
      due_at: "2045-01-01T00:00:00.000Z",
      series_start_at: "2027-01-01T00:00:00.000Z",
      created_at: "2026-01-01T00:00:00.000Z",
      updated_at: "2026-01-01T00:00:00.000Z",
      rrule: `FREQ=DAILY;BYHOUR=${hours};BYMINUTE=0,30;BYMONTH=1;COUNT=25000`,
      anchor_time: null,
      labels: []
    }))
    const body = renderFeed({ zone: "UTC", now: new Date("2026-11-28T00:00:00Z"), calendarName: "c", instanceId: "i", origin: "http://x", tasks })
    const counts = [...body.matchAll(/COUNT=(\d+)/g)].map((m) => Number(m[1]))
    expect(counts).toHaveLength(1000)
    // The first few are counted (25,000 − 26,783 spent → the last one left); the budget then
    // keeps the stored COUNT for the rest, to be counted by later feeds from the cache.
    expect(counts[0]).toBe(1)
    expect(counts.filter((c) => c === 1).length).toBeLessThan(20)
    expect(counts.filter((c) => c === 25_000).length).toBeGreaterThan(980)
  })
})
