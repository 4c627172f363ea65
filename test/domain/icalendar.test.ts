import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import ICAL from "ical.js"
import { feedRule as feedRuleOf, type FeedTask, icalPriority, renderFeed } from "../../src/changes/CalendarFeed.js"
import { escapeText, foldLine, unescapeText, unfold, utcOffset } from "../../src/changes/ICalendar.js"
import { transitionsIn, vtimezone } from "../../src/changes/VTimezone.js"
import { offsetAt } from "../../src/kernel/ZoneOffsets.js"

const octets = (s: string) => new TextEncoder().encode(s).length
const physicalLines = (folded: string) => folded.split("\r\n").slice(0, -1)

/** Any text a content line can carry once escaped: no CR or LF (escaping turns those into `\n`). */
const lineText = fc.string({ unit: "binary", maxLength: 400 }).map((s) => s.replace(/[\r\n]/g, ""))

describe("TEXT escaping (RFC 5545 §3.3.11)", () => {
  it("escapes backslash, semicolon, comma and line breaks", () => {
    expect(escapeText("a,b;c\\d\ne")).toBe("a\\,b\\;c\\\\d\\ne")
    expect(escapeText("crlf\r\nand cr\rend")).toBe("crlf\\nand cr\\nend")
    expect(escapeText("tab\tstays")).toBe("tab\tstays")
    expect(escapeText("bell\u0007 and del\u007f go")).toBe("bell and del go")
    expect(escapeText("plain 🍞 面包")).toBe("plain 🍞 面包")
  })

  it.prop("unescaping gives back the text", [fc.string({ unit: "binary", maxLength: 200 })], ([s]) => {
    const expected = s.replace(/\r\n?/g, "\n").replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "")
    const escaped = escapeText(s)
    expect(escaped).not.toMatch(/[\r\n]/)
    expect(unescapeText(escaped)).toBe(expected)
  })
})

describe("folding (RFC 5545 §3.1)", () => {
  it("leaves a short line alone and ends it with CRLF", () => {
    expect(foldLine("SUMMARY:short")).toBe("SUMMARY:short\r\n")
    const exactly75 = `SUMMARY:${"x".repeat(67)}`
    expect(foldLine(exactly75)).toBe(`${exactly75}\r\n`)
  })

  it("breaks at 75 octets, continuation lines start with one space", () => {
    const folded = foldLine(`SUMMARY:${"x".repeat(200)}`)
    const lines = physicalLines(folded)
    // 208 octets: 75, then 74 + 1 space, then the last 59 + 1 space.
    expect(lines.map(octets)).toEqual([75, 75, 60])
    expect(lines.slice(1).every((l) => l.startsWith(" "))).toBe(true)
  })

  it("never splits a UTF-8 sequence: a 4-octet emoji moves whole to the next line", () => {
    // 73 ASCII octets then an emoji (4 octets) would need 77: the emoji starts line two.
    const folded = foldLine(`${"a".repeat(73)}😀b`)
    expect(physicalLines(folded)).toEqual(["a".repeat(73), " 😀b"])
    const cjk = foldLine(`SUMMARY:${"面".repeat(60)}`)
    for (const line of physicalLines(cjk)) {
      expect(octets(line)).toBeLessThanOrEqual(75)
      expect(line.replace(/^ /, "")).toMatch(/^(SUMMARY:)?面+$/)
    }
  })

  it.prop("folding then unfolding gives back any line, and no physical line exceeds 75 octets", [lineText], ([s]) => {
    const folded = foldLine(s)
    expect(folded.endsWith("\r\n")).toBe(true)
    expect(unfold(folded)).toBe(`${s}\r\n`)
    for (const line of physicalLines(folded)) {
      expect(octets(line)).toBeLessThanOrEqual(75)
      // Each physical line is valid UTF-16 on its own, so its UTF-8 is whole.
      expect(line).not.toMatch(/^[\udc00-\udfff]|[\ud800-\udbff]$/)
    }
  })

  it.prop("escaped text folds and unfolds back to the same text", [fc.string({ unit: "binary", maxLength: 300 })], ([s]) => {
    const line = foldLine(`SUMMARY:${escapeText(s)}`)
    expect(unescapeText(unfold(line).slice("SUMMARY:".length, -2))).toBe(
      s.replace(/\r\n?/g, "\n").replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "")
    )
  })
})

describe("VTIMEZONE from the zone's real transitions", () => {
  it("finds each transition to the second", () => {
    expect(transitionsIn("America/New_York", 2026).map((t) => [new Date(t.at).toISOString(), utcOffset(t.from), utcOffset(t.to)]))
      .toEqual([
        ["2026-03-08T07:00:00.000Z", "-0500", "-0400"],
        ["2026-11-01T06:00:00.000Z", "-0400", "-0500"]
      ])
    expect(transitionsIn("Australia/Sydney", 2026).map((t) => new Date(t.at).toISOString())).toEqual([
      "2026-04-04T16:00:00.000Z",
      "2026-10-03T16:00:00.000Z"
    ])
    expect(transitionsIn("Asia/Kolkata", 2026)).toEqual([])
  })

  it("lists the range's transitions and writes the last year's as yearly rules", () => {
    const ny = vtimezone("America/New_York", 2025, 2027)
    expect(ny).toContain("TZID:America/New_York\r\n")
    expect(ny).toContain("BEGIN:DAYLIGHT\r\nDTSTART:20250309T020000\r\nTZOFFSETFROM:-0500\r\nTZOFFSETTO:-0400\r\nEND:DAYLIGHT")
    expect(ny).toContain("BEGIN:STANDARD\r\nDTSTART:20261101T020000\r\nTZOFFSETFROM:-0400\r\nTZOFFSETTO:-0500\r\nEND:STANDARD")
    expect(ny).toContain("DTSTART:20270314T020000\r\nTZOFFSETFROM:-0500\r\nTZOFFSETTO:-0400\r\nRRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=2SU")
    expect(ny).toContain("RRULE:FREQ=YEARLY;BYMONTH=11;BYDAY=1SU")
    const berlin = vtimezone("Europe/Berlin", 2026, 2027)
    expect(berlin).toContain("DTSTART:20270328T020000\r\nTZOFFSETFROM:+0100\r\nTZOFFSETTO:+0200\r\nRRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU")
    expect(berlin).toContain("RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU")
    const kolkata = vtimezone("Asia/Kolkata", 2026, 2027)
    expect(kolkata).toBe(
      "BEGIN:VTIMEZONE\r\nTZID:Asia/Kolkata\r\nBEGIN:STANDARD\r\nDTSTART:20260101T053000\r\nTZOFFSETFROM:+0530\r\n" +
        "TZOFFSETTO:+0530\r\nEND:STANDARD\r\nEND:VTIMEZONE\r\n"
    )
  })
})

const task = (over: Partial<FeedTask>): FeedTask => ({
  id: 1,
  title: "t",
  notes: "",
  priority: 0,
  due_at: "2026-11-25T14:00:00.000Z",
  series_start_at: null,
  created_at: "2026-11-01T00:00:00.000Z",
  updated_at: "2026-11-01T00:00:00.000Z",
  rrule: null,
  anchor_time: null,
  labels: [],
  ...over
})

describe("the feed's fields", () => {
  it("maps P0…P4 onto RFC 5545 priorities, P4 (urgent) highest", () => {
    expect([0, 1, 2, 3, 4].map(icalPriority)).toEqual([0, 9, 5, 3, 1])
    expect(icalPriority(7)).toBe(0)
  })

  it("writes the stored rule with a local UNTIL in UTC, COUNT from the current occurrence, the anchor when snoozed", () => {
    const budget = () => ({ left: 1000 })
    const feedRule = (...args: Parameters<typeof feedRuleOf>) => feedRuleOf(...args).rule
    const ny = "America/New_York"
    // UNTIL 2027-01-01 09:00 New York time is 14:00 UTC.
    const until = task({ rrule: "RRULE:FREQ=DAILY;UNTIL=20270101T090000", anchor_time: "09:00" })
    const due = Date.parse(until.due_at)
    expect(feedRule(until, ny, due, due - 5 * 3_600_000, budget())).toBe("FREQ=DAILY;UNTIL=20270101T140000Z")
    // Three weekly occurrences came before the current one.
    const counted = task({
      rrule: "FREQ=WEEKLY;COUNT=10",
      anchor_time: "09:00",
      series_start_at: "2026-11-04T14:00:00.000Z",
      due_at: "2026-11-25T14:00:00.000Z"
    })
    const due2 = Date.parse(counted.due_at)
    expect(feedRule(counted, ny, due2, due2 - 5 * 3_600_000, budget())).toBe("FREQ=WEEKLY;COUNT=7")
    // Without budget the stored COUNT is kept rather than guessed.
    expect(feedRule(counted, ny, due2, due2 - 5 * 3_600_000, { left: 0 })).toBe("FREQ=WEEKLY;COUNT=10")
    // Snoozed to 15:30 local: the next occurrences go back to 09:00.
    const snoozed = task({ rrule: "FREQ=DAILY", anchor_time: "09:00", due_at: "2026-11-25T20:30:00.000Z" })
    const due3 = Date.parse(snoozed.due_at)
    expect(feedRule(snoozed, ny, due3, due3 - 5 * 3_600_000, budget())).toBe("FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0")
  })

  it("uses UTC for a UTC user, without VTIMEZONE, and CRLF everywhere", () => {
    const body = renderFeed({
      zone: "UTC",
      now: new Date("2026-11-24T12:00:00.000Z"),
      calendarName: "Steady: a",
      instanceId: "i",
      origin: "http://localhost",
      tasks: [task({ labels: ["x,y"], priority: 2 })]
    })
    expect(body).not.toContain("VTIMEZONE")
    expect(body).toContain("\r\nDUE:20261125T140000Z\r\n")
    expect(body).toContain("\r\nCATEGORIES:x\\,y\r\n")
    expect(body).toContain("\r\nPRIORITY:5\r\n")
    expect(body.replace(/\r\n/g, "")).not.toMatch(/[\r\n]/)
  })

  it("an instant in a repeated hour is written in UTC, which names it exactly whatever the parser", () => {
    // 2026-11-01 01:30 happens twice in New York: 05:30Z (EDT) and 06:30Z (EST).
    const body = renderFeed({
      zone: "America/New_York",
      now: new Date("2026-10-01T12:00:00.000Z"),
      calendarName: "c",
      instanceId: "i",
      origin: "http://localhost",
      tasks: [
        task({ due_at: "2026-11-01T06:30:00.000Z" }),
        task({ id: 2, due_at: "2026-11-01T05:30:00.000Z" }),
        task({ id: 3, due_at: "2026-11-01T04:30:00.000Z" }),
        task({ id: 4, due_at: "2026-11-01T07:00:00.000Z" })
      ]
    })
    expect(body).toContain("\r\nDUE:20261101T063000Z\r\n")
    expect(body).toContain("\r\nDUE:20261101T053000Z\r\n")
    expect(body).toContain("\r\nDUE;TZID=America/New_York:20261101T003000\r\n")
    expect(body).toContain("\r\nDUE;TZID=America/New_York:20261101T020000\r\n")
  })
})

describe("ical.js reads the feed's local times back as the same instants", () => {
  const zones = ["America/New_York", "Europe/Berlin", "Australia/Sydney", "Europe/Dublin", "America/Santiago", "Asia/Kolkata", "Pacific/Chatham", "Australia/Lord_Howe", "America/Havana", "Africa/Casablanca", "Asia/Tehran", "America/Asuncion"]
  const now = new Date("2026-11-24T12:00:00.000Z")
  // From two years back to ten ahead (how far the zone's table reaches).
  const instantArb = fc.integer({ min: Date.parse("2024-11-24T00:00:00Z") / 1000, max: Date.parse("2036-12-31T00:00:00Z") / 1000 })
    .map((s) => s * 1000)

  const parse = (body: string) => {
    const calendar = new ICAL.Component(ICAL.parse(body))
    const zone = calendar.getFirstSubcomponent("vtimezone")
    // A fresh Timezone per feed: the service's registry is global, and each feed's range differs.
    const timezone = zone === null ? undefined : new ICAL.Timezone(zone)
    return calendar.getAllSubcomponents("vtodo").map((todo) => {
      const prop = todo.getFirstProperty("due")!
      const time = prop.getFirstValue() as ICAL.Time
      if (prop.getParameter("tzid") !== undefined) time.zone = timezone!
      return time.toJSDate().getTime()
    })
  }

  it("an instant right after each transition of the range and beyond it", () => {
    for (const zone of zones) {
      const edges = [2026, 2027, 2031, 2036].flatMap((y) => transitionsIn(zone, y)).flatMap((t) => [t.at - 1000, t.at, t.at + 1000])
      if (edges.length === 0) continue
      const tasks = edges.map((ms, i) => task({ id: i + 1, due_at: new Date(ms).toISOString() }))
      const read = parse(renderFeed({ zone, now, calendarName: "c", instanceId: "i", origin: "http://localhost", tasks }))
      expect(read.map((ms) => new Date(ms).toISOString()), zone).toEqual(edges.map((ms) => new Date(ms).toISOString()))
    }
  })

  it("a recurring task beyond the listed years is read on the zone's yearly rules", () => {
    // Now in 2026: the table lists up to 2036 (ten years on) and then the rules, which must
    // still be right in 2040. Chile's is "first Sunday on or after April 2": in 2040 that is
    // April 8, not the month's first Sunday (April 1).
    const cases: Array<[string, string, string]> = [
      ["America/New_York", "2040-03-12T13:00:00.000Z", "2040-03-10T14:00:00.000Z"],
      ["Europe/Berlin", "2040-10-29T08:00:00.000Z", "2040-10-27T07:00:00.000Z"],
      ["America/Santiago", "2040-04-09T13:00:00.000Z", "2040-04-07T12:00:00.000Z"],
      ["Australia/Sydney", "2040-10-08T22:00:00.000Z", "2040-10-05T23:00:00.000Z"]
    ]
    for (const [zone, due, earlier] of cases) {
      const tasks = [task({ due_at: "2026-12-01T12:00:00.000Z" }), task({ id: 2, due_at: due, rrule: "FREQ=DAILY" })]
      const body = renderFeed({ zone, now, calendarName: "c", instanceId: "i", origin: "http://localhost", tasks })
      const wall = (ms: number) => ms + offsetAt(zone, ms)
      expect(new Date(parse(body)[1]!).toISOString(), zone).toBe(due)
      // A few days earlier, across the change: the same wall clock, another offset.
      const sameWall = renderFeed({ zone, now, calendarName: "c", instanceId: "i", origin: "http://localhost", tasks: [task({ due_at: earlier, rrule: "FREQ=DAILY" })] })
      expect(new Date(parse(sameWall)[0]!).toISOString(), zone).toBe(earlier)
      expect((wall(Date.parse(due)) - wall(Date.parse(earlier))) % 86_400_000, zone).toBe(0)
    }
  })

  it.prop("for one-off and recurring tasks in zones with and without DST", [fc.constantFrom(...zones), fc.array(instantArb, { minLength: 1, maxLength: 6 }), fc.boolean()], ([zone, instants, recurring]) => {
    const tasks = instants.map((ms, i) =>
      task({ id: i + 1, due_at: new Date(ms).toISOString(), rrule: recurring ? "FREQ=DAILY" : null, series_start_at: recurring ? new Date(ms).toISOString() : null })
    )
    const body = renderFeed({ zone, now, calendarName: "c", instanceId: "i", origin: "http://localhost", tasks })
    const read = parse(body)
    instants.forEach((ms, i) => {
      // A recurring task keeps its local form; in the second pass of a repeated hour that
      // local time names the first pass (RFC 5545 §3.3.5), exactly as Steady's own rule reads it.
      const wall = ms + offsetAt(zone, ms)
      // A recurring task's local time in a repeated hour is ambiguous; RFC 5545 and ical.js
      // disagree on which pass it means, so only unambiguous ones are compared.
      const ambiguous = recurring && [wall - offsetAt(zone, ms - 86_400_000), wall - offsetAt(zone, ms + 86_400_000)]
        .some((t) => t !== ms && t + offsetAt(zone, t) === wall)
      if (!ambiguous) expect(new Date(read[i]!).toISOString()).toBe(new Date(ms).toISOString())
    })
  }, { fastCheck: { numRuns: 300 } })
})
