import { Schema } from "effect"
import { isValidTimeZone } from "../kernel/TimeZone.js"
import { StoredString } from "../kernel/Text.js"

const minutes = Schema.Int.pipe(Schema.between(0, 10_080, { message: () => "must be 0-10080 minutes" }))
const slotRef = Schema.NullOr(Schema.Int.pipe(Schema.between(1, 2_147_483_647, { message: () => "must be a time slot id" })))
const shortText = (max: number) => StoredString.pipe(Schema.maxLength(max, { message: () => `must be at most ${max} characters` }))

/** Free-form option names chosen by clients: non-empty, short. */
const label = StoredString.pipe(
  Schema.minLength(1, { message: () => "must not be empty" }),
  Schema.maxLength(50, { message: () => "must be at most 50 characters" })
)

export const WeekStart = Schema.Literal("sunday", "monday")
export type WeekStart = typeof WeekStart.Type

export const TimeZoneName = StoredString.pipe(
  Schema.filter((zone) => isValidTimeZone(zone) || `unknown time zone "${zone}"`, {
    jsonSchema: { minLength: 1, description: "an IANA time zone name, such as Europe/Paris" }
  })
)

/** Spec §2.8 plus `timezone` (CONTRACT §5). */
export const Preferences = Schema.Struct({
  default_grouping: Schema.String,
  project_preview_count: Schema.Int,
  auto_snooze_minutes: Schema.Int,
  auto_snooze_low_minutes: Schema.Int,
  auto_snooze_medium_minutes: Schema.Int,
  auto_snooze_high_minutes: Schema.Int,
  auto_snooze_urgent_minutes: Schema.Int,
  default_reminder_slot_id: Schema.NullOr(Schema.Int),
  quota_prompt_slot_id: Schema.NullOr(Schema.Int),
  quota_prompts_enabled: Schema.Boolean,
  enrichment_notifications_enabled: Schema.Boolean,
  sweep_feedback_notifications_enabled: Schema.Boolean,
  week_start: WeekStart,
  check_in_day: Schema.Int,
  default_snooze_option: Schema.String,
  ai_context: Schema.String,
  ai_context_updated_at: Schema.NullOr(Schema.String),
  timezone: Schema.String
})
export type Preferences = typeof Preferences.Type

/** Stored preferences hold everything except `timezone`, which lives on the user row. */
export type StoredPreferences = Omit<Preferences, "timezone">

export const DEFAULT_PREFERENCES: StoredPreferences = {
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
  ai_context_updated_at: null
}

/** PATCH /api/user/preferences: any subset; each field validated on its own. */
export const PreferencesPatch = Schema.Struct({
  default_grouping: Schema.optional(label),
  project_preview_count: Schema.optional(Schema.Int.pipe(Schema.between(0, 100))),
  auto_snooze_minutes: Schema.optional(minutes),
  auto_snooze_low_minutes: Schema.optional(minutes),
  auto_snooze_medium_minutes: Schema.optional(minutes),
  auto_snooze_high_minutes: Schema.optional(minutes),
  auto_snooze_urgent_minutes: Schema.optional(minutes),
  default_reminder_slot_id: Schema.optional(slotRef),
  quota_prompt_slot_id: Schema.optional(slotRef),
  quota_prompts_enabled: Schema.optional(Schema.Boolean),
  enrichment_notifications_enabled: Schema.optional(Schema.Boolean),
  sweep_feedback_notifications_enabled: Schema.optional(Schema.Boolean),
  week_start: Schema.optional(WeekStart),
  check_in_day: Schema.optional(Schema.Int.pipe(Schema.between(0, 6, { message: () => "must be 0 (Sunday) to 6 (Saturday)" }))),
  default_snooze_option: Schema.optional(label),
  ai_context: Schema.optional(shortText(10_000)),
  timezone: Schema.optional(TimeZoneName)
})
export type PreferencesPatch = typeof PreferencesPatch.Type

/** Fills in defaults for keys stored before they existed. */
export const withDefaults = (stored: Partial<StoredPreferences>, timezone: string): Preferences => ({
  ...DEFAULT_PREFERENCES,
  ...stored,
  timezone
})
