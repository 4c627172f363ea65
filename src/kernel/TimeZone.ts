const known = new Map<string, boolean>()

/** True for an IANA zone name the runtime knows (`UTC`, `Europe/Berlin`, …). */
export const isValidTimeZone = (zone: string): boolean => {
  const cached = known.get(zone)
  if (cached !== undefined) return cached
  let ok = false
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone })
    ok = zone.length > 0
  } catch {
    ok = false
  }
  known.set(zone, ok)
  return ok
}
