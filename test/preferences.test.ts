import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { now } from "../src/kernel/ServiceClock.js"
import { type ClockedTestService, startServiceOnTestClock, type TestUser } from "./support/service.js"

const NOW = new Date("2031-05-20T08:30:00.000Z")
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

const DEFAULTS = {
  default_grouping: "project",
  project_preview_count: 5,
  auto_snooze_minutes: 60,
  auto_snooze_low_minutes: 1440,
  auto_snooze_medium_minutes: 240,
  auto_snooze_high_minutes: 60,
  auto_snooze_urgent_minutes: 30,
  default_reminder_slot_id: null,
  quota_prompt_slot_id: null,
  quota_prompts_enabled: true,
  enrichment_notifications_enabled: true,
  sweep_feedback_notifications_enabled: true,
  week_start: "sunday",
  check_in_day: 0,
  default_snooze_option: "1h",
  ai_context: "",
  ai_context_updated_at: null,
  timezone: "UTC"
}

/** Spec §2.8 fields and their types (integers that may be unset are null until set). */
const SPEC_FIELDS: Record<string, "string" | "integer" | "boolean" | "slot" | "timestamp"> = {
  default_grouping: "string",
  project_preview_count: "integer",
  auto_snooze_minutes: "integer",
  auto_snooze_low_minutes: "integer",
  auto_snooze_medium_minutes: "integer",
  auto_snooze_high_minutes: "integer",
  auto_snooze_urgent_minutes: "integer",
  default_reminder_slot_id: "slot",
  quota_prompt_slot_id: "slot",
  quota_prompts_enabled: "boolean",
  enrichment_notifications_enabled: "boolean",
  sweep_feedback_notifications_enabled: "boolean",
  week_start: "string",
  check_in_day: "integer",
  default_snooze_option: "string",
  ai_context: "string",
  ai_context_updated_at: "timestamp"
}

describe("user preferences", () => {
  let service: ClockedTestService
  let alice: TestUser
  let bob: TestUser
  let aliceSlots: Array<{ id: number; start_time: string }>
  let bobSlots: Array<{ id: number; start_time: string }>

  const sql = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
    service.run(Effect.flatMap(SqlClient.SqlClient, f))
  const slotsOf = (userId: number) =>
    sql((s) => s<{ id: number; start_time: string }>`SELECT id, start_time FROM time_slots WHERE user_id = ${userId} ORDER BY start_time`)

  beforeAll(async () => {
    // The service clock is a TestClock standing at NOW: stamps are exact, and a test that
    // needs time to pass moves it.
    service = await startServiceOnTestClock(NOW)
    alice = await service.user("alice")
    bob = await service.user("bob")
    aliceSlots = [...await slotsOf(alice.id)]
    bobSlots = [...await slotsOf(bob.id)]
  })
  afterAll(async () => {
    await service?.stop()
  })

  const prefs = async (user: TestUser) => {
    const res = await user.api.get("/api/user/preferences")
    expect(res.status).toBe(200)
    return res.body.data
  }

  it("GET has every spec field with its default", async () => {
    const data = await prefs(alice)
    expect(data).toEqual(DEFAULTS)
    for (const [field, type] of Object.entries(SPEC_FIELDS)) {
      expect(data, field).toHaveProperty(field)
      const value = data[field]
      if (type === "integer") expect(Number.isInteger(value), field).toBe(true)
      if (type === "boolean") expect(typeof value, field).toBe("boolean")
      if (type === "string") expect(typeof value, field).toBe("string")
    }
  })

  it("PATCH of a subset answers the whole updated object and persists", async () => {
    const res = await alice.api.patch("/api/user/preferences", {
      week_start: "monday",
      check_in_day: 5,
      auto_snooze_high_minutes: 15,
      quota_prompts_enabled: false,
      default_snooze_option: "tomorrow"
    })
    expect(res.status).toBe(200)
    const expected = {
      ...DEFAULTS,
      week_start: "monday",
      check_in_day: 5,
      auto_snooze_high_minutes: 15,
      quota_prompts_enabled: false,
      default_snooze_option: "tomorrow"
    }
    expect(res.body.data).toEqual(expected)
    expect(await prefs(alice)).toEqual(expected)
    // Another user's preferences are untouched.
    expect(await prefs(bob)).toEqual(DEFAULTS)

    const more = await alice.api.patch("/api/user/preferences", { default_grouping: "due", project_preview_count: 0 })
    expect(more.body.data).toEqual({ ...expected, default_grouping: "due", project_preview_count: 0 })
    const empty = await alice.api.patch("/api/user/preferences", {})
    expect(empty.status).toBe(200)
    expect(empty.body.data).toEqual({ ...expected, default_grouping: "due", project_preview_count: 0 })
    expect((await alice.api.get("/api/auth/me")).body.data.week_start).toBe("monday")
  })

  it("every field can be written", async () => {
    const patch = {
      default_grouping: "priority",
      project_preview_count: 12,
      auto_snooze_minutes: 0,
      auto_snooze_low_minutes: 10_080,
      auto_snooze_medium_minutes: 120,
      auto_snooze_high_minutes: 45,
      auto_snooze_urgent_minutes: 5,
      default_reminder_slot_id: bobSlots[1]!.id,
      quota_prompt_slot_id: bobSlots[4]!.id,
      quota_prompts_enabled: false,
      enrichment_notifications_enabled: false,
      sweep_feedback_notifications_enabled: false,
      week_start: "monday",
      check_in_day: 6,
      default_snooze_option: "3h",
      ai_context: "I work nights.",
      timezone: "Asia/Tokyo"
    }
    const res = await bob.api.patch("/api/user/preferences", patch)
    expect(res.status).toBe(200)
    expect(res.body.data).toEqual({ ...patch, ai_context_updated_at: expect.stringMatching(ISO_MS) })
    expect(await prefs(bob)).toEqual(res.body.data)

    // Slot references can be cleared again.
    const cleared = await bob.api.patch("/api/user/preferences", { default_reminder_slot_id: null, quota_prompt_slot_id: null })
    expect(cleared.body.data).toMatchObject({ default_reminder_slot_id: null, quota_prompt_slot_id: null })
  })

  it("each field is validated, and a refused PATCH changes nothing", async () => {
    const before = await prefs(alice)
    const refused: Array<Record<string, unknown>> = [
      { week_start: "friday" },
      { week_start: "Monday" },
      { week_start: 1 },
      { timezone: "Mars/Base" },
      { timezone: "" },
      { timezone: 3 },
      { check_in_day: 7 },
      { check_in_day: -1 },
      { check_in_day: 2.5 },
      { check_in_day: "2" },
      { auto_snooze_minutes: -1 },
      { auto_snooze_minutes: 1.5 },
      { auto_snooze_minutes: "60" },
      { auto_snooze_low_minutes: -5 },
      { auto_snooze_medium_minutes: null },
      { auto_snooze_high_minutes: 10_081 },
      { auto_snooze_urgent_minutes: true },
      { project_preview_count: -1 },
      { project_preview_count: "5" },
      { default_reminder_slot_id: bobSlots[0]!.id },
      { default_reminder_slot_id: 999_999 },
      { default_reminder_slot_id: "1" },
      { default_reminder_slot_id: 0 },
      { quota_prompt_slot_id: bobSlots[2]!.id },
      { quota_prompts_enabled: "yes" },
      { enrichment_notifications_enabled: 1 },
      { sweep_feedback_notifications_enabled: null },
      { default_grouping: 5 },
      { default_grouping: "" },
      { default_snooze_option: false },
      { ai_context: 42 },
      { ai_context: "x".repeat(10_001) },
      // One bad field refuses the whole request, good fields included.
      { week_start: "monday", timezone: "Mars/Base" },
      { ai_context: "new context", check_in_day: 9 },
      { default_grouping: "label", default_reminder_slot_id: bobSlots[3]!.id }
    ]
    for (const body of refused) {
      const res = await alice.api.patch("/api/user/preferences", body)
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400)
      expect(res.body.code).toBe("VALIDATION_ERROR")
      expect(res.body.error).toEqual(expect.any(String))
      expect(res.body.details).toEqual(expect.any(Object))
    }
    const details = (await alice.api.patch("/api/user/preferences", { week_start: "friday" })).body.details
    expect(Object.keys(details)).toContain("week_start")
    const slotDetails = (await alice.api.patch("/api/user/preferences", { default_reminder_slot_id: bobSlots[0]!.id })).body.details
    expect(Object.keys(slotDetails)).toContain("default_reminder_slot_id")

    const malformed = await alice.api.request("PATCH", "/api/user/preferences", "{\"week_start\": ", {
      "content-type": "application/json"
    })
    expect(malformed.status).toBe(400)
    const array = await alice.api.patch("/api/user/preferences", ["week_start"])
    expect(array.status).toBe(400)

    expect(await prefs(alice)).toEqual(before)
  })

  it("the caller's own slots are accepted as slot references", async () => {
    const res = await alice.api.patch("/api/user/preferences", {
      default_reminder_slot_id: aliceSlots[2]!.id,
      quota_prompt_slot_id: aliceSlots[0]!.id
    })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ default_reminder_slot_id: aliceSlots[2]!.id, quota_prompt_slot_id: aliceSlots[0]!.id })
  })

  it("changing ai_context stamps ai_context_updated_at with the service clock", async () => {
    const carol = await service.user("carol")
    expect((await prefs(carol)).ai_context_updated_at).toBeNull()

    const t0 = await service.run(now)
    const res = await carol.api.patch("/api/user/preferences", { ai_context: "Two kids, one dog." })
    const t1 = await service.run(now)
    expect(res.status).toBe(200)
    const stamp = res.body.data.ai_context_updated_at as string
    expect(stamp).toMatch(ISO_MS)
    // The service clock started at NOW (2031), not the machine's clock.
    expect(Date.parse(stamp)).toBeGreaterThanOrEqual(t0.getTime())
    expect(Date.parse(stamp)).toBeLessThanOrEqual(t1.getTime())
    expect(Date.parse(stamp) - NOW.getTime()).toBeGreaterThanOrEqual(0)
    expect(Date.parse(stamp) - NOW.getTime()).toBeLessThan(300_000)
    expect(res.body.data.ai_context).toBe("Two kids, one dog.")
    expect((await prefs(carol)).ai_context_updated_at).toBe(stamp)

    expect(stamp).toBe(NOW.toISOString())

    // Other fields, and the same context again, leave the stamp alone, though time has passed.
    await service.clock.adjust("1 second")
    const other = await carol.api.patch("/api/user/preferences", { week_start: "monday" })
    expect(other.body.data.ai_context_updated_at).toBe(stamp)
    const same = await carol.api.patch("/api/user/preferences", { ai_context: "Two kids, one dog." })
    expect(same.body.data.ai_context_updated_at).toBe(stamp)

    // A new context moves it forward.
    const changed = await carol.api.patch("/api/user/preferences", { ai_context: "" })
    expect(changed.body.data.ai_context).toBe("")
    expect(Date.parse(changed.body.data.ai_context_updated_at)).toBeGreaterThan(Date.parse(stamp))
    expect(changed.body.data.ai_context_updated_at).toBe(new Date(NOW.getTime() + 1_000).toISOString())
  })

  it("changing timezone changes GET /api/auth/me and the stored user", async () => {
    const dave = await service.user("dave")
    expect((await dave.api.get("/api/auth/me")).body.data.timezone).toBe("UTC")
    const res = await dave.api.patch("/api/user/preferences", { timezone: "America/Los_Angeles" })
    expect(res.status).toBe(200)
    expect(res.body.data.timezone).toBe("America/Los_Angeles")
    const me = await dave.api.get("/api/auth/me")
    expect(me.body.data).toEqual({ id: dave.id, username: "dave", timezone: "America/Los_Angeles", week_start: "sunday" })
    const rows = await sql((s) => s<{ timezone: string }>`SELECT timezone FROM users WHERE id = ${dave.id}`)
    expect(rows[0]!.timezone).toBe("America/Los_Angeles")
    expect((await prefs(dave)).timezone).toBe("America/Los_Angeles")

    // Counts "today" in the new zone: 2031-05-20T08:30Z is still the 20th in Los Angeles (01:30).
    const lateEvening = "2031-05-21T06:00:00.000Z" // 23:00 on the 20th in Los Angeles
    const created = await dave.api.post("/api/tasks", { title: "Late", due_at: lateEvening, priority: 1 })
    expect(created.status, created.text).toBe(201)
    const counts = await dave.api.get("/api/tasks/counts")
    expect(counts.body.data.today).toBe(1)
  })
})
