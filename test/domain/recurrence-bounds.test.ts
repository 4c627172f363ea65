import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import rrulePkg from "rrule"
import { advance, firstOccurrence, nextOccurrence } from "../../src/recurrence/Occurrences.js"
import { parseRule } from "../../src/recurrence/Recurrence.js"

const { RRule } = rrulePkg

/*
 * No recurrence computation runs unbounded. Random rules (every FREQ,
 * INTERVAL up to 1000, BY-part combinations, COUNT up to 10^9, UNTIL up to 9999, series
 * starts back to 1900) must each be validated and expanded — first, next, advance — within
 * 50 ms, answering a value or a refusal. And where `rrule` is safe to run, the expander
 * agrees with it occurrence for occurrence.
 */

const FREQS = ["YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY", "SECONDLY"] as const
const DAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"] as const
const ZONES = ["UTC", "America/New_York", "Pacific/Apia", "Australia/Lord_Howe", "America/St_Johns", "Asia/Tehran"] as const

// Ascending: rrule expands times in the order listed (BYHOUR=1,0 yields 01:00 before 00:00).
const list = (arb: fc.Arbitrary<number>, max = 4) =>
  fc.uniqueArray(arb, { minLength: 1, maxLength: max }).map((xs) => [...xs].sort((a, b) => a - b).join(","))
const nonZero = (max: number) => fc.integer({ min: -max, max }).filter((n) => n !== 0)
const part = (name: string, value: fc.Arbitrary<string>) => fc.option(value.map((v) => `;${name}=${v}`), { nil: "" })

const hostileRule = fc.tuple(
  fc.constantFrom(...FREQS),
  part("INTERVAL", fc.integer({ min: 1, max: 1000 }).map(String)),
  part("COUNT", fc.integer({ min: 1, max: 1_000_000_000 }).map(String)),
  part("UNTIL", fc.date({ min: new Date("1900-01-01T00:00:00Z"), max: new Date("9999-12-31T00:00:00Z"), noInvalidDate: true })
    .map((d) => d.toISOString().replace(/[-:]/g, "").slice(0, 15) + "Z")),
  part("BYMONTH", list(fc.integer({ min: 0, max: 13 }))),
  part("BYWEEKNO", list(nonZero(54))),
  part("BYYEARDAY", list(nonZero(367))),
  part("BYMONTHDAY", list(nonZero(32))),
  part("BYDAY", fc.uniqueArray(fc.tuple(fc.option(nonZero(54), { nil: undefined }), fc.constantFrom(...DAYS)), { minLength: 1, maxLength: 3 })
    .map((xs) => xs.map(([n, d]) => `${n ?? ""}${d}`).join(","))),
  part("BYHOUR", list(fc.integer({ min: -1, max: 24 }))),
  part("BYMINUTE", list(fc.integer({ min: 0, max: 60 }))),
  part("BYSECOND", list(fc.integer({ min: 0, max: 60 }))),
  part("BYSETPOS", list(nonZero(400)))
).map(([freq, ...parts]) => `FREQ=${freq}${parts.join("")}`)

const instant = (min: string, max: string) => fc.date({ min: new Date(min), max: new Date(max), noInvalidDate: true })
const anchor = fc.option(
  fc.tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })).map(([h, m]) => `${String(h).padStart(2, "0")}:${String(m).padStart(2, "0")}`),
  { nil: null }
)

const once = (f: () => unknown): number => {
  const started = performance.now()
  f()
  return performance.now() - started
}
// Other processes share this machine's two cores: a computation over the bound is measured
// once more, by wall time and by this process's CPU time (a garbage collection or a
// descheduled slice is not the computation's cost: a CI run measured a rule that takes 12 ms
// alone at 64 ms twice, with a database booting in the other test process; an unbounded
// computation costs its CPU every time).
const timed = (f: () => unknown): number => {
  const first = once(f)
  if (first < 50) return first
  const cpuBefore = process.cpuUsage()
  const again = once(f)
  const cpu = process.cpuUsage(cpuBefore)
  return Math.min(first, again, (cpu.user + cpu.system) / 1000)
}

describe("every recurrence computation is bounded", () => {
  // Compile and warm the code paths first so the bound measures the work, not the JIT.
  for (const rule of ["FREQ=DAILY", "FREQ=HOURLY;BYHOUR=1,5", "FREQ=YEARLY;BYWEEKNO=1;BYDAY=MO", "FREQ=MONTHLY;BYDAY=-1FR;BYSETPOS=1"]) {
    for (const zone of ZONES) {
      nextOccurrence({ rule, zone, anchorTime: "02:30" }, new Date("1900-01-01T00:00:00Z"), new Date("2026-03-08T07:10:00Z"))
      firstOccurrence({ rule, zone, anchorTime: null }, new Date("2026-03-08T07:10:00Z"))
    }
  }

  it.prop(
    "validation, first, next and advance each answer within 50 ms",
    [hostileRule, fc.constantFrom(...ZONES), anchor, instant("1900-01-01T00:00:00Z", "2100-01-01T00:00:00Z"), instant("1990-01-01T00:00:00Z", "2200-01-01T00:00:00Z")],
    ([rule, zone, anchorTime, seriesStart, at]) => {
      const input = { rule, zone, anchorTime }
      const durations = [
        timed(() => parseRule(rule + ";WKST=MO")),
        timed(() => firstOccurrence(input, at)),
        timed(() => nextOccurrence(input, seriesStart, at)),
        timed(() => advance({ ...input, mode: "from_due" }, at, at, seriesStart)),
        timed(() => advance({ ...input, mode: "from_completion" }, at, at, seriesStart))
      ]
      expect(Math.max(...durations)).toBeLessThan(50)
    },
    { timeout: 120_000, fastCheck: { numRuns: 1500 } }
  )

  it.each([
    "FREQ=HOURLY;INTERVAL=2;BYHOUR=1",
    "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30",
    "FREQ=DAILY;BYHOUR=24",
    "FREQ=DAILY;BYHOUR=-1",
    "FREQ=HOURLY;BYMONTH=13",
    "FREQ=MONTHLY;BYDAY=MO;BYSETPOS=6",
    "FREQ=YEARLY;BYYEARDAY=60;BYMONTH=1",
    "FREQ=DAILY;INTERVAL=7;BYDAY=TU",
    "FREQ=MONTHLY;INTERVAL=12;BYMONTHDAY=31"
  ])("%s is refused by analysis, at once", (rule) => {
    // Series start 2026-11-24 00:00 UTC, a Tuesday in November.
    const input = { rule, zone: "UTC", anchorTime: null }
    let answer: ReturnType<typeof firstOccurrence> | undefined
    const ms = timed(() => {
      answer = firstOccurrence(input, new Date("2026-11-30T00:00:00Z"))
    })
    expect(Either.isLeft(answer!) || answer!.right === undefined).toBe(true)
    expect(ms).toBeLessThan(50)
  })

  it("an HOURLY rule whose INTERVAL never reaches BYHOUR names why", () => {
    const answer = firstOccurrence({ rule: "FREQ=HOURLY;INTERVAL=2;BYHOUR=1", zone: "Europe/Berlin", anchorTime: null }, new Date("2026-11-24T10:00:00Z"))
    expect(answer).toEqual(Either.left("never matches: every 2 hours from the series start never reaches its BYHOUR/BYDAY"))
    // From an odd hour the same rule is fine: 01:00 every day.
    const odd = nextOccurrence({ rule: "FREQ=HOURLY;INTERVAL=2;BYHOUR=1", zone: "Europe/Berlin", anchorTime: "01:00" }, new Date("1900-01-01T10:00:00Z"), new Date("2026-11-24T10:00:00Z"))
    expect(odd).toEqual(Either.right(new Date("2026-11-25T00:00:00.000Z")))
  })

  it("COUNT ends a series started in 1900 without walking it", () => {
    const input = { rule: "FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=3;COUNT=5", zone: "UTC", anchorTime: "03:00" }
    expect(nextOccurrence(input, new Date("1900-01-01T03:00:00Z"), new Date("1904-02-28T00:00:00Z"))).toEqual(Either.right(new Date("1904-02-29T03:00:00Z")))
    expect(nextOccurrence(input, new Date("1900-01-01T03:00:00Z"), new Date("2026-01-01T00:00:00Z"))).toEqual(Either.right(undefined))
    // A uniform rule counts by arithmetic: the 10^6th hourly occurrence from 1900.
    const hourly = { rule: "FREQ=HOURLY;COUNT=1000000", zone: "UTC", anchorTime: "00:00" }
    const last = new Date(Date.UTC(1900, 0, 1) + 999_999 * 3_600_000)
    expect(nextOccurrence(hourly, new Date("1900-01-01T00:00:00Z"), new Date(last.getTime() - 1))).toEqual(Either.right(last))
    expect(nextOccurrence(hourly, new Date("1900-01-01T00:00:00Z"), last)).toEqual(Either.right(undefined))
  })
})

// ---------------------------------------------------------------------------------------
// Agreement with rrule where rrule is safe (UTC, where its floating time is real time)
// ---------------------------------------------------------------------------------------

const safeRule = fc.tuple(
  fc.constantFrom("YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY"),
  part("INTERVAL", fc.integer({ min: 1, max: 5 }).map(String)),
  part("COUNT", fc.integer({ min: 1, max: 30 }).map(String)),
  part("BYMONTH", list(fc.integer({ min: 1, max: 12 }), 3)),
  // No BYWEEKNO: early-January days of the previous year's last ISO week count as that week
  // here (ISO 8601); rrule (like python-dateutil) drops some of them.
  part("BYYEARDAY", list(nonZero(366), 3)),
  part("BYMONTHDAY", list(nonZero(31), 3)),
  // Either plain weekdays or ordinals: rrule requires a day to match both kinds when mixed
  // (RFC 5545, and Steady, take the list as alternatives).
  part("BYDAY", fc.oneof(
    fc.uniqueArray(fc.constantFrom(...DAYS), { minLength: 1, maxLength: 3 }).map((xs) => xs.join(",")),
    fc.uniqueArray(fc.tuple(nonZero(5), fc.constantFrom(...DAYS)), { minLength: 1, maxLength: 3 }).map((xs) => xs.map(([n, d]) => `${n}${d}`).join(","))
  )),
  part("BYHOUR", list(fc.integer({ min: 0, max: 23 }), 3)),
  part("BYMINUTE", list(fc.integer({ min: 0, max: 59 }), 2)),
  // One position, and negative only -1: rrule takes -2 of a one-element set as its element
  // (slice), and counts an occurrence two positions pick twice towards COUNT.
  part("BYSETPOS", fc.constantFrom("-1", "1", "2", "3")),
  part("WKST", fc.constantFrom(...DAYS))
).map(([freq, ...parts]) => `FREQ=${freq}${parts.join("")}`)
  // Only rules we accept; no HOURLY;BYHOUR with an INTERVAL (rrule's infinite loop); no
  // WEEKLY;BYSETPOS (rrule cuts the first week at DTSTART before picking positions; here the
  // positions are of the whole week, as RFC 5545 reads); no HOURLY;BYSETPOS (rrule then emits
  // DTSTART's hour although BYHOUR excludes it).
  .filter((rule) =>
    Either.isRight(parseRule(rule)) && !(/HOURLY/.test(rule) && /BYHOUR/.test(rule) && /INTERVAL=[2-5]/.test(rule)) &&
    !(/WEEKLY|HOURLY/.test(rule) && /BYSETPOS/.test(rule))
  )

describe("the expander agrees with rrule", () => {
  it.prop(
    "the first 12 occurrences (or all, when fewer) are rrule's",
    [safeRule, instant("1990-01-01T00:00:00Z", "2040-01-01T00:00:00Z").map((d) => new Date(Math.floor(d.getTime() / 1000) * 1000))],
    ([rule, start]) => {
      const input = { rule, zone: "UTC", anchorTime: null }
      const ours: Array<string> = []
      let after = new Date(start.getTime() - 1)
      for (let i = 0; i < 12; i++) {
        const next = nextOccurrence(input, start, after)
        if (Either.isLeft(next) || next.right === undefined) break
        ours.push(next.right.toISOString())
        after = next.right
      }
      // Stop rrule after 12 results or 20 years, whichever first. rrule repeats an
      // occurrence two BYSETPOS positions pick (-1,1 of a one-element set): one occurrence.
      const limit = new Date(start.getTime() + 20 * 366 * 86_400_000)
      const theirs = [...new Set(new RRule({ ...RRule.parseString(rule), dtstart: start })
        .all((d, i) => i < 24 && d < limit)
        .map((d) => d.toISOString()))]
      expect(ours.filter((d) => d < limit.toISOString())).toEqual(theirs.slice(0, 12))
    },
    { timeout: 120_000, fastCheck: { numRuns: 300 } }
  )
})
