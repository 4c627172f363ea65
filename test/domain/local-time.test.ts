import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import {
  addDays,
  instantOf,
  localDate,
  localParts,
  intlLocalParts,
  localTimeOfDay,
  parseCalendarDate,
  startOfLocalDay,
  startOfNextLocalDay,
  zoneOffsetMs
} from "../../src/kernel/LocalTime.js"

// ---------------------------------------------------------------------------------------
// An independent oracle. It never calls the module under test: it reads the zone's UTC
// offset from Intl's `longOffset` time-zone name ("GMT-05:00") and derives wall clocks
// by shifting the instant and reading UTC fields.
// ---------------------------------------------------------------------------------------

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

const offsetFormatters = new Map<string, Intl.DateTimeFormat>()

const oracleOffset = (t: number, zone: string): number => {
  let f = offsetFormatters.get(zone)
  if (f === undefined) {
    f = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" })
    offsetFormatters.set(zone, f)
  }
  const name = f.formatToParts(new Date(t)).find((p) => p.type === "timeZoneName")?.value ?? ""
  const m = /^GMT(?:([+-])(\d{2}):(\d{2}))?$/.exec(name)
  if (m === null) throw new Error(`unexpected offset name ${name} for ${zone}`)
  if (m[1] === undefined) return 0
  return (m[1] === "-" ? -1 : 1) * (Number(m[2]) * HOUR + Number(m[3]) * MINUTE)
}

/** The wall clock at `t` as a UTC-encoded number (seconds precision). */
const oracleWall = (t: number, zone: string): number => {
  const floored = Math.floor(t / 1000) * 1000
  return floored + oracleOffset(floored, zone)
}

const wallOf = (year: number, month: number, day: number, hour = 0, minute = 0, second = 0) =>
  Date.UTC(year, month - 1, day, hour, minute, second)

/** Every instant whose wall clock in `zone` is `wall`, earliest first. */
const oracleOccurrences = (zone: string, wall: number): Array<number> => {
  const offsets = new Set<number>()
  for (let k = -40; k <= 40; k++) offsets.add(oracleOffset(wall + k * HOUR, zone))
  return [...new Set([...offsets].map((o) => wall - o).filter((t) => oracleOffset(t, zone) === wall - t))].sort(
    (a, b) => a - b
  )
}

interface Transition {
  /** First instant with the new offset. */
  readonly at: number
  readonly before: number
  readonly after: number
}

/** Offset changes in (from, to], found by a day-step scan and a minute-precise bisection. */
const scanTransitions = (zone: string, from: number, to: number): Array<Transition> => {
  const out: Array<Transition> = []
  let prevT = from
  let prevO = oracleOffset(from, zone)
  for (let t = from + DAY; t <= to; t += DAY) {
    const o = oracleOffset(t, zone)
    if (o !== prevO) {
      let lo = prevT // offset prevO
      let hi = t // offset o
      while (hi - lo > MINUTE) {
        const mid = lo + Math.floor((hi - lo) / 2 / MINUTE) * MINUTE
        if (oracleOffset(mid, zone) === prevO) lo = mid
        else hi = mid
      }
      out.push({ at: hi, before: prevO, after: oracleOffset(hi, zone) })
    }
    prevT = t
    prevO = o
  }
  return out
}

/**
 * What `instantOf` must answer: the first occurrence of the wall time, or for a wall time
 * skipped by a forward jump, the instant it names under the offset before the jump (which
 * lies after the jump, by the jump's length). Found by a minute-by-minute scan around it.
 */
const oracleInstantOf = (zone: string, wall: number): number => {
  const occ = oracleOccurrences(zone, wall)
  if (occ.length > 0) return occ[0]!
  let prev = oracleOffset(wall - 16 * HOUR, zone)
  for (let t = wall - 16 * HOUR + MINUTE; t <= wall + 16 * HOUR; t += MINUTE) {
    const o = oracleOffset(t, zone)
    if (o !== prev && o > prev && t + prev <= wall && wall < t + o) return wall - prev
    prev = o
  }
  throw new Error(`no occurrence and no gap for ${new Date(wall).toISOString()} in ${zone}`)
}

const RANGE_FROM = Date.UTC(2000, 0, 1)
const RANGE_TO = Date.UTC(2041, 0, 1)

const transitionCache = new Map<string, Array<Transition>>()
const transitionsOf = (zone: string): Array<Transition> => {
  let ts = transitionCache.get(zone)
  if (ts === undefined) {
    ts = scanTransitions(zone, RANGE_FROM - 2 * DAY, RANGE_TO)
    transitionCache.set(zone, ts)
  }
  return ts
}

const ZONES = [
  "America/New_York",
  "Europe/Berlin",
  "Australia/Sydney",
  "Asia/Kolkata",
  "UTC",
  "America/St_Johns",
  "Pacific/Chatham",
  "Australia/Lord_Howe",
  // Clocks jump at midnight here, so some local days start at 01:00.
  "America/Santiago",
  "America/Havana"
] as const
const MIDNIGHT_JUMP_ZONES = new Set<string>(["America/Santiago", "America/Havana"])
const DST_ZONES = ZONES.filter((z) => z !== "UTC" && z !== "Asia/Kolkata")

const zoneArb = fc.constantFrom(...ZONES)
const instantArb = fc.integer({ min: RANGE_FROM, max: RANGE_TO - 1 })
/** An instant within three hours of one of the zone's offset changes. */
const nearTransitionArb = fc.constantFrom(...DST_ZONES).chain((zone) =>
  fc
    .tuple(fc.nat({ max: transitionsOf(zone).length - 1 }), fc.integer({ min: -3 * 3600, max: 3 * 3600 }), fc.nat({ max: 999 }))
    .map(([i, s, ms]) => ({ zone, transition: transitionsOf(zone)[i]!, t: transitionsOf(zone)[i]!.at + s * 1000 + ms }))
)

const iso = (d: Date) => d.toISOString()

// ---------------------------------------------------------------------------------------

describe("oracle sanity", () => {
  it("knows the 2026 New York transitions", () => {
    const ts = transitionsOf("America/New_York").filter((t) => new Date(t.at).getUTCFullYear() === 2026)
    expect(ts.map((t) => [iso(new Date(t.at)), t.before / HOUR, t.after / HOUR])).toEqual([
      ["2026-03-08T07:00:00.000Z", -5, -4],
      ["2026-11-01T06:00:00.000Z", -4, -5]
    ])
  })

  it("finds DST transitions every year in every DST zone, and none in Kolkata or UTC", () => {
    for (const zone of DST_ZONES) expect(transitionsOf(zone).length).toBeGreaterThanOrEqual(2 * 30)
    expect(transitionsOf("Asia/Kolkata")).toEqual([])
    expect(transitionsOf("UTC")).toEqual([])
  })
})

describe("localParts / localDate / localTimeOfDay", () => {
  it("reads concrete wall clocks", () => {
    const t = new Date("2026-11-25T08:00:00Z")
    expect(localParts(t, "America/New_York")).toEqual({
      year: 2026,
      month: 11,
      day: 25,
      hour: 3,
      minute: 0,
      second: 0,
      weekday: 3
    })
    expect(localParts(t, "Asia/Kolkata")).toEqual({
      year: 2026,
      month: 11,
      day: 25,
      hour: 13,
      minute: 30,
      second: 0,
      weekday: 3
    })
    // Across the date line: already Thursday in Chatham (+13:45 in southern summer).
    expect(localParts(new Date("2026-11-25T12:00:00Z"), "Pacific/Chatham")).toMatchObject({
      day: 26,
      hour: 1,
      minute: 45,
      weekday: 4
    })
    expect(localDate(new Date("2026-01-01T04:59:59Z"), "America/New_York")).toBe("2025-12-31")
    expect(localDate(new Date("2026-01-01T05:00:00Z"), "America/New_York")).toBe("2026-01-01")
    expect(localTimeOfDay(new Date("2026-01-01T05:00:00Z"), "America/New_York")).toBe("00:00")
    expect(localTimeOfDay(new Date("2026-07-01T12:34:56Z"), "America/St_Johns")).toBe("10:04")
    expect(localTimeOfDay(new Date("2026-07-01T23:59:59Z"), "UTC")).toBe("23:59")
  })

  it("says 00, never 24, for the midnight hour", () => {
    expect(localParts(new Date("2026-06-01T00:00:00Z"), "UTC").hour).toBe(0)
    expect(localTimeOfDay(new Date("2026-06-01T04:00:30Z"), "America/New_York")).toBe("00:00")
  })

  it.prop("agree with the oracle's wall clock", [instantArb, zoneArb], ([t, zone]) => {
    const wall = new Date(oracleWall(t, zone))
    const p = localParts(new Date(t), zone)
    expect(p).toEqual({
      year: wall.getUTCFullYear(),
      month: wall.getUTCMonth() + 1,
      day: wall.getUTCDate(),
      hour: wall.getUTCHours(),
      minute: wall.getUTCMinutes(),
      second: wall.getUTCSeconds(),
      weekday: wall.getUTCDay()
    })
    expect(localDate(new Date(t), zone)).toBe(wall.toISOString().slice(0, 10))
    expect(localTimeOfDay(new Date(t), zone)).toBe(wall.toISOString().slice(11, 16))
  }, { fastCheck: { numRuns: 500 } })

  // localParts reads offsets from a cache per zone and day: a sequence of instants that
  // revisits seconds, hops between zones and crosses transitions must still get each
  // instant's own wall clock, never a neighbour's.
  it.prop(
    "agree with the oracle over a sequence that revisits seconds and zones",
    [fc.array(fc.tuple(instantArb, zoneArb, fc.integer({ min: -1500, max: 1500 })), { minLength: 2, maxLength: 30 })],
    ([steps]) => {
      for (const [t, zone, nudge] of steps) {
        for (const at of [t, t + nudge, t, t - 1, t + 1000]) {
          const wall = new Date(oracleWall(at, zone))
          expect(localDate(new Date(at), zone)).toBe(wall.toISOString().slice(0, 10))
          expect(localParts(new Date(at), zone).second).toBe(wall.getUTCSeconds())
          expect(localTimeOfDay(new Date(at), zone)).toBe(wall.toISOString().slice(11, 16))
        }
      }
    },
    { fastCheck: { numRuns: 200 } }
  )
})

describe("localParts against Intl's own reading", () => {
  // Any year, including local mean time before a zone's first standard offset (seconds in
  // the offset: Berlin +00:53:28 until 1893) and the last representable days, where
  // localParts hands over to Intl.
  const anyInstantArb = fc.integer({ min: Date.UTC(1, 0, 1), max: Date.UTC(9999, 11, 31, 23, 59, 59, 999) })

  it.prop("equal for any instant of years 1–9999", [anyInstantArb, zoneArb], ([t, zone]) => {
    expect(localParts(new Date(t), zone)).toEqual(intlLocalParts(new Date(t), zone))
  }, { fastCheck: { numRuns: 1000 } })

  it.prop("equal near transitions, to the millisecond", [nearTransitionArb], ([{ t, zone }]) => {
    expect(localParts(new Date(t), zone)).toEqual(intlLocalParts(new Date(t), zone))
  }, { fastCheck: { numRuns: 1000 } })

  it("reads local mean time with its seconds, and era years before year 1 as Intl does", () => {
    expect(localParts(new Date("1890-06-01T12:00:00Z"), "Europe/Berlin")).toEqual(
      { year: 1890, month: 6, day: 1, hour: 12, minute: 53, second: 28, weekday: 0 }
    )
    const bc = new Date(0)
    bc.setUTCFullYear(0, 5, 1) // year 0: 1 BC
    expect(localParts(bc, "UTC").year).toBe(1)
    expect(localParts(bc, "UTC")).toEqual(intlLocalParts(bc, "UTC"))
  })

  it("refuses an unknown zone or an invalid date with Intl's RangeError", () => {
    expect(() => localParts(new Date("2026-06-01T00:00:00Z"), "Mars/Olympus_Mons")).toThrow(RangeError)
    expect(() => localParts(new Date(Number.NaN), "UTC")).toThrow(RangeError)
  })
})

describe("zoneOffsetMs", () => {
  it("gives the concrete offsets, east positive", () => {
    const jan = new Date("2026-01-15T12:00:00Z")
    const jul = new Date("2026-07-15T12:00:00Z")
    const h = (x: number) => x / HOUR
    expect([h(zoneOffsetMs(jan, "America/New_York")), h(zoneOffsetMs(jul, "America/New_York"))]).toEqual([-5, -4])
    expect([h(zoneOffsetMs(jan, "Europe/Berlin")), h(zoneOffsetMs(jul, "Europe/Berlin"))]).toEqual([1, 2])
    expect([h(zoneOffsetMs(jan, "Australia/Sydney")), h(zoneOffsetMs(jul, "Australia/Sydney"))]).toEqual([11, 10])
    expect([h(zoneOffsetMs(jan, "Asia/Kolkata")), h(zoneOffsetMs(jul, "Asia/Kolkata"))]).toEqual([5.5, 5.5])
    expect([h(zoneOffsetMs(jan, "UTC")), h(zoneOffsetMs(jul, "UTC"))]).toEqual([0, 0])
    expect([h(zoneOffsetMs(jan, "America/St_Johns")), h(zoneOffsetMs(jul, "America/St_Johns"))]).toEqual([-3.5, -2.5])
    expect([h(zoneOffsetMs(jan, "Pacific/Chatham")), h(zoneOffsetMs(jul, "Pacific/Chatham"))]).toEqual([13.75, 12.75])
    expect([h(zoneOffsetMs(jan, "Australia/Lord_Howe")), h(zoneOffsetMs(jul, "Australia/Lord_Howe"))]).toEqual([11, 10.5])
  })

  it("ignores the milliseconds of the instant", () => {
    expect(zoneOffsetMs(new Date("2026-01-15T12:00:00.999Z"), "Asia/Kolkata")).toBe(5.5 * HOUR)
    expect(zoneOffsetMs(new Date("2026-01-15T12:00:00.001Z"), "America/New_York")).toBe(-5 * HOUR)
  })

  it("switches exactly at the transition instant", () => {
    expect(zoneOffsetMs(new Date("2026-03-08T06:59:59.999Z"), "America/New_York")).toBe(-5 * HOUR)
    expect(zoneOffsetMs(new Date("2026-03-08T07:00:00.000Z"), "America/New_York")).toBe(-4 * HOUR)
    expect(zoneOffsetMs(new Date("2026-10-25T00:59:59Z"), "Europe/Berlin")).toBe(2 * HOUR)
    expect(zoneOffsetMs(new Date("2026-10-25T01:00:00Z"), "Europe/Berlin")).toBe(1 * HOUR)
  })

  it.prop("agrees with the oracle", [instantArb, zoneArb], ([t, zone]) => {
    expect(zoneOffsetMs(new Date(t), zone)).toBe(oracleOffset(t, zone))
  }, { fastCheck: { numRuns: 500 } })

  it.prop("agrees with the oracle near transitions", [nearTransitionArb], ([{ t, zone }]) => {
    expect(zoneOffsetMs(new Date(t), zone)).toBe(oracleOffset(t, zone))
  }, { fastCheck: { numRuns: 500 } })
})

describe("instantOf", () => {
  it("names ordinary wall times", () => {
    expect(iso(instantOf("America/New_York", 2026, 11, 25, 3))).toBe("2026-11-25T08:00:00.000Z")
    expect(iso(instantOf("America/New_York", 2026, 7, 4, 12, 30, 15))).toBe("2026-07-04T16:30:15.000Z")
    expect(iso(instantOf("Europe/Berlin", 2026, 1, 1))).toBe("2025-12-31T23:00:00.000Z")
    expect(iso(instantOf("UTC", 2028, 2, 29, 23, 59, 59))).toBe("2028-02-29T23:59:59.000Z")
    expect(iso(instantOf("Asia/Kolkata", 2026, 7, 1))).toBe("2026-06-30T18:30:00.000Z")
    expect(iso(instantOf("Asia/Kolkata", 2026, 1, 1, 5, 30))).toBe("2026-01-01T00:00:00.000Z")
    expect(iso(instantOf("Pacific/Chatham", 2026, 1, 1))).toBe("2025-12-31T10:15:00.000Z")
    expect(iso(instantOf("America/St_Johns", 2026, 1, 1))).toBe("2026-01-01T03:30:00.000Z")
  })

  it("defaults hour, minute and second to zero", () => {
    expect(instantOf("Europe/Berlin", 2026, 6, 1).getTime()).toBe(instantOf("Europe/Berlin", 2026, 6, 1, 0, 0, 0).getTime())
  })

  describe("spring forward: a skipped wall time lands after the gap", () => {
    it("America/New_York 2026-03-08 02:30 → 03:30 EDT", () => {
      const t = instantOf("America/New_York", 2026, 3, 8, 2, 30)
      expect(iso(t)).toBe("2026-03-08T07:30:00.000Z")
      expect(localTimeOfDay(t, "America/New_York")).toBe("03:30")
    })

    it("America/New_York 2026-03-08 02:00 (the first skipped minute) → 03:00 EDT", () => {
      expect(iso(instantOf("America/New_York", 2026, 3, 8, 2, 0))).toBe("2026-03-08T07:00:00.000Z")
      // The minute before the gap is untouched.
      expect(iso(instantOf("America/New_York", 2026, 3, 8, 1, 59))).toBe("2026-03-08T06:59:00.000Z")
      // 03:00 exists and is the same instant as the shifted 02:00.
      expect(iso(instantOf("America/New_York", 2026, 3, 8, 3, 0))).toBe("2026-03-08T07:00:00.000Z")
    })

    it("Europe/Berlin 2026-03-29 02:30 → 03:30 CEST", () => {
      const t = instantOf("Europe/Berlin", 2026, 3, 29, 2, 30)
      expect(iso(t)).toBe("2026-03-29T01:30:00.000Z")
      expect(localTimeOfDay(t, "Europe/Berlin")).toBe("03:30")
    })

    it("Australia/Sydney 2026-10-04 (first Sunday of October) 02:30 → 03:30 AEDT", () => {
      const t = instantOf("Australia/Sydney", 2026, 10, 4, 2, 30)
      expect(iso(t)).toBe("2026-10-03T16:30:00.000Z")
      expect(localTimeOfDay(t, "Australia/Sydney")).toBe("03:30")
    })

    it("America/St_Johns 2026-03-08 02:30 → 03:30 NDT", () => {
      const t = instantOf("America/St_Johns", 2026, 3, 8, 2, 30)
      expect(iso(t)).toBe("2026-03-08T06:00:00.000Z")
      expect(localTimeOfDay(t, "America/St_Johns")).toBe("03:30")
    })

    it("Australia/Lord_Howe 2026-10-04 02:15 → 02:45 (a 30-minute jump)", () => {
      const t = instantOf("Australia/Lord_Howe", 2026, 10, 4, 2, 15)
      expect(iso(t)).toBe("2026-10-03T15:45:00.000Z")
      expect(localTimeOfDay(t, "Australia/Lord_Howe")).toBe("02:45")
    })
  })

  describe("fall back: a repeated wall time takes its first occurrence", () => {
    it("America/New_York 2026-11-01 01:30 → 05:30Z (EDT), not 06:30Z (EST)", () => {
      expect(iso(instantOf("America/New_York", 2026, 11, 1, 1, 30))).toBe("2026-11-01T05:30:00.000Z")
      expect(localTimeOfDay(new Date("2026-11-01T06:30:00Z"), "America/New_York")).toBe("01:30")
      expect(iso(instantOf("America/New_York", 2026, 11, 1, 2, 0))).toBe("2026-11-01T07:00:00.000Z")
    })

    it("Europe/Berlin 2026-10-25 02:30 → 00:30Z (CEST), not 01:30Z (CET)", () => {
      expect(iso(instantOf("Europe/Berlin", 2026, 10, 25, 2, 30))).toBe("2026-10-25T00:30:00.000Z")
    })

    it("Australia/Sydney 2026-04-05 (first Sunday of April) 02:30 → AEDT occurrence", () => {
      expect(iso(instantOf("Australia/Sydney", 2026, 4, 5, 2, 30))).toBe("2026-04-04T15:30:00.000Z")
      expect(localTimeOfDay(new Date("2026-04-04T16:30:00Z"), "Australia/Sydney")).toBe("02:30")
    })

    it("Australia/Lord_Howe 2026-04-05 01:45 → the +11 occurrence", () => {
      expect(iso(instantOf("Australia/Lord_Howe", 2026, 4, 5, 1, 45))).toBe("2026-04-04T14:45:00.000Z")
      expect(localTimeOfDay(new Date("2026-04-04T15:15:00Z"), "Australia/Lord_Howe")).toBe("01:45")
    })
  })

  it.prop("round-trips localParts to the second, or to the first occurrence of a repeated time", [
    fc.oneof(
      fc.tuple(instantArb, zoneArb).map(([t, zone]) => ({ t, zone })),
      nearTransitionArb
    )
  ], ([{ t, zone }]) => {
    const p = localParts(new Date(t), zone)
    const back = instantOf(zone, p.year, p.month, p.day, p.hour, p.minute, p.second).getTime()
    const floored = Math.floor(t / 1000) * 1000
    const occurrences = oracleOccurrences(zone, wallOf(p.year, p.month, p.day, p.hour, p.minute, p.second))
    expect(occurrences).toContain(floored)
    if (occurrences.length === 1) expect(back).toBe(floored)
    else {
      expect(occurrences).toHaveLength(2)
      expect(back).toBe(occurrences[0])
      // The earlier instant has the same wall clock.
      expect(localParts(new Date(back), zone)).toEqual(p)
    }
  }, { fastCheck: { numRuns: 1000 } })

  it.prop("matches the oracle for wall times around every transition", [
    fc.constantFrom(...DST_ZONES).chain((zone) =>
      fc.tuple(fc.nat({ max: transitionsOf(zone).length - 1 }), fc.integer({ min: -180, max: 180 })).map(([i, m]) => {
        const tr = transitionsOf(zone)[i]!
        return { zone, wall: tr.at + tr.before + m * MINUTE }
      })
    )
  ], ([{ wall, zone }]) => {
    const d = new Date(wall)
    const got = instantOf(
      zone,
      d.getUTCFullYear(),
      d.getUTCMonth() + 1,
      d.getUTCDate(),
      d.getUTCHours(),
      d.getUTCMinutes(),
      d.getUTCSeconds()
    )
    expect(iso(got)).toBe(iso(new Date(oracleInstantOf(zone, wall))))
  }, { fastCheck: { numRuns: 1000 } })

  it.prop("moves a skipped wall time forward by exactly the jump", [
    fc.constantFrom(...DST_ZONES).chain((zone) => {
      const forward = transitionsOf(zone).filter((tr) => tr.after > tr.before)
      return fc.tuple(fc.constantFrom(...forward), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true })).map(
        ([tr, frac]) => {
          const gap = tr.after - tr.before
          return { zone, tr, wall: tr.at + tr.before + Math.floor((frac * gap) / MINUTE) * MINUTE }
        }
      )
    })
  ], ([{ tr, wall, zone }]) => {
    const d = new Date(wall)
    const got = instantOf(zone, d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes())
    expect(oracleOccurrences(zone, wall)).toEqual([])
    expect(got.getTime()).toBe(wall - tr.before)
    expect(got.getTime()).toBeGreaterThanOrEqual(tr.at)
    expect(oracleWall(got.getTime(), zone)).toBe(wall + (tr.after - tr.before))
  }, { fastCheck: { numRuns: 500 } })
})

describe("startOfLocalDay / startOfNextLocalDay", () => {
  it("concrete days", () => {
    const t = new Date("2026-11-25T08:00:00Z")
    expect(iso(startOfLocalDay(t, "America/New_York"))).toBe("2026-11-25T05:00:00.000Z")
    expect(iso(startOfNextLocalDay(t, "America/New_York"))).toBe("2026-11-26T05:00:00.000Z")
    expect(iso(startOfLocalDay(t, "Asia/Kolkata"))).toBe("2026-11-24T18:30:00.000Z")
    expect(iso(startOfNextLocalDay(t, "Asia/Kolkata"))).toBe("2026-11-25T18:30:00.000Z")
    expect(iso(startOfLocalDay(t, "UTC"))).toBe("2026-11-25T00:00:00.000Z")
    expect(iso(startOfNextLocalDay(t, "UTC"))).toBe("2026-11-26T00:00:00.000Z")
    // Exactly at midnight the day starts there.
    const midnight = new Date("2026-11-25T05:00:00Z")
    expect(iso(startOfLocalDay(midnight, "America/New_York"))).toBe("2026-11-25T05:00:00.000Z")
    expect(iso(startOfNextLocalDay(midnight, "America/New_York"))).toBe("2026-11-26T05:00:00.000Z")
  })

  it("a spring-forward day is 23 hours, a fall-back day 25 (America/New_York, Europe/Berlin)", () => {
    const len = (t: string, zone: string) =>
      (startOfNextLocalDay(new Date(t), zone).getTime() - startOfLocalDay(new Date(t), zone).getTime()) / HOUR
    expect(len("2026-03-08T17:00:00Z", "America/New_York")).toBe(23)
    expect(len("2026-11-01T17:00:00Z", "America/New_York")).toBe(25)
    expect(len("2026-03-29T12:00:00Z", "Europe/Berlin")).toBe(23)
    expect(len("2026-10-25T12:00:00Z", "Europe/Berlin")).toBe(25)
    expect(len("2026-07-01T12:00:00Z", "Europe/Berlin")).toBe(24)
  })

  it("Australia/Sydney: 2026-04-05 is 25 hours, 2026-10-04 is 23", () => {
    const apr = new Date("2026-04-05T02:00:00Z") // 12:00 AEST on the 5th
    expect(iso(startOfLocalDay(apr, "Australia/Sydney"))).toBe("2026-04-04T13:00:00.000Z") // 00:00 AEDT
    expect(iso(startOfNextLocalDay(apr, "Australia/Sydney"))).toBe("2026-04-05T14:00:00.000Z") // 00:00 AEST
    const oct = new Date("2026-10-04T02:00:00Z") // 13:00 AEDT on the 4th
    expect(iso(startOfLocalDay(oct, "Australia/Sydney"))).toBe("2026-10-03T14:00:00.000Z") // 00:00 AEST
    expect(iso(startOfNextLocalDay(oct, "Australia/Sydney"))).toBe("2026-10-04T13:00:00.000Z") // 00:00 AEDT
  })

  it("Australia/Lord_Howe: 24.5 and 23.5 hour days", () => {
    const len = (t: string) =>
      (startOfNextLocalDay(new Date(t), "Australia/Lord_Howe").getTime() -
        startOfLocalDay(new Date(t), "Australia/Lord_Howe").getTime()) / HOUR
    expect(len("2026-04-05T02:00:00Z")).toBe(24.5)
    expect(len("2026-10-04T02:00:00Z")).toBe(23.5)
  })

  it("America/Santiago: the day whose midnight is skipped starts at 01:00", () => {
    // Chile moves 00:00 → 01:00 on Sunday 2026-09-06.
    const t = new Date("2026-09-06T15:00:00Z")
    const start = startOfLocalDay(t, "America/Santiago")
    expect(iso(start)).toBe("2026-09-06T04:00:00.000Z")
    expect(localTimeOfDay(start, "America/Santiago")).toBe("01:00")
    expect(localDate(new Date(start.getTime() - 1), "America/Santiago")).toBe("2026-09-05")
  })

  it("America/St_Johns 2000-10-29: the repeated hour of Oct 28 after Oct 29 00:00 NDT still ends at the next midnight", () => {
    // Fall-back at 00:01 NDT to 23:01 NST the day before: 00:00-00:01 on the 29th is shown,
    // then 23:01-23:59 on the 28th again, then the 29th from 00:00 NST.
    const zone = "America/St_Johns"
    const repeated = new Date("2000-10-29T03:00:00Z")
    expect(localDate(repeated, zone)).toBe("2000-10-28")
    expect(localTimeOfDay(repeated, zone)).toBe("23:30")
    expect(iso(startOfLocalDay(repeated, zone))).toBe("2000-10-28T02:30:00.000Z")
    expect(iso(startOfNextLocalDay(repeated, zone))).toBe("2000-10-29T03:30:00.000Z")
    // The first pass through the 28th's last hour ends at the first 00:00 of the 29th.
    expect(iso(startOfNextLocalDay(new Date("2000-10-29T02:00:00Z"), zone))).toBe("2000-10-29T02:30:00.000Z")
    // instantOf still names the first occurrence of 00:00.
    expect(iso(instantOf(zone, 2000, 10, 29))).toBe("2000-10-29T02:30:00.000Z")
  })

  const dayLengths = (zone: string): Array<number> =>
    zone === "Australia/Lord_Howe"
      ? [23.5, 24, 24.5].map((h) => h * HOUR)
      : zone === "UTC" || zone === "Asia/Kolkata"
      ? [24 * HOUR]
      : [23, 24, 25].map((h) => h * HOUR)

  const previousDate = (date: string) => {
    const [y, m, d] = date.split("-").map(Number) as [number, number, number]
    const p = addDays(y, m, d, -1)
    return `${String(p.year).padStart(4, "0")}-${String(p.month).padStart(2, "0")}-${String(p.day).padStart(2, "0")}`
  }

  it.prop("bracket the instant by the first instants of its local day and the next", [
    fc.oneof(fc.tuple(instantArb, zoneArb).map(([t, zone]) => ({ t, zone })), nearTransitionArb)
  ], ([{ t, zone }]) => {
    const at = new Date(t)
    const start = startOfLocalDay(at, zone)
    const next = startOfNextLocalDay(at, zone)
    expect(start.getTime()).toBeLessThanOrEqual(t)
    expect(next.getTime()).toBeGreaterThan(t)
    const today = localDate(at, zone)
    // Each is the first instant of its local date (independently checked by the oracle).
    expect(new Date(oracleWall(start.getTime(), zone)).toISOString().slice(0, 10)).toBe(today)
    expect(new Date(oracleWall(start.getTime() - 1000, zone)).toISOString().slice(0, 10)).toBe(previousDate(today))
    expect(previousDate(new Date(oracleWall(next.getTime(), zone)).toISOString().slice(0, 10))).toBe(today)
    expect(new Date(oracleWall(next.getTime() - 1000, zone)).toISOString().slice(0, 10)).toBe(today)
    if (!MIDNIGHT_JUMP_ZONES.has(zone)) {
      expect(localParts(start, zone)).toMatchObject({ hour: 0, minute: 0, second: 0 })
      expect(localParts(next, zone)).toMatchObject({ hour: 0, minute: 0, second: 0 })
    }
    expect(dayLengths(zone)).toContain(next.getTime() - start.getTime())
    // Starting again from the start of the day or from its last second changes nothing.
    expect(startOfLocalDay(start, zone).getTime()).toBe(start.getTime())
    expect(startOfLocalDay(new Date(next.getTime() - 1), zone).getTime()).toBe(start.getTime())
    // Where next midnight happens twice (a fall-back just after midnight, St. John's before
    // 2011) the next day's start is its first occurrence, before `next`.
    const nextMidnights = oracleOccurrences(zone, oracleWall(next.getTime(), zone))
    expect(startOfLocalDay(next, zone).getTime()).toBe(nextMidnights[0])
    if (nextMidnights.length === 1) expect(nextMidnights[0]).toBe(next.getTime())
  }, { fastCheck: { numRuns: 1000 } })
})

describe("addDays", () => {
  it("crosses month, year and leap-day boundaries", () => {
    expect(addDays(2028, 2, 28, 1)).toEqual({ year: 2028, month: 2, day: 29 })
    expect(addDays(2026, 2, 28, 1)).toEqual({ year: 2026, month: 3, day: 1 })
    expect(addDays(2026, 12, 31, 1)).toEqual({ year: 2027, month: 1, day: 1 })
    expect(addDays(2026, 3, 1, -1)).toEqual({ year: 2026, month: 2, day: 28 })
    expect(addDays(2026, 1, 1, -1)).toEqual({ year: 2025, month: 12, day: 31 })
    expect(addDays(2026, 1, 31, 365)).toEqual({ year: 2027, month: 1, day: 31 })
    expect(addDays(2026, 5, 17, 0)).toEqual({ year: 2026, month: 5, day: 17 })
  })

  it.prop("is undone by its negation and agrees with UTC day arithmetic", [
    fc.integer({ min: Date.UTC(2000, 0, 1) / DAY, max: Date.UTC(2040, 11, 31) / DAY }),
    fc.integer({ min: -2000, max: 2000 })
  ], ([epochDay, n]) => {
    const d = new Date(epochDay * DAY)
    const [y, m, day] = [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()]
    const moved = addDays(y, m, day, n)
    const expected = new Date((epochDay + n) * DAY)
    expect(moved).toEqual({ year: expected.getUTCFullYear(), month: expected.getUTCMonth() + 1, day: expected.getUTCDate() })
    expect(addDays(moved.year, moved.month, moved.day, -n)).toEqual({ year: y, month: m, day })
  })
})

describe("parseCalendarDate", () => {
  it("accepts real dates", () => {
    expect(parseCalendarDate("2028-02-29")).toEqual({ year: 2028, month: 2, day: 29 })
    expect(parseCalendarDate("2000-02-29")).toEqual({ year: 2000, month: 2, day: 29 })
    expect(parseCalendarDate("2026-12-31")).toEqual({ year: 2026, month: 12, day: 31 })
    expect(parseCalendarDate("2026-01-01")).toEqual({ year: 2026, month: 1, day: 1 })
  })

  it.each([
    "2026-02-30",
    "2026-02-29",
    "2100-02-29",
    "2026-04-31",
    "2026-13-01",
    "2026-00-10",
    "2026-01-00",
    "2026-01-32",
    "2026-1-01",
    "2026-01-1",
    "26-01-01",
    " 2026-01-01",
    "2026-01-01 ",
    "2026-01-01T00:00",
    "2026/01/01",
    "",
    "not a date"
  ])("rejects %j", (text) => {
    expect(parseCalendarDate(text)).toBeUndefined()
  })

  it.prop("round-trips every date of 2000-2040", [
    fc.integer({ min: Date.UTC(2000, 0, 1) / DAY, max: Date.UTC(2040, 11, 31) / DAY })
  ], ([epochDay]) => {
    const d = new Date(epochDay * DAY)
    const text = d.toISOString().slice(0, 10)
    expect(parseCalendarDate(text)).toEqual({ year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() })
  })
})
