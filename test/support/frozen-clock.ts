import { Clock } from "effect"
import { vi } from "vitest"
import type { TestService } from "./service.js"

export interface FrozenClock {
  /** Moves the service clock to exactly `at`. */
  readonly set: (at: Date) => Promise<void>
  readonly advance: (ms: number) => void
  readonly now: () => Promise<Date>
  readonly restore: () => void
}

/**
 * The service runs in this process, and its SERVICE_NOW clock is the host clock (`Date.now`,
 * which Effect's default Clock reads) plus a fixed offset. Stubbing `Date.now` therefore stops
 * the service clock, so a test can assert instants to the millisecond and step over
 * boundaries exactly. Call `restore` when done (an afterEach is the safe place).
 */
export const freezeServiceClock = (service: TestService): FrozenClock => {
  let host = Date.now()
  const spy = vi.spyOn(Date, "now").mockImplementation(() => host)
  const serviceMillis = () => service.run(Clock.currentTimeMillis)
  return {
    set: async (at) => {
      host += at.getTime() - (await serviceMillis())
    },
    advance: (ms) => {
      host += ms
    },
    now: async () => new Date(await serviceMillis()),
    restore: () => spy.mockRestore()
  }
}
