/** What both halves of the Temporal oracle share: the report, the span of years, seeded randomness. */

export interface OracleReport {
  readonly cases: number
  readonly divergences: number
  readonly examples: ReadonlyArray<string>
}

export const HOUR = 3_600_000
export const DAY = 24 * HOUR
/** The instants generated: 1995 to 2040. */
export const FROM = Date.UTC(1995, 0, 1)
export const TO = Date.UTC(2040, 11, 31)
export const MAX_EXAMPLES = 20

/** Zones whose rules are hard on calendar code: odd offsets, midnight gaps, double midnights, skipped dates. */
export const DST_EDGE_ZONES = [
  "Australia/Lord_Howe",
  "Pacific/Chatham",
  "America/St_Johns",
  "America/Havana",
  "America/Santiago",
  "Asia/Amman",
  "Asia/Tehran",
  "Pacific/Apia",
  "Pacific/Fakaofo",
  "Pacific/Kiritimati",
  "Antarctica/Troll",
  "Europe/Dublin"
] as const

/** Seeded randomness (mulberry32): a seed reproduces a run. */
export const seededRandom = (seed: number) => {
  let a = seed >>> 0
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
  const int = (min: number, max: number) => min + Math.floor(next() * (max - min + 1))
  const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(next() * items.length)]!
  return { next, int, pick }
}
export type Random = ReturnType<typeof seededRandom>
