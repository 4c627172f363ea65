import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import * as Occurrences from "../../src/recurrence/Occurrences.js"

// These rules are all valid: a refusal (Left) fails the test.
const nextOccurrence = (...args: Parameters<typeof Occurrences.nextOccurrence>) => Either.getOrThrow(Occurrences.nextOccurrence(...args))
const firstOccurrence = (...args: Parameters<typeof Occurrences.firstOccurrence>) => Either.getOrThrow(Occurrences.firstOccurrence(...args))
const advance = (...args: Parameters<typeof Occurrences.advance>) => Either.getOrThrow(Occurrences.advance(...args))

const ZONES = ["America/New_York", "Europe/Berlin", "Australia/Sydney", "Asia/Kolkata", "UTC"] as const

/** Independent reading of a zone's wall clock, straight from Intl. */
const wall = (instant: Date, zone: string) => {
  const parts = new Intl.DateTimeFormat("en-CA", {
    timeZone: zone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    weekday: "short"
  }).formatToParts(instant)
  const get = (t: string) => parts.find((p) => p.type === t)!.value
  return {
    date: `${get("year")}-${get("month")}-${get("day")}`,
    time: `${get("hour")}:${get("minute")}`,
    weekday: ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"].indexOf(get("weekday"))
  }
}

/** Whether a local wall time exists on a local date (it does not inside a spring-forward gap). */
const wallTimeExists = (date: string, time: string, zone: string) => {
  const [y, m, d] = date.split("-").map(Number) as [number, number, number]
  const [h, min] = time.split(":").map(Number) as [number, number]
  const guess = Date.UTC(y, m - 1, d, h, min)
  for (let offset = -15 * 60; offset <= 15 * 60; offset += 15) {
    const w = wall(new Date(guess - offset * 60_000), zone)
    if (w.date === date && w.time === time) return true
  }
  return false
}

const nextDate = (date: string) => {
  const [y, m, d] = date.split("-").map(Number) as [number, number, number]
  return new Date(Date.UTC(y, m - 1, d + 1)).toISOString().slice(0, 10)
}

const zoneArb = fc.constantFrom(...ZONES)
// Anchor times include the small hours, where DST changes happen.
const anchorArb = fc.tuple(fc.integer({ min: 0, max: 23 }), fc.constantFrom(0, 15, 30, 45)).map(
  ([h, m]) => `${String(h).padStart(2, "0")}:${String(m).padStart(2, "0")}`
)
const instantArb = fc.date({ min: new Date("2020-01-01T00:00:00Z"), max: new Date("2035-12-31T00:00:00Z"), noInvalidDate: true })
const weekdaysArb = fc.uniqueArray(fc.integer({ min: 0, max: 6 }), { minLength: 1, maxLength: 7 })
const BYDAY = ["SU", "MO", "TU", "WE", "TH", "FR", "SA"]

describe("nextOccurrence", () => {
  it.prop("is strictly after the reference and at the anchor wall time (or shifted past a DST gap)", [zoneArb, anchorArb, instantArb], ([zone, anchor, reference]) => {
    const next = nextOccurrence({ rule: "FREQ=DAILY", zone, anchorTime: anchor }, reference, reference)!
    expect(next.getTime()).toBeGreaterThan(reference.getTime())
    const w = wall(next, zone)
    if (wallTimeExists(w.date, anchor, zone)) {
      expect(w.time).toBe(anchor)
    } else {
      // The skipped time moves forward by the gap: one hour in these zones.
      const [h, m] = anchor.split(":").map(Number) as [number, number]
      expect(w.time).toBe(`${String(h + 1).padStart(2, "0")}:${String(m).padStart(2, "0")}`)
    }
  }, { fastCheck: { numRuns: 300 } })

  it.prop("advancing a daily task never skips or repeats a local day", [zoneArb, anchorArb, instantArb], ([zone, anchor, start]) => {
    const input = { rule: "FREQ=DAILY", zone, anchorTime: anchor, mode: "from_due" as const }
    let due = firstOccurrence(input, start)!
    for (let i = 0; i < 40; i++) {
      const next = advance(input, due, due)!
      expect(wall(next, zone).date).toBe(nextDate(wall(due, zone).date))
      due = next
    }
  }, { fastCheck: { numRuns: 60 } })

  it.prop("weekly BYDAY rules visit exactly the matching local days, in order (day-by-day oracle)", [zoneArb, anchorArb, instantArb, weekdaysArb], ([zone, anchor, start, weekdays]) => {
    const rule = `FREQ=WEEKLY;BYDAY=${weekdays.map((d) => BYDAY[d]).join(",")}`
    const input = { rule, zone, anchorTime: anchor, mode: "from_due" as const }
    let due = firstOccurrence(input, start)!
    let oracleDate = wall(due, zone).date
    expect(weekdays).toContain(wall(due, zone).weekday)
    for (let i = 0; i < 25; i++) {
      const next = advance(input, due, due)!
      // The oracle walks the local calendar one day at a time to the next matching weekday.
      do {
        oracleDate = nextDate(oracleDate)
      } while (!weekdays.includes(new Date(`${oracleDate}T12:00:00Z`).getUTCDay()))
      expect(wall(next, zone).date).toBe(oracleDate)
      expect(next.getTime()).toBeGreaterThan(due.getTime())
      due = next
    }
  }, { fastCheck: { numRuns: 60 } })

  it.prop("monthly rules land on the same day of the month, skipping months without it", [zoneArb, anchorArb, instantArb, fc.integer({ min: 1, max: 31 })], ([zone, anchor, start, dom]) => {
    const input = { rule: `FREQ=MONTHLY;BYMONTHDAY=${dom}`, zone, anchorTime: anchor, mode: "from_due" as const }
    let due = firstOccurrence(input, start)!
    for (let i = 0; i < 14; i++) {
      expect(Number(wall(due, zone).date.slice(8, 10))).toBe(dom)
      const next = advance(input, due, due)!
      expect(next.getTime()).toBeGreaterThan(due.getTime())
      due = next
    }
  }, { fastCheck: { numRuns: 40 } })
})

describe("the three divergences from the Temporal oracle", () => {
  it("nextOccurrence returns an occurrence a DST gap moved past `after` (02:30 → 03:30 EDT)", () => {
    // after = 03:10 EDT on 8 March 2026; that day's 02:30 does not exist and moves to 03:30.
    const next = nextOccurrence(
      { rule: "FREQ=DAILY", zone: "America/New_York", anchorTime: "02:30" },
      new Date("2026-03-01T07:30:00Z"),
      new Date("2026-03-08T07:10:00Z")
    )
    expect(next?.toISOString()).toBe("2026-03-08T07:30:00.000Z")
    // Only that occurrence moved: the next day is back at 02:30 EDT.
    const after = nextOccurrence({ rule: "FREQ=DAILY", zone: "America/New_York", anchorTime: "02:30" }, new Date("2026-03-01T07:30:00Z"), next!)
    expect(after?.toISOString()).toBe("2026-03-09T06:30:00.000Z")
  })

  it("firstOccurrence keeps the series at midnight although the first day's midnight does not exist (Havana)", () => {
    const first = firstOccurrence({ rule: "FREQ=DAILY", zone: "America/Havana", anchorTime: null }, new Date("2026-03-08T17:00:00Z"))
    expect(first?.toISOString()).toBe("2026-03-09T04:00:00.000Z") // 00:00 CDT, not 01:00
  })

  it("firstOccurrence keeps BYHOUR=2 at :00 after Lord Howe's half-hour gap", () => {
    // 4 October 2026: 02:00 → 02:30 (+10:30 → +11). That day's 02:00 moves to 02:30 …
    const first = Occurrences.firstOccurrenceAt({ rule: "FREQ=DAILY;BYHOUR=2", zone: "Australia/Lord_Howe", anchorTime: null }, new Date("2026-10-03T12:00:00Z"))
    expect(first).toEqual(Either.right({ at: new Date("2026-10-03T15:30:00.000Z"), wallTime: "02:00" }))
    // … and the series stays at 02:00: its wall time, not the shifted one, is the anchor.
    const input = { rule: "FREQ=DAILY;BYHOUR=2", zone: "Australia/Lord_Howe", anchorTime: "02:00" }
    const at = new Date("2026-10-03T15:30:00.000Z")
    expect(nextOccurrence(input, at, at)?.toISOString()).toBe("2026-10-04T15:00:00.000Z")
  })

  it("firstOccurrence counts an occurrence exactly at `from`", () => {
    const first = firstOccurrence({ rule: "FREQ=HOURLY", zone: "UTC", anchorTime: null }, new Date("2026-06-20T22:00:00.000Z"))
    expect(first?.toISOString()).toBe("2026-06-20T22:00:00.000Z")
  })

  it("Apia's skipped 30 December 2011 still counts for INTERVAL; its 10:00 moves by the 24 h gap", () => {
    const input = { rule: "FREQ=DAILY;INTERVAL=2", zone: "Pacific/Apia", anchorTime: "10:00" }
    const start = new Date("2011-12-26T20:00:00Z") // Mon 26 Dec 10:00 (-10)
    // 26, 28, 30 (no such date: its 10:00 becomes 31 Dec 10:00 +14), 1 Jan, …
    const at28 = nextOccurrence(input, start, start)!
    expect(at28.toISOString()).toBe("2011-12-28T20:00:00.000Z")
    const at30 = nextOccurrence(input, start, at28)!
    expect(at30.toISOString()).toBe("2011-12-30T20:00:00.000Z")
    expect(nextOccurrence(input, start, at30)?.toISOString()).toBe("2011-12-31T20:00:00.000Z") // 1 Jan 10:00 (+14)
  })

  it("a repeated wall time means its first instant, every time (St. John's 2008, 00:01 → 23:01)", () => {
    // 2 November 2008: 00:01 NDT became 23:01 NST on 1 November; 23:30 on the 1st happened twice.
    const input = { rule: "FREQ=DAILY", zone: "America/St_Johns", anchorTime: "23:30" }
    const start = new Date("2008-10-30T02:00:00Z") // 29 Oct 23:30 NDT
    const first = nextOccurrence(input, start, new Date("2008-11-01T12:00:00Z"))
    expect(first?.toISOString()).toBe("2008-11-02T02:00:00.000Z") // the first 23:30 (NDT)
    expect(nextOccurrence(input, start, first!)?.toISOString()).toBe("2008-11-03T03:00:00.000Z") // 2 Nov 23:30 NST
  })
})

describe("concrete DST cases", () => {
  it("keeps 08:00 local across the New York spring-forward", () => {
    const due = new Date("2026-03-07T13:00:00.000Z") // Sat 08:00 EST
    const next = advance({ rule: "FREQ=DAILY", zone: "America/New_York", anchorTime: "08:00", mode: "from_due" }, due, due)
    expect(next?.toISOString()).toBe("2026-03-08T12:00:00.000Z") // Sun 08:00 EDT
  })

  it("moves 02:30 to 03:30 on the night 02:30 does not exist", () => {
    const due = new Date("2026-03-28T01:30:00.000Z") // Sat 02:30 CET
    const next = advance({ rule: "FREQ=DAILY", zone: "Europe/Berlin", anchorTime: "02:30", mode: "from_due" }, due, due)
    expect(next?.toISOString()).toBe("2026-03-29T01:30:00.000Z") // Sun 03:30 CEST
    const after = advance({ rule: "FREQ=DAILY", zone: "Europe/Berlin", anchorTime: "02:30", mode: "from_due" }, next!, next!)
    expect(after?.toISOString()).toBe("2026-03-30T00:30:00.000Z") // back to 02:30 CEST
  })

  it("keeps 09:00 local across the Sydney autumn change", () => {
    const due = new Date("2026-04-03T22:00:00.000Z") // Sat 4 Apr 09:00 AEDT (+11)
    const next = advance({ rule: "FREQ=DAILY", zone: "Australia/Sydney", anchorTime: "09:00", mode: "from_due" }, due, due)
    expect(next?.toISOString()).toBe("2026-04-04T23:00:00.000Z") // Sun 5 Apr 09:00 AEST (+10)
  })

  it("counts from the completion in from_completion mode, snapped to the anchor time", () => {
    const next = advance(
      { rule: "FREQ=DAILY;INTERVAL=3", zone: "Asia/Kolkata", anchorTime: "07:00", mode: "from_completion" },
      new Date("2026-01-01T01:30:00.000Z"),
      new Date("2026-01-10T12:00:00.000Z") // 17:30 IST on the 10th
    )
    expect(next?.toISOString()).toBe("2026-01-13T01:30:00.000Z") // 07:00 IST on the 13th
  })

  it("ends a series whose COUNT is spent", () => {
    const start = new Date("2026-05-01T08:00:00.000Z")
    const input = { rule: "FREQ=DAILY;COUNT=2", zone: "UTC", anchorTime: "08:00" }
    expect(nextOccurrence(input, start, start)?.toISOString()).toBe("2026-05-02T08:00:00.000Z")
    expect(nextOccurrence(input, start, new Date("2026-05-02T08:00:00.000Z"))).toBeUndefined()
  })
})
