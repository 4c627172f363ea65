/**
 * The rule-based triage lists of GET /api/process (spec §4.4, CONTRACT §7). Pure.
 */

export type Horizon = "day" | "week" | "month" | "someday"

export interface TriageTask {
  readonly id: number
  readonly horizon: string | null
  readonly horizon_set_at: string | null
  readonly created_at: string
  readonly target_at: string | null
  readonly target_auto: boolean
  readonly segment_targeted_at: string | null
  readonly deadline_at: string | null
  readonly priority: number
}

const DAY = 86_400_000

/** Days on a horizon before it is suggested to grow: day 14, week or unset 60, month 180. */
export const growthThreshold = (horizon: string | null): number | undefined => {
  switch (horizon) {
    case "day":
      return 14
    case "week":
    case null:
      return 60
    case "month":
      return 180
    default:
      return undefined
  }
}

/** The next wider horizon: day→week, week or unset→month, month→someday. */
export const widerHorizon = (horizon: string | null): Horizon | undefined => {
  switch (horizon) {
    case "day":
      return "week"
    case "week":
    case null:
      return "month"
    case "month":
      return "someday"
    default:
      return undefined
  }
}

export const STALE_TARGET_DAYS = 7
export const DEADLINE_EXCLUSION_DAYS = 90

export interface GrowthItem {
  readonly id: number
  readonly from: string | null
  readonly to: Horizon
  readonly days_on_horizon: number
  readonly can_act: boolean
}

/**
 * A task long past its horizon, measured from horizon_set_at (else created_at). Left out:
 * tasks whose target has arrived, and tasks whose deadline is past or less than 90 days away.
 */
export const growthItem = (task: TriageTask, now: Date): GrowthItem | undefined => {
  const threshold = growthThreshold(task.horizon)
  const to = widerHorizon(task.horizon)
  if (threshold === undefined || to === undefined) return undefined
  if (task.target_at !== null && new Date(task.target_at).getTime() <= now.getTime()) return undefined
  if (task.deadline_at !== null && new Date(task.deadline_at).getTime() < now.getTime() + DEADLINE_EXCLUSION_DAYS * DAY) {
    return undefined
  }
  const since = new Date(task.horizon_set_at ?? task.created_at).getTime()
  const days = Math.floor((now.getTime() - since) / DAY)
  if (days < threshold) return undefined
  return { id: task.id, from: task.horizon, to, days_on_horizon: days, can_act: task.priority >= 2 }
}

/**
 * A task whose (explicit) target arrived 7 or more days ago, aged from its first target
 * date (moving the target does not reset it).
 */
export const staleTargetAge = (task: TriageTask, now: Date): number | undefined => {
  if (task.target_at === null || task.target_auto) return undefined
  const first = new Date(task.segment_targeted_at ?? task.target_at).getTime()
  const age = Math.floor((now.getTime() - first) / DAY)
  return age >= STALE_TARGET_DAYS ? age : undefined
}
