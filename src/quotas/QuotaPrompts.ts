import { Either } from "effect"
import { parsePeriodRule } from "./QuotaPeriods.js"
import { TaskId } from "../kernel/Ids.js"

/**
 * Quota reminders (spec "Quota reminders" 1-4): which numbered prompt rows a quota shows
 * today and in which time slot. Pure.
 */

export interface Slot {
  readonly id: number
  readonly start_time: string
}

export interface PromptConfig {
  readonly enabled?: boolean | undefined
  readonly slot_id?: number | null | undefined
  /** Prompt number → slot id, for a user who wants a given prompt elsewhere. */
  readonly numbers?: Readonly<Record<string, number>> | undefined
}

export interface QuotaForPrompts {
  readonly id: number
  readonly title: string
  readonly rrule: string | null
  readonly progress_current: number
  readonly progress_target: number
  readonly quota_prompt_config: PromptConfig | null
  readonly did: ReadonlyArray<string>
  readonly considered: ReadonlyArray<string>
  readonly loggedToday: number
}

export interface QuotaPrompt {
  readonly prompt_key: string
  readonly task_id: number
  readonly number: number
  readonly slot_id: number
  readonly title: string
  readonly current: number
  readonly target: number
  readonly period: string
  readonly considered: boolean
  readonly done: boolean
}

export const promptKey = (taskId: number, number: number, date: string) => `q:${taskId}:${number}:${date}`

export interface ParsedKey {
  readonly taskId: TaskId
  readonly number: number
  readonly date: string
}

export const parsePromptKey = (key: string): ParsedKey | undefined => {
  const m = /^q:(\d{1,10}):(\d{1,4}):(\d{4}-\d{2}-\d{2})$/.exec(key)
  if (m === null) return undefined
  const taskId = Number(m[1])
  if (taskId < 1 || taskId > 2_147_483_647) return undefined
  return { taskId: TaskId.make(taskId), number: Number(m[2]), date: m[3]! }
}

/** A daily quota with INTERVAL 1 gets numbered prompts; every other period gets one a day. */
export const isNumberedDaily = (rrule: string | null) => {
  if (rrule === null) return false
  const rule = parsePeriodRule(rrule)
  return Either.isRight(rule) && rule.right.freq === "DAILY" && rule.right.interval === 1
}

const periodName = (rrule: string | null): string => {
  if (rrule === null) return "none"
  const rule = parsePeriodRule(rrule)
  if (Either.isLeft(rule)) return "none"
  const name = rule.right.freq.toLowerCase()
  return rule.right.interval === 1 ? name : `every ${rule.right.interval} ${{ daily: "days", weekly: "weeks", monthly: "months", yearly: "years" }[name]}`
}

/** Daily, weekly and monthly quotas prompt by default; yearly ones do not. */
export const promptsEnabled = (quota: QuotaForPrompts) => {
  if (quota.quota_prompt_config?.enabled !== undefined) return quota.quota_prompt_config.enabled
  if (quota.rrule === null) return false
  const rule = parsePeriodRule(quota.rrule)
  return Either.isRight(rule) && rule.right.freq !== "YEARLY"
}

/**
 * The prompt rows of one quota for `date`. `slots` are ordered by start time;
 * `defaultSlotId` is the user's quota prompt slot, if any.
 */
export const promptsFor = (
  quota: QuotaForPrompts,
  slots: ReadonlyArray<Slot>,
  defaultSlotId: number | null,
  date: string
): ReadonlyArray<QuotaPrompt> => {
  if (slots.length === 0 || !promptsEnabled(quota)) return []
  const met = quota.progress_current >= quota.progress_target
  const findIndex = (id: number | null | undefined) => (id === null || id === undefined ? -1 : slots.findIndex((s) => s.id === id))
  const configured = findIndex(quota.quota_prompt_config?.slot_id)
  const fallback = findIndex(defaultSlotId)
  const first = configured >= 0 ? configured : fallback >= 0 ? fallback : 0
  const row = (number: number, slotIndex: number): QuotaPrompt => {
    const key = promptKey(quota.id, number, date)
    const done = number === 0 ? quota.loggedToday > 0 || quota.did.includes(key) : quota.progress_current >= number
    return {
      prompt_key: key,
      task_id: quota.id,
      number,
      slot_id: slots[slotIndex]!.id,
      title: quota.title,
      current: quota.progress_current,
      target: quota.progress_target,
      period: periodName(quota.rrule),
      considered: quota.considered.includes(key) || quota.did.includes(key),
      done
    }
  }
  if (!isNumberedDaily(quota.rrule)) {
    // One a day, until the quota is met for its period.
    return met ? [] : [row(0, first)]
  }
  // Prompt k goes to the k-th slot from the first; extras stay in the last slot, and a
  // slot shows only the highest number placed in it.
  const bySlot = new Map<number, number>()
  for (let k = 1; k <= quota.progress_target; k++) {
    const override = findIndex(quota.quota_prompt_config?.numbers?.[String(k)])
    const index = override >= 0 ? override : Math.min(first + k - 1, slots.length - 1)
    bySlot.set(index, Math.max(bySlot.get(index) ?? 0, k))
  }
  return [...bySlot.entries()].sort(([a], [b]) => a - b).map(([index, k]) => row(k, index))
}

/** The slot a reminder belongs to: the latest start at or before its time (before the first: the first). */
export const slotForTime = (slots: ReadonlyArray<Slot>, time: string): Slot | undefined => {
  let found: Slot | undefined = slots[0]
  for (const slot of slots) if (slot.start_time <= time) found = slot
  return found
}
