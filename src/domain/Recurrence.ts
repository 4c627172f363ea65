import { Either } from "effect"
import rrulePkg from "rrule"

const { RRule } = rrulePkg

/** FREQ and INTERVAL only, with a period frequency: how a quota names its period. INTERVAL=0 names none. */
const BARE_PERIOD = /^(RRULE:)?FREQ=(DAILY|WEEKLY|MONTHLY|YEARLY)(;INTERVAL=0*[1-9]\d*)?$/i
const BARE_PERIOD_SWAPPED = /^(RRULE:)?INTERVAL=0*[1-9]\d*;FREQ=(DAILY|WEEKLY|MONTHLY|YEARLY)$/i

export const isBarePeriodRule = (rule: string): boolean => {
  const text = rule.trim()
  return BARE_PERIOD.test(text) || BARE_PERIOD_SWAPPED.test(text)
}

/** Parses an RFC 5545 RRULE; the reason comes back when it does not parse. */
export const parseRule = (rule: string): Either.Either<rrulePkg.Options, string> => {
  const text = rule.trim().replace(/^RRULE:/i, "")
  if (!/^[A-Z]+=/i.test(text)) return Either.left("is not an RRULE (expected e.g. FREQ=DAILY)")
  try {
    const options = RRule.parseString(text)
    if (options.freq === undefined) return Either.left("needs a FREQ")
    // Minute- and second-level rules make no sense for tasks and would flood the schedule.
    if (options.freq > RRule.HOURLY) return Either.left("FREQ must be YEARLY, MONTHLY, WEEKLY, DAILY or HOURLY")
    const interval = options.interval ?? 1
    if (!Number.isInteger(interval) || interval < 1) return Either.left("INTERVAL must be a positive integer")
    // Construct once so rrule's own checks run.
    new RRule(options)
    return Either.right({ ...new RRule(options).options })
  } catch (error) {
    return Either.left(`does not parse: ${error instanceof Error ? error.message : String(error)}`)
  }
}
