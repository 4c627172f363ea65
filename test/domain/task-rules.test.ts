import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { ValidationError } from "../../src/kernel/Errors.js"
import { ProjectId, TaskId, UserId } from "../../src/kernel/Ids.js"
import type { TaskRow } from "../../src/pipeline/Rows.js"
import { isBarePeriodRule, parseRule } from "../../src/recurrence/Recurrence.js"
import type { TaskCreate, TaskPatch } from "../../src/tasks/Task.js"
import {
  checkRules,
  isQuota,
  newTaskRow,
  patchTaskRow,
  QUOTA_NEEDS_PERIOD,
  type RuleView
} from "../../src/tasks/TaskRules.js"

const right = <A, E>(e: Either.Either<A, E>): A => {
  if (Either.isLeft(e)) throw new Error(`expected Right, got Left: ${JSON.stringify(e.left)}`)
  return e.right
}
const left = <A, E>(e: Either.Either<A, E>): E => {
  if (Either.isRight(e)) throw new Error(`expected Left, got Right: ${JSON.stringify(e.right)}`)
  return e.left
}
/** The ValidationError's message, after checking it names exactly `field`. */
const refusal = (e: Either.Either<unknown, ValidationError>, field: string): string => {
  const error = left(e)
  expect(error).toBeInstanceOf(ValidationError)
  expect(error._tag).toBe("ValidationError")
  expect(error.details).toEqual({ [field]: error.message })
  return error.message
}

const FREQS = ["DAILY", "WEEKLY", "MONTHLY", "YEARLY"] as const

describe("isQuota", () => {
  it("is a quota when the target is above 1 or it is tracked", () => {
    expect(isQuota({ progress_target: 1, is_tracked: false })).toBe(false)
    expect(isQuota({ progress_target: 2, is_tracked: false })).toBe(true)
    expect(isQuota({ progress_target: 1, is_tracked: true })).toBe(true)
    expect(isQuota({ progress_target: 1000, is_tracked: true })).toBe(true)
  })

  it.prop("agrees with the definition", [fc.integer({ min: 1, max: 1000 }), fc.boolean()], ([target, tracked]) => {
    expect(isQuota({ progress_target: target, is_tracked: tracked })).toBe(target > 1 || tracked)
  })
})

describe("isBarePeriodRule", () => {
  it.each(["FREQ=DAILY", "FREQ=WEEKLY;INTERVAL=2", "RRULE:FREQ=MONTHLY", "INTERVAL=3;FREQ=YEARLY", " FREQ=DAILY ", "freq=weekly"])(
    "%j is a bare period",
    (rule) => {
      expect(isBarePeriodRule(rule)).toBe(true)
    }
  )

  it.each([
    "FREQ=WEEKLY;BYDAY=MO",
    "FREQ=HOURLY",
    "FREQ=MINUTELY",
    "FREQ=DAILY;COUNT=3",
    "FREQ=DAILY;INTERVAL=",
    "FREQ=DAILY;INTERVAL=0",
    "INTERVAL=00;FREQ=WEEKLY",
    "FREQ=MONTHLY;BYMONTHDAY=1",
    "INTERVAL=2",
    "DAILY",
    ""
  ])("%j is not", (rule) => {
    expect(isBarePeriodRule(rule)).toBe(false)
  })

  it.prop("accepts FREQ and INTERVAL in either order, with or without RRULE:, and nothing more", [
    fc.constantFrom(...FREQS),
    fc.option(fc.integer({ min: 1, max: 999 }), { nil: undefined }),
    fc.boolean(),
    fc.boolean(),
    fc.constantFrom(";BYDAY=MO", ";COUNT=5", ";BYMONTH=3", ";UNTIL=20300101T000000Z")
  ], ([freq, interval, prefixed, swapped, extra]) => {
    const parts = interval === undefined ? [`FREQ=${freq}`] : [`FREQ=${freq}`, `INTERVAL=${interval}`]
    const rule = (prefixed ? "RRULE:" : "") + (swapped ? [...parts].reverse() : parts).join(";")
    expect(isBarePeriodRule(rule)).toBe(true)
    expect(isBarePeriodRule(rule + extra)).toBe(false)
    // A bare period is always a rule that parses, with that frequency and interval.
    const options = right(parseRule(rule))
    expect(options.freq).toBe({ YEARLY: 0, MONTHLY: 1, WEEKLY: 2, DAILY: 3 }[freq])
    expect(options.interval).toBe(interval ?? 1)
  })
})

describe("parseRule", () => {
  it("parses real rules", () => {
    const weekly = right(parseRule("RRULE:FREQ=WEEKLY;BYDAY=MO,WE"))
    expect(weekly.freq).toBe(2)
    expect(weekly.interval).toBe(1)
    expect(weekly.byday).toEqual([{ weekday: 0, n: 0 }, { weekday: 2, n: 0 }])
    const monthly = right(parseRule("  FREQ=MONTHLY;INTERVAL=3;BYMONTHDAY=15  "))
    expect(monthly.freq).toBe(1)
    expect(monthly.interval).toBe(3)
    expect(monthly.bymonthday).toEqual([15])
  })

  it.each([
    ["garbage", "is not an RRULE (expected e.g. FREQ=DAILY)"],
    ["", "is not an RRULE (expected e.g. FREQ=DAILY)"],
    ["every monday", "is not an RRULE (expected e.g. FREQ=DAILY)"],
    ["INTERVAL=2", "needs a FREQ"],
    ["FREQ=SOMETIMES", "needs a FREQ"],
    ["FREQ=DAILY;INTERVAL=0", "INTERVAL must be a positive integer"],
    ["FREQ=DAILY;INTERVAL=-1", "INTERVAL must be a positive integer"],
    ["FREQ=DAILY;INTERVAL=1.5", "INTERVAL must be a positive integer"],
    ["FREQ=MINUTELY", "FREQ must be YEARLY, MONTHLY, WEEKLY, DAILY or HOURLY"],
    ["FREQ=SECONDLY;INTERVAL=30", "FREQ must be YEARLY, MONTHLY, WEEKLY, DAILY or HOURLY"]
  ])("refuses %j: %s", (rule, reason) => {
    expect(left(parseRule(rule))).toBe(reason)
  })

  it.each(["FREQ=DAILY;FOO=BAR", "FREQ=WEEKLY;BYDAY=XX", "FREQ=DAILY;UNTIL=notadate", "FREQ=DAILY;;"])(
    "refuses %j as unparseable",
    (rule) => {
      expect(left(parseRule(rule))).toMatch(/^does not parse: /)
    }
  )
})

// ---------------------------------------------------------------------------------------

const PLAIN: RuleView = {
  due_at: null,
  target_at: null,
  deadline_at: null,
  rrule: null,
  is_reminder: false,
  is_tracked: false,
  progress_target: 1
}
const QUOTA: RuleView = { ...PLAIN, progress_target: 3, rrule: "FREQ=WEEKLY" }
const STRICT = { allowPastDeadline: false, capAtDeadline: false, ruleTouched: true, dateTouched: true }

describe("checkRules", () => {
  it("passes a plain task and a proper quota through unchanged", () => {
    expect(right(checkRules(PLAIN, STRICT))).toEqual(PLAIN)
    expect(right(checkRules(QUOTA, STRICT))).toEqual(QUOTA)
    const tracked = { ...PLAIN, is_tracked: true, rrule: "INTERVAL=2;FREQ=MONTHLY" }
    expect(right(checkRules(tracked, STRICT))).toEqual(tracked)
  })

  it("a quota needs a period when its rule is touched", () => {
    expect(QUOTA_NEEDS_PERIOD).toBe("A quota needs a period")
    expect(refusal(checkRules({ ...QUOTA, rrule: null }, STRICT), "rrule")).toBe("A quota needs a period")
    expect(refusal(checkRules({ ...PLAIN, is_tracked: true }, STRICT), "rrule")).toBe("A quota needs a period")
    // A legacy quota without a rule is left alone while the rule is not touched.
    expect(right(checkRules({ ...QUOTA, rrule: null }, { ...STRICT, ruleTouched: false }))).toEqual({ ...QUOTA, rrule: null })
  })

  it("a quota has no due date when the date is touched", () => {
    const view = { ...QUOTA, due_at: "2026-11-25T08:00:00.000Z" }
    expect(refusal(checkRules(view, STRICT), "due_at")).toBe("A quota has no due date")
    expect(right(checkRules(view, { ...STRICT, dateTouched: false }))).toEqual(view)
  })

  it("a quota cannot be a reminder", () => {
    expect(refusal(checkRules({ ...QUOTA, is_reminder: true }, STRICT), "is_reminder")).toBe("A quota cannot be a reminder")
    expect(refusal(checkRules({ ...QUOTA, is_reminder: true }, { ...STRICT, ruleTouched: false, dateTouched: false }), "is_reminder"))
      .toBe("A quota cannot be a reminder")
    // A plain reminder is fine.
    expect(Either.isRight(checkRules({ ...PLAIN, is_reminder: true }, STRICT))).toBe(true)
  })

  it.each(["FREQ=WEEKLY;BYDAY=MO", "FREQ=HOURLY", "FREQ=DAILY;COUNT=3", "FREQ=WEEKLY;INTERVAL=0", "garbage"])(
    "a quota's rule must be a bare period, even untouched: %j",
    (rrule) => {
      const message = refusal(checkRules({ ...QUOTA, rrule }, { ...STRICT, ruleTouched: false }), "rrule")
      expect(message).toContain("A quota's rule names its period")
    }
  )

  it("a bare period rule on a non-quota needs a due date", () => {
    const view = { ...PLAIN, rrule: "FREQ=DAILY" }
    expect(refusal(checkRules(view, STRICT), "rrule")).toBe(
      "A bare period rule is valid only on a quota (set progress_target or is_tracked)"
    )
    const withDue = { ...view, due_at: "2026-11-25T08:00:00.000Z" }
    expect(right(checkRules(withDue, STRICT))).toEqual(withDue)
    expect(Either.isRight(checkRules(view, { ...STRICT, ruleTouched: false }))).toBe(true)
  })

  it("a non-quota's zero-interval rule is refused for its interval, not as a bare period", () => {
    expect(refusal(checkRules({ ...PLAIN, rrule: "FREQ=DAILY;INTERVAL=0" }, STRICT), "rrule")).toBe(
      "rrule INTERVAL must be a positive integer"
    )
  })

  it("a non-quota's rule must parse", () => {
    const view = { ...PLAIN, due_at: "2026-11-25T08:00:00.000Z", rrule: "garbage" }
    expect(refusal(checkRules(view, STRICT), "rrule")).toBe("rrule is not an RRULE (expected e.g. FREQ=DAILY)")
    expect(refusal(checkRules({ ...view, rrule: "FREQ=DAILY;INTERVAL=0" }, STRICT), "rrule")).toBe(
      "rrule INTERVAL must be a positive integer"
    )
    const weekly = { ...view, rrule: "FREQ=WEEKLY;BYDAY=MO,WE,FR" }
    expect(right(checkRules(weekly, STRICT))).toEqual(weekly)
  })

  describe("deadline", () => {
    const deadline = "2026-12-01T17:00:00.000Z"
    const late = "2026-12-02T09:00:00.000Z"
    const early = "2026-11-28T09:00:00.000Z"

    it("refuses a due date or target after the deadline", () => {
      expect(refusal(checkRules({ ...PLAIN, deadline_at: deadline, due_at: late }, STRICT), "due_at")).toBe(
        "due_at is after the deadline; send allow_past_deadline or cap_at_deadline"
      )
      expect(refusal(checkRules({ ...PLAIN, deadline_at: deadline, target_at: late }, STRICT), "target_at")).toBe(
        "target_at is after the deadline; send allow_past_deadline or cap_at_deadline"
      )
    })

    it("accepts dates on or before the deadline", () => {
      const view = { ...PLAIN, deadline_at: deadline, due_at: deadline, target_at: early }
      expect(right(checkRules(view, STRICT))).toEqual(view)
    })

    it("allowPastDeadline keeps the late dates", () => {
      const view = { ...PLAIN, deadline_at: deadline, due_at: late, target_at: late }
      expect(right(checkRules(view, { ...STRICT, allowPastDeadline: true }))).toEqual(view)
    })

    it("capAtDeadline clamps the late dates to the deadline and leaves the others", () => {
      expect(right(checkRules({ ...PLAIN, deadline_at: deadline, due_at: late, target_at: early }, { ...STRICT, capAtDeadline: true })))
        .toEqual({ ...PLAIN, deadline_at: deadline, due_at: deadline, target_at: early })
      expect(right(checkRules({ ...PLAIN, deadline_at: deadline, due_at: early, target_at: late }, { ...STRICT, capAtDeadline: true })))
        .toEqual({ ...PLAIN, deadline_at: deadline, due_at: early, target_at: deadline })
    })

    const isoArb = fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2040, 0, 1) }).map((t) => new Date(t).toISOString())
    it.prop("capped dates never pass the deadline and earlier ones are untouched", [
      isoArb,
      fc.option(isoArb, { nil: null }),
      fc.option(isoArb, { nil: null })
    ], ([deadline, due, target]) => {
      const out = right(checkRules({ ...PLAIN, deadline_at: deadline, due_at: due, target_at: target }, { ...STRICT, capAtDeadline: true }))
      const expected = (d: string | null) => (d === null ? null : Date.parse(d) > Date.parse(deadline) ? deadline : d)
      expect(out.due_at).toBe(expected(due))
      expect(out.target_at).toBe(expected(target))
      // Without cap or allow, a late date is refused, and only then.
      const strict = checkRules({ ...PLAIN, deadline_at: deadline, due_at: due, target_at: target }, STRICT)
      const anyLate = [due, target].some((d) => d !== null && Date.parse(d) > Date.parse(deadline))
      expect(Either.isLeft(strict)).toBe(anyLate)
    })
  })
})

// ---------------------------------------------------------------------------------------

const NOW = new Date("2026-11-20T12:00:00.000Z")
const NOW_ISO = NOW.toISOString()
const CTX = { now: NOW, zone: "America/New_York", projectId: ProjectId.make(7), userId: UserId.make(3) }

describe("newTaskRow", () => {
  it("fills in the defaults of a plain task", () => {
    const row = right(newTaskRow(
      {
        title: "  Buy milk  ",
        due_at: new Date("2026-11-25T08:00:00Z"),
        labels: ["home", " home ", "errand", "home"]
      },
      CTX
    ))
    expect(row).toEqual({
      user_id: 3,
      project_id: 7,
      title: "Buy milk",
      original_title: "  Buy milk  ",
      short_title: "Buy milk",
      priority: 0,
      due_at: "2026-11-25T08:00:00.000Z",
      original_due_at: "2026-11-25T08:00:00.000Z",
      rrule: null,
      recurrence_mode: "from_due",
      anchor_time: "03:00",
      anchor_dow: 3,
      anchor_dom: 25,
      target_at: null,
      target_set_at: null,
      target_auto: false,
      deadline_at: null,
      horizon: null,
      horizon_set_at: null,
      deadline_nag_off: false,
      auto_snooze_minutes: 0,
      labels: ["home", "errand"],
      notes: "",
      is_reminder: false,
      is_tracked: false,
      progress_target: 1,
      progress_period_start: null,
      quota_prompt_config: null,
      segment_targeted_at: null,
      series_start_at: null,
      created_at: NOW_ISO,
      updated_at: NOW_ISO
    })
  })

  it("anchors the due date on the user's local calendar", () => {
    const anchors = (due: string, zone: string) => {
      const row = right(newTaskRow({ title: "t", due_at: new Date(due) }, { ...CTX, zone }))
      return [row.anchor_time, row.anchor_dow, row.anchor_dom]
    }
    expect(anchors("2026-11-25T08:00:00Z", "America/New_York")).toEqual(["03:00", 3, 25])
    // 02:00Z is still Tuesday evening in New York.
    expect(anchors("2026-11-25T02:00:00Z", "America/New_York")).toEqual(["21:00", 2, 24])
    expect(anchors("2026-11-25T08:00:00Z", "Asia/Kolkata")).toEqual(["13:30", 3, 25])
    expect(anchors("2026-11-25T08:00:00Z", "Australia/Sydney")).toEqual(["19:00", 3, 25])
    expect(anchors("2026-11-25T20:00:00Z", "Australia/Sydney")).toEqual(["07:00", 4, 26])
    expect(anchors("2026-11-25T08:00:00Z", "UTC")).toEqual(["08:00", 3, 25])
    // Without a due date there is nothing to anchor.
    const row = right(newTaskRow({ title: "t" }, CTX))
    expect([row.anchor_time, row.anchor_dow, row.anchor_dom, row.due_at, row.original_due_at]).toEqual([null, 0, 0, null, null])
  })

  it("uses a given short title, trimmed", () => {
    expect(right(newTaskRow({ title: "A very long title", short_title: "  Short " }, CTX)).short_title).toBe("Short")
  })

  it("targets the deadline automatically when only a deadline is given", () => {
    const row = right(newTaskRow({ title: "t", deadline_at: new Date("2026-12-01T17:00:00Z") }, CTX))
    expect([row.deadline_at, row.target_at, row.target_auto, row.target_set_at]).toEqual([
      "2026-12-01T17:00:00.000Z",
      "2026-12-01T17:00:00.000Z",
      true,
      null
    ])
  })

  it("stamps an explicit target and a horizon", () => {
    const row = right(newTaskRow(
      {
        title: "t",
        deadline_at: new Date("2026-12-01T17:00:00Z"),
        target_at: new Date("2026-11-28T09:00:00Z"),
        horizon: "week"
      },
      CTX
    ))
    expect([row.target_at, row.target_auto, row.target_set_at]).toEqual(["2026-11-28T09:00:00.000Z", false, NOW_ISO])
    expect([row.horizon, row.horizon_set_at]).toEqual(["week", NOW_ISO])
    const noHorizon = right(newTaskRow({ title: "t", horizon: null }, CTX))
    expect([noHorizon.horizon, noHorizon.horizon_set_at]).toEqual([null, null])
  })

  it("creates a quota with a trimmed bare period", () => {
    const row = right(newTaskRow({ title: "Run", progress_target: 3, rrule: "  FREQ=WEEKLY  " }, CTX))
    expect([row.rrule, row.progress_target, row.is_tracked, row.due_at]).toEqual(["FREQ=WEEKLY", 3, false, null])
  })

  it("refuses a quota without a period, with a due date, or as a reminder", () => {
    expect(refusal(newTaskRow({ title: "Run", progress_target: 3 }, CTX), "rrule")).toBe("A quota needs a period")
    expect(refusal(newTaskRow({ title: "Run", is_tracked: true }, CTX), "rrule")).toBe("A quota needs a period")
    expect(refusal(
      newTaskRow({ title: "Run", progress_target: 3, rrule: "FREQ=WEEKLY", due_at: new Date("2026-11-25T08:00:00Z") }, CTX),
      "due_at"
    )).toBe("A quota has no due date")
    expect(refusal(newTaskRow({ title: "Run", progress_target: 3, rrule: "FREQ=WEEKLY", is_reminder: true }, CTX), "is_reminder"))
      .toBe("A quota cannot be a reminder")
    expect(refusal(newTaskRow({ title: "Run", progress_target: 3, rrule: "FREQ=WEEKLY;BYDAY=MO" }, CTX), "rrule"))
      .toContain("A quota's rule names its period")
  })

  it("refuses a reminder whose series has no occurrence left at or after now, but not an ordinary task", () => {
    const ended = "rrule has no occurrence left: the reminder's series has already ended"
    const yesterday = new Date(NOW.getTime() - 86_400_000)
    for (const rrule of ["FREQ=DAILY;COUNT=1", `FREQ=DAILY;UNTIL=${NOW.toISOString().slice(0, 10).replace(/-/g, "")}T000000Z`]) {
      expect(refusal(newTaskRow({ title: "r", is_reminder: true, rrule, due_at: yesterday }, CTX), "rrule"), rrule).toBe(ended)
      // The same series as an ordinary task starts overdue.
      expect(right(newTaskRow({ title: "t", rrule, due_at: yesterday }, CTX)).due_at).toBe(yesterday.toISOString())
    }
    // An occurrence left: the reminder is missed, not over; its only one still ahead; no due date.
    expect(right(newTaskRow({ title: "r", is_reminder: true, rrule: "FREQ=DAILY;COUNT=3", due_at: yesterday }, CTX)).rrule).toBe("FREQ=DAILY;COUNT=3")
    const ahead = new Date(NOW.getTime() + 60_000)
    expect(right(newTaskRow({ title: "r", is_reminder: true, rrule: "FREQ=DAILY;COUNT=1", due_at: ahead }, CTX)).due_at).toBe(ahead.toISOString())
    expect(right(newTaskRow({ title: "r", is_reminder: true, rrule: "FREQ=DAILY;COUNT=1;BYHOUR=9;BYMINUTE=0" }, CTX)).due_at).not.toBeNull()
  })

  it("refuses a bare period on a task without a due date, but not with one", () => {
    expect(refusal(newTaskRow({ title: "t", rrule: "FREQ=DAILY" }, CTX), "rrule")).toContain("valid only on a quota")
    expect(right(newTaskRow({ title: "t", rrule: "FREQ=DAILY", due_at: new Date("2026-11-25T08:00:00Z") }, CTX)).rrule)
      .toBe("FREQ=DAILY")
  })

  it("refuses a due date after the deadline unless allowed or capped", () => {
    const input: TaskCreate = {
      title: "t",
      due_at: new Date("2026-12-02T14:00:00Z"),
      deadline_at: new Date("2026-12-01T17:00:00Z")
    }
    expect(refusal(newTaskRow(input, CTX), "due_at")).toContain("after the deadline")
    const allowed = right(newTaskRow({ ...input, allow_past_deadline: true }, CTX))
    expect([allowed.due_at, allowed.deadline_at]).toEqual(["2026-12-02T14:00:00.000Z", "2026-12-01T17:00:00.000Z"])
    const capped = right(newTaskRow({ ...input, cap_at_deadline: true }, CTX))
    // The capped date is the one stored, remembered as original and anchored.
    expect([capped.due_at, capped.original_due_at, capped.anchor_time, capped.anchor_dow, capped.anchor_dom]).toEqual([
      "2026-12-01T17:00:00.000Z",
      "2026-12-01T17:00:00.000Z",
      "12:00",
      2,
      1
    ])
  })

  const labelArb = fc.constantFrom("home", "work", "errand", "urgent").chain((l) =>
    fc.tuple(fc.constantFrom("", " ", "  "), fc.constantFrom("", " ")).map(([a, b]) => a + l + b)
  )
  it.prop("trims titles and deduplicates trimmed labels in first-seen order", [
    fc.string({ minLength: 1, maxLength: 20 }).filter((s) => s.trim().length > 0),
    fc.array(labelArb, { maxLength: 10 })
  ], ([title, labels]) => {
    const row = right(newTaskRow({ title: ` ${title} `, labels }, CTX))
    expect(row.title).toBe(title.trim())
    expect(row.short_title).toBe(title.trim())
    expect(row.original_title).toBe(` ${title} `)
    const expected: Array<string> = []
    for (const l of labels) if (!expected.includes(l.trim())) expected.push(l.trim())
    expect(row.labels).toEqual(expected)
  })
})

// ---------------------------------------------------------------------------------------

/** A stored plain task due 2026-11-25 03:00 New York, with a deadline. */
const stored = (overrides: Partial<TaskRow> = {}): TaskRow => ({
  id: TaskId.make(11),
  user_id: UserId.make(3),
  project_id: ProjectId.make(7),
  title: "Buy milk",
  original_title: "Buy milk",
  done: false,
  done_at: null,
  previous_due_at: null,
  last_considered_at: null,
  segment_deferred_at: null,
  segment_targeted_at: null,
  occurrence_at: null,
  deleted_at: null,
  archived_at: null,
  progress_period_start: null,
  progress_period_end: null,
  series_start_at: null,
  quota_prompt_config: null,
  quota_day_state: { date: null, logged: 0, did: [], considered: [], did_applied: {} },
  completion_count: 0,
  skip_count: 0,
  snooze_count: 0,
  first_completed_at: null,
  last_completed_at: null,
  enrichment_requested_at: null,
  enrichment_status: null,
  enrichment_baseline: null,
  roll_stopped_at: null,
  created_at: "2026-11-20T12:00:00.000Z",
  updated_at: "2026-11-20T12:00:00.000Z",
  short_title: "Milk",
  priority: 0,
  due_at: "2026-11-25T08:00:00.000Z",
  original_due_at: "2026-11-24T08:00:00.000Z",
  rrule: null,
  recurrence_mode: "from_due",
  anchor_time: "03:00",
  anchor_dow: 3,
  anchor_dom: 25,
  target_at: "2026-11-30T17:00:00.000Z",
  target_set_at: null,
  target_auto: true,
  deadline_at: "2026-11-30T17:00:00.000Z",
  horizon: null,
  horizon_set_at: null,
  deadline_nag_off: false,
  auto_snooze_minutes: 0,
  labels: ["home"],
  notes: "",
  is_reminder: false,
  is_tracked: false,
  progress_target: 1,
  progress_current: 0,
  ...overrides
})
const PCTX = { now: NOW, zone: "America/New_York" }
const patch = (current: TaskRow, p: TaskPatch) => patchTaskRow(current, p, PCTX)

describe("patchTaskRow", () => {
  it("writes nothing for an empty patch", () => {
    expect(right(patch(stored(), {}))).toEqual({})
  })

  it("a short title never set apart from the title follows a rename; one set apart does not", () => {
    expect(right(patch(stored({ short_title: "Buy milk" }), { title: " Buy oat milk " }))).toEqual({
      title: "Buy oat milk",
      short_title: "Buy oat milk"
    })
    expect(right(patch(stored({ short_title: "Buy milk" }), { title: "Buy oat milk", short_title: "Oat" }))).toEqual({
      title: "Buy oat milk",
      short_title: "Oat"
    })
    expect(right(patch(stored(), { title: "Buy oat milk" }))).toEqual({ title: "Buy oat milk" })
  })

  it("writes only the fields present", () => {
    expect(right(patch(stored(), { title: "  Buy oat milk " }))).toEqual({ title: "Buy oat milk" })
    expect(right(patch(stored(), { labels: ["a", " a", "b "], priority: 2 }))).toEqual({ labels: ["a", "b"], priority: 2 })
    expect(right(patch(stored(), { notes: "2 litres", short_title: " Milk " }))).toEqual({
      notes: "2 litres",
      short_title: "Milk"
    })
  })

  it.prop("writes exactly the simple fields of the patch", [
    fc.record(
      {
        title: fc.constantFrom(" Walk ", "Read"),
        short_title: fc.constantFrom("W", " R "),
        priority: fc.integer({ min: 0, max: 4 }),
        notes: fc.string({ maxLength: 10 }),
        labels: fc.array(fc.constantFrom("a", "b", " a"), { maxLength: 4 }),
        recurrence_mode: fc.constantFrom("from_due" as const, "from_completion" as const),
        auto_snooze_minutes: fc.integer({ min: 0, max: 600 }),
        deadline_nag_off: fc.boolean(),
        project_id: fc.integer({ min: 1, max: 99 }).map((n) => n as ProjectId)
      },
      { requiredKeys: [] }
    )
  ], ([p]) => {
    const out = right(patch(stored(), p))
    expect(Object.keys(out).sort()).toEqual(Object.keys(p).sort())
    if (p.title !== undefined) expect(out.title).toBe(p.title.trim())
    if (p.short_title !== undefined) expect(out.short_title).toBe(p.short_title.trim())
    if (p.priority !== undefined) expect(out.priority).toBe(p.priority)
    if (p.labels !== undefined) expect(out.labels).toEqual([...new Set(p.labels.map((l) => l.trim()))])
  })

  describe("due date", () => {
    it("moves the due date and its anchors, keeping the original", () => {
      expect(right(patch(stored(), { due_at: new Date("2026-11-26T15:30:00Z") }))).toEqual({
        due_at: "2026-11-26T15:30:00.000Z",
        anchor_time: "10:30",
        anchor_dow: 4,
        anchor_dom: 26
      })
    })

    it("sets the original when there was none, or when asked to reset it", () => {
      expect(right(patch(stored({ original_due_at: null }), { due_at: new Date("2026-11-26T15:30:00Z") })).original_due_at)
        .toBe("2026-11-26T15:30:00.000Z")
      expect(right(patch(stored(), { due_at: new Date("2026-11-26T15:30:00Z"), reset_original_due_at: true })).original_due_at)
        .toBe("2026-11-26T15:30:00.000Z")
      expect(right(patch(stored(), { reset_original_due_at: true }))).toEqual({ original_due_at: "2026-11-25T08:00:00.000Z" })
    })

    it("clears the due date and its anchors", () => {
      expect(right(patch(stored(), { due_at: null }))).toEqual({
        due_at: null,
        anchor_time: null,
        anchor_dow: 0,
        anchor_dom: 0
      })
    })

    it("refuses a due date after the deadline unless allowed, and caps when asked", () => {
      const late = new Date("2026-12-02T14:00:00Z")
      expect(refusal(patch(stored(), { due_at: late }), "due_at")).toContain("after the deadline")
      expect(right(patch(stored(), { due_at: late, allow_past_deadline: true })).due_at).toBe("2026-12-02T14:00:00.000Z")
      expect(right(patch(stored(), { due_at: late, cap_at_deadline: true }))).toEqual({
        due_at: "2026-11-30T17:00:00.000Z",
        anchor_time: "12:00",
        anchor_dow: 1,
        anchor_dom: 30
      })
    })

    it("capping at a moved-up deadline also moves the stored due date", () => {
      const out = right(patch(stored({ target_auto: false, target_at: null }), {
        deadline_at: new Date("2026-11-24T17:00:00Z"),
        cap_at_deadline: true
      }))
      expect(out).toEqual({
        deadline_at: "2026-11-24T17:00:00.000Z",
        // No explicit target: the new deadline brings an automatic one (as on create).
        target_at: "2026-11-24T17:00:00.000Z",
        target_auto: true,
        due_at: "2026-11-24T17:00:00.000Z",
        anchor_time: "12:00",
        anchor_dow: 2,
        anchor_dom: 24
      })
    })
  })

  describe("horizon", () => {
    it("stamps horizon_set_at when the horizon changes", () => {
      expect(right(patch(stored(), { horizon: "week" }))).toEqual({ horizon: "week", horizon_set_at: NOW_ISO })
      expect(right(patch(stored({ horizon: "week", horizon_set_at: "2026-11-01T00:00:00.000Z" }), { horizon: "month" })))
        .toEqual({ horizon: "month", horizon_set_at: NOW_ISO })
    })

    it("leaves the stamp alone when the horizon is sent unchanged", () => {
      expect(right(patch(stored({ horizon: "week", horizon_set_at: "2026-11-01T00:00:00.000Z" }), { horizon: "week" })))
        .toEqual({ horizon: "week" })
    })

    it("clears the stamp with the horizon", () => {
      expect(right(patch(stored({ horizon: "week", horizon_set_at: "2026-11-01T00:00:00.000Z" }), { horizon: null })))
        .toEqual({ horizon: null, horizon_set_at: null })
    })

    it("affirm_horizon restamps without a change", () => {
      expect(right(patch(stored({ horizon: "week", horizon_set_at: "2026-11-01T00:00:00.000Z" }), { affirm_horizon: true })))
        .toEqual({ horizon_set_at: NOW_ISO })
      expect(right(patch(stored({ horizon: "week" }), { horizon: "week", affirm_horizon: true })))
        .toEqual({ horizon: "week", horizon_set_at: NOW_ISO })
    })
  })

  describe("target", () => {
    const target = new Date("2026-11-28T09:00:00Z")

    it("stamps target_set_at the first time a target is set", () => {
      expect(right(patch(stored(), { target_at: target }))).toEqual({
        target_at: "2026-11-28T09:00:00.000Z",
        target_auto: false,
        target_set_at: NOW_ISO,
        segment_targeted_at: "2026-11-28T09:00:00.000Z"
      })
    })

    it("does not restamp a later retarget unless asked", () => {
      const current = stored({
        target_at: "2026-11-27T09:00:00.000Z",
        target_auto: false,
        target_set_at: "2026-11-01T00:00:00.000Z"
      })
      expect(right(patch(current, { target_at: target }))).toEqual({
        target_at: "2026-11-28T09:00:00.000Z",
        target_auto: false
      })
      expect(right(patch(current, { target_at: target, retarget: true }))).toEqual({
        target_at: "2026-11-28T09:00:00.000Z",
        target_auto: false,
        target_set_at: NOW_ISO,
        segment_targeted_at: "2026-11-28T09:00:00.000Z"
      })
      expect(right(patch(current, { retarget: true }))).toEqual({
        target_set_at: NOW_ISO,
        segment_targeted_at: "2026-11-27T09:00:00.000Z"
      })
    })

    it("a null target on a deadline task goes back to the deadline, automatically", () => {
      const current = stored({ target_at: "2026-11-27T09:00:00.000Z", target_auto: false, target_set_at: "2026-11-01T00:00:00.000Z" })
      expect(right(patch(current, { target_at: null }))).toEqual({ target_at: "2026-11-30T17:00:00.000Z", target_auto: true })
    })

    it("an automatic target follows a moved deadline; a set one does not", () => {
      const later = new Date("2026-12-05T17:00:00Z")
      expect(right(patch(stored(), { deadline_at: later }))).toEqual({
        deadline_at: "2026-12-05T17:00:00.000Z",
        target_at: "2026-12-05T17:00:00.000Z",
        target_auto: true
      })
      expect(right(patch(stored(), { deadline_at: null }))).toEqual({
        deadline_at: null,
        target_at: null,
        target_auto: false
      })
      const set = stored({ target_at: "2026-11-27T09:00:00.000Z", target_auto: false, target_set_at: "2026-11-01T00:00:00.000Z" })
      expect(right(patch(set, { deadline_at: later }))).toEqual({ deadline_at: "2026-12-05T17:00:00.000Z" })
    })

    it("refuses a target after the deadline", () => {
      expect(refusal(patch(stored(), { target_at: new Date("2026-12-05T09:00:00Z") }), "target_at")).toContain(
        "after the deadline"
      )
    })
  })

  describe("quota rules", () => {
    const legacyQuota = stored({
      due_at: null,
      original_due_at: null,
      anchor_time: null,
      anchor_dow: 0,
      anchor_dom: 0,
      deadline_at: null,
      target_at: null,
      target_auto: false,
      progress_target: 3,
      rrule: null
    })

    it("a legacy quota without a rule stays editable while the rule is not touched", () => {
      expect(right(patch(legacyQuota, { title: "Run 3x" }))).toEqual({ title: "Run 3x" })
      expect(right(patch(legacyQuota, { progress_target: 5, progress_current: 1 }))).toEqual({
        progress_target: 5,
        progress_current: 1
      })
      // Even one that kept a due date from before the rules.
      expect(right(patch(stored({ progress_target: 3 }), { notes: "x" }))).toEqual({ notes: "x" })
    })

    it("a legacy quota cannot have its rule cleared, but can be given a period", () => {
      expect(refusal(patch(legacyQuota, { rrule: null }), "rrule")).toBe("A quota needs a period")
      expect(right(patch(legacyQuota, { rrule: " FREQ=MONTHLY " }))).toEqual({ rrule: "FREQ=MONTHLY" })
      expect(refusal(patch(legacyQuota, { rrule: "FREQ=WEEKLY;BYDAY=MO" }), "rrule")).toContain(
        "A quota's rule names its period"
      )
    })

    it("turning a plain task without a rule into a quota is refused: a quota needs a period", () => {
      const plain = stored({ due_at: null, original_due_at: null, anchor_time: null, anchor_dow: 0, anchor_dom: 0 })
      expect(refusal(patch(plain, { progress_target: 3 }), "rrule")).toBe("A quota needs a period")
      expect(refusal(patch(plain, { is_tracked: true }), "rrule")).toBe("A quota needs a period")
      expect(right(patch(plain, { progress_target: 3, rrule: "FREQ=WEEKLY" }))).toEqual({
        progress_target: 3,
        rrule: "FREQ=WEEKLY"
      })
    })

    it("turning a dated task into a quota needs its due date cleared", () => {
      expect(refusal(patch(stored(), { progress_target: 3, rrule: "FREQ=WEEKLY" }), "due_at")).toBe("A quota has no due date")
      const out = right(patch(stored(), { progress_target: 3, rrule: "FREQ=WEEKLY", due_at: null }))
      expect(out).toMatchObject({ progress_target: 3, rrule: "FREQ=WEEKLY", due_at: null, anchor_time: null })
    })

    it("a reminder cannot become a quota", () => {
      const reminder = stored({ is_reminder: true, due_at: null })
      expect(refusal(patch(reminder, { progress_target: 3, rrule: "FREQ=WEEKLY" }), "is_reminder")).toBe(
        "A quota cannot be a reminder"
      )
    })

    it("a plain task cannot take a bare period rule without a due date", () => {
      const plain = stored({ due_at: null })
      expect(refusal(patch(plain, { rrule: "FREQ=DAILY" }), "rrule")).toContain("valid only on a quota")
      // A dated task taking a rule becomes recurring, its series starting at its due date.
      expect(right(patch(stored(), { rrule: "FREQ=DAILY" }))).toEqual({
        rrule: "FREQ=DAILY",
        series_start_at: stored().due_at
      })
    })
  })
})
