import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { checkInsights, chunksOf, oneLine, pickWhatsNext } from "../../src/ai/AiAnswers.js"
import { planEnrichment, shouldEnrich, userChanged, wallTimeIn } from "../../src/ai/AiEnrichment.js"
import { instantOf } from "../../src/kernel/LocalTime.js"
import { ProjectId } from "../../src/kernel/Ids.js"

/* The rules the AI helpers enforce in code, whatever the model answers. */

const context = { zone: "Europe/Berlin", projects: [{ id: 7, name: "Home" }, { id: 8, name: "Work Stuff" }] }

describe("shouldEnrich (spec §4.2)", () => {
  it("enriches a title alone; any structured field bypasses it; enrich decides when sent", () => {
    expect(shouldEnrich({ title: "x" })).toBe(true)
    expect(shouldEnrich({ title: "x", priority: 0, labels: [], due_at: null, rrule: null, notes: "n" })).toBe(true)
    expect(shouldEnrich({ title: "x", priority: 1 })).toBe(false)
    expect(shouldEnrich({ title: "x", labels: ["a"] })).toBe(false)
    expect(shouldEnrich({ title: "x", rrule: "FREQ=DAILY" })).toBe(false)
    expect(shouldEnrich({ title: "x", due_at: new Date("2030-01-01T00:00:00Z") })).toBe(false)
    expect(shouldEnrich({ title: "x", priority: 4, enrich: true })).toBe(true)
    expect(shouldEnrich({ title: "x", enrich: false })).toBe(false)
  })
})

describe("planEnrichment", () => {
  it("reads due_at as wall time in the owner's zone and matches projects case-insensitively", () => {
    const plan = planEnrichment({ due_at: "2030-07-01T09:30", project: "  work stuff " }, context)
    expect(plan.patch).toEqual({ due_at: instantOf("Europe/Berlin", 2030, 7, 1, 9, 30), project_id: 8 })
    expect((plan.patch.due_at as Date).toISOString()).toBe("2030-07-01T07:30:00.000Z")
  })

  it("drops each invalid field alone and keeps the rest", () => {
    const plan = planEnrichment({
      title: "  Buy milk ",
      priority: 7,
      labels: ["ok", ""],
      project: "Garden",
      rrule: "FREQ=DAILY;UNTIL=20300101T000000Z",
      recurrence_mode: "from_completion",
      due_at: "2030-02-30T10:00",
      notes: 42
    }, context)
    expect(plan.patch).toEqual({ title: "Buy milk", recurrence_mode: "from_completion" })
    expect(Object.keys(plan.dropped).sort()).toEqual(["due_at", "labels", "notes", "priority", "project_id", "rrule"])
  })

  it("null and absent fields are no edit; an RRULE: prefix is accepted; COUNT never is", () => {
    expect(planEnrichment({ title: null, due_at: null, project: null, rrule: null }, context)).toEqual({ patch: {}, dropped: {} })
    expect(planEnrichment({ rrule: "RRULE:FREQ=WEEKLY;BYDAY=MO" }, context).patch).toEqual({ rrule: "FREQ=WEEKLY;BYDAY=MO" })
    expect(planEnrichment({ rrule: "FREQ=WEEKLY;COUNT=2" }, context).dropped).toHaveProperty("rrule")
  })

  it("never throws, whatever the values", () => {
    fc.assert(fc.property(
      fc.record({ title: fc.anything(), due_at: fc.anything(), priority: fc.anything(), labels: fc.anything(), project: fc.anything(), rrule: fc.anything(), recurrence_mode: fc.anything(), notes: fc.anything() }, { requiredKeys: [] }),
      (answer) => {
        const plan = planEnrichment(answer, context)
        for (const key of Object.keys(plan.patch)) expect(key in plan.dropped).toBe(false)
      }
    ))
  })
})

describe("userChanged", () => {
  it("compares a field with its value when enrichment was requested", () => {
    const base = { title: "a", labels: ["x"], priority: 0, due_at: null, project_id: ProjectId.make(1), rrule: null, notes: "", recurrence_mode: "from_due" as const }
    expect(userChanged(base, { ...base, labels: ["x"] }, "labels")).toBe(false)
    expect(userChanged(base, { ...base, labels: ["x", "y"] }, "labels")).toBe(true)
    expect(userChanged(base, { ...base, title: "b" }, "title")).toBe(true)
  })
})

describe("wallTimeIn", () => {
  it("accepts a date alone (09:00) or an explicit offset, refuses impossible dates", () => {
    expect(Either.getOrThrow(wallTimeIn("2030-03-05", "UTC")).toISOString()).toBe("2030-03-05T09:00:00.000Z")
    expect(Either.getOrThrow(wallTimeIn("2030-03-05T10:00:00+02:00", "UTC")).toISOString()).toBe("2030-03-05T08:00:00.000Z")
    expect(Either.isLeft(wallTimeIn("2030-13-01T10:00", "UTC"))).toBe(true)
    expect(Either.isLeft(wallTimeIn("tomorrow", "UTC"))).toBe(true)
  })
})

describe("quick take, what's next, insights", () => {
  it("oneLine keeps the first non-empty line, unquoted, at most 200 characters", () => {
    expect(oneLine("\n  \"Looks good.\"  \nmore")).toBe("Looks good.")
    expect(Array.from(oneLine("😀".repeat(300))).length).toBe(200)
    expect(oneLine("   ")).toBe("")
  })

  it("pickWhatsNext keeps candidate ids once each, at most 8, in the model's order", () => {
    const picked = pickWhatsNext({
      tasks: [1, 99, 2, 2, "3", 4, 5, 6, 7, 8, 9].map((id) => ({ task_id: id, reason: `r${id}` })),
      summary: "s"
    }, new Set([1, 2, 3, 4, 5, 6, 7, 8, 9]))
    expect(picked.tasks.map((t) => t.task_id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(picked.summary).toBe("s")
  })

  it("checkInsights: stale only at 21+ days, act_soon only on P3-P4, two signals at most, score 0-100", () => {
    const chunk = [{ id: 1, priority: 0, ageDays: 21 }, { id: 2, priority: 3, ageDays: 20 }]
    const out = checkInsights({
      results: [
        { task_id: 1, score: 100.6, commentary: "c", signals: ["act_soon", "stale", "vague", "review"] },
        { task_id: 2, score: "-3", signals: ["stale", "act_soon", "act_soon"] },
        { task_id: 3, score: 50, signals: [] }
      ]
    }, chunk)
    expect(out).toEqual([
      { task_id: 1, score: 100, commentary: "c", signals: ["stale", "vague"] },
      { task_id: 2, score: 0, commentary: "", signals: ["act_soon"] }
    ])
  })

  it("chunksOf splits without losing or repeating", () => {
    expect(chunksOf([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]])
    expect(chunksOf([], 20)).toEqual([])
  })
})
