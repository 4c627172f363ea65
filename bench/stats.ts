/** Summaries of a bench's repeated runs. */

export const mean = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0) / xs.length

/** The mean of ratios: a round at 0.5 and one at 2 cancel out. */
export const geomean = (xs: ReadonlyArray<number>) => Math.exp(mean(xs.map(Math.log)))

/** The middle value (the mean of the two middle ones for an even count): one outlying run does not move it. */
export const median = (xs: ReadonlyArray<number>) => {
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}
