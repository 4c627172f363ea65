import { Clock, Duration, Effect, Layer, Option } from "effect"
import { AppConfig } from "./AppConfig.js"

/**
 * A clock that starts at `start` when created and then runs forward in real time.
 * This module is the only place that reads the system time; everything else asks `Clock`.
 */
export const makeShiftedClock = (start: Date): Clock.Clock => {
  const base = Clock.make()
  const offset = start.getTime() - base.unsafeCurrentTimeMillis()
  const offsetNanos = BigInt(offset) * 1_000_000n
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => base.unsafeCurrentTimeMillis() + offset,
    currentTimeMillis: Effect.sync(() => base.unsafeCurrentTimeMillis() + offset),
    unsafeCurrentTimeNanos: () => base.unsafeCurrentTimeNanos() + offsetNanos,
    currentTimeNanos: Effect.sync(() => base.unsafeCurrentTimeNanos() + offsetNanos),
    sleep: (duration: Duration.Duration) => base.sleep(duration)
  }
}

/** Installs the `SERVICE_NOW` clock for the whole program when the variable is set. */
export const ServiceClockLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) =>
    Option.match(config.serviceNow, {
      onNone: () => Layer.empty,
      onSome: (start) => Layer.setClock(makeShiftedClock(start))
    })
  )
)

/** The current instant as a Date, read through Effect's Clock. */
export const now: Effect.Effect<Date> = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))
