import { Schema } from "effect"
import { DateTimeInput, Horizon, Labels, Priority, QuotaPromptConfig, RRuleText } from "../tasks/Task.js"
import { ProjectId } from "../kernel/Ids.js"

/** Spec §4.3: every bulk response carries every counter, zeros included. */
export interface BulkCounts {
  tasks_affected: number
  tasks_skipped: number
  skipped_urgent: number
  skipped_high: number
  snoozed_high: number
  skipped_reminders: number
  skipped_deadline: number
  capped_deadline: number
  skipped_no_due_date: number
}

export const emptyCounts = (): BulkCounts => ({
  tasks_affected: 0,
  tasks_skipped: 0,
  skipped_urgent: 0,
  skipped_high: 0,
  snoozed_high: 0,
  skipped_reminders: 0,
  skipped_deadline: 0,
  capped_deadline: 0,
  skipped_no_due_date: 0
})

const CountsFields = {
  tasks_affected: Schema.Int,
  tasks_skipped: Schema.Int,
  skipped_urgent: Schema.Int,
  skipped_high: Schema.Int,
  snoozed_high: Schema.Int,
  skipped_reminders: Schema.Int,
  skipped_deadline: Schema.Int,
  capped_deadline: Schema.Int,
  skipped_no_due_date: Schema.Int
}
export const BulkCountsSchema = Schema.Struct(CountsFields).annotations({ identifier: "BulkCounts" })
export const BulkDoneCountsSchema = Schema.Struct({ ...CountsFields, quota_skipped: Schema.Int }).annotations({
  identifier: "BulkDoneCounts"
})

/** P3 is "high", P4 "urgent" (spec §2.1: levels P0 to P4, P4 is Urgent). */
export const HIGH = 3
export const URGENT = 4

const Id = Schema.Int.pipe(Schema.between(1, 2_147_483_647, { message: () => "must be a task id" }))
export const Ids = Schema.Array(Id).pipe(
  Schema.minItems(1, { message: () => "at least one id is required" }),
  Schema.maxItems(500, { message: () => "at most 500 ids" })
)
const OptionalIds = Schema.Array(Id).pipe(Schema.maxItems(500, { message: () => "at most 500 ids" }))

export const BulkDonePayload = Schema.Struct({ ids: Ids, close_period: Schema.optional(Schema.Boolean) })

/** Bulk snooze accepts `ids` as well as the spec's `task_ids` (CONTRACT §8). */
export const BulkSnoozePayload = Schema.Struct({
  ids: Schema.optional(Ids),
  task_ids: Schema.optional(Ids),
  until: DateTimeInput
}).pipe(
  Schema.filter((p) => p.ids !== undefined || p.task_ids !== undefined || { path: ["task_ids"], message: "task_ids (or ids) is required" })
)

export const SnoozeOverduePayload = Schema.Struct({ until: DateTimeInput })

export const BulkChanges = Schema.Struct({
  priority: Schema.optional(Priority),
  labels: Schema.optional(Labels),
  project_id: Schema.optional(ProjectId),
  target_at: Schema.optional(Schema.NullOr(DateTimeInput)),
  deadline_at: Schema.optional(Schema.NullOr(DateTimeInput)),
  horizon: Schema.optional(Schema.NullOr(Horizon)),
  deadline_nag_off: Schema.optional(Schema.Boolean),
  affirm_horizon: Schema.optional(Schema.Boolean),
  quota_prompt_config: Schema.optional(Schema.NullOr(QuotaPromptConfig))
})

export const BulkEditPayload = Schema.Struct({
  ids: Ids,
  changes: Schema.optional(BulkChanges),
  // A refined record key only picks matching keys and drops the rest silently; a key that is
  // not a task id must be a 400 (CONTRACT §6), so the keys are checked as a whole.
  per_task: Schema.optional(
    Schema.Record({ key: Schema.String, value: Schema.Struct({ rrule: Schema.NullOr(RRuleText) }) }).pipe(
      Schema.filter((m) => Object.keys(m).every((k) => /^\d{1,10}$/.test(k)) || "keys must be task ids")
    )
  ),
  include_task_ids: Schema.optional(OptionalIds),
  allow_past_deadline_ids: Schema.optional(OptionalIds),
  cap_at_deadline_ids: Schema.optional(OptionalIds),
  date_task_ids: Schema.optional(OptionalIds),
  delta_minutes: Schema.optional(Schema.Int.pipe(Schema.between(-525_600, 525_600)))
})
export type BulkEditPayload = typeof BulkEditPayload.Type

/** The widest range one review target may name ("1-1001"). */
export const MAX_TARGET_SPAN = 1000

export type TargetExpansion =
  | { readonly _tag: "Invalid" }
  | { readonly _tag: "Beyond"; readonly number: number }
  | { readonly _tag: "Numbers"; readonly numbers: ReadonlyArray<number> }

/**
 * Review targets ("3" or a range "2-5") over a session numbered 1..size, deduplicated in the
 * order first named. Every target is parsed and checked against the session before any
 * range is expanded, so a range past the session is refused without walking it, and the
 * walk is bounded by targets × min(span, size); a bitmap keeps each step constant time.
 */
export const expandTargets = (targets: ReadonlyArray<string>, size: number): TargetExpansion => {
  const ranges: Array<readonly [number, number]> = []
  for (const target of targets) {
    const m = /^\s*(\d{1,6})\s*(?:-\s*(\d{1,6})\s*)?$/.exec(target)
    if (m === null) return { _tag: "Invalid" }
    const from = Number(m[1])
    const to = m[2] === undefined ? from : Number(m[2])
    if (from < 1 || to < from || to - from > MAX_TARGET_SPAN) return { _tag: "Invalid" }
    ranges.push([from, to])
  }
  for (const [from, to] of ranges) {
    if (to > size) return { _tag: "Beyond", number: Math.max(from, size + 1) }
  }
  const seen = new Uint8Array(size + 1)
  const numbers: Array<number> = []
  for (const [from, to] of ranges) {
    for (let n = from; n <= to; n++) {
      if (seen[n] === 0) {
        seen[n] = 1
        numbers.push(n)
      }
    }
  }
  return { _tag: "Numbers", numbers }
}
