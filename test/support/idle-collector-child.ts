/**
 * Run by test/idle-collector.test.ts in a process of its own with a 64 MiB semi-space:
 * a burst that grows the young generation, then the idle collector (its checks sped up),
 * then one JSON line: the young generation's size before and after, and how long it took.
 */
import { startIdleCollector, youngGenerationSize } from "../../src/system/IdleCollector.js"

const MiB = 1024 * 1024
// Much of what the burst allocates stays alive for a while, as requests in flight do: V8
// grows its young generation when many objects survive its scavenges.
let kept: Array<ReadonlyArray<{ readonly n: number; readonly text: string }>> = []
for (let round = 0; round < 2_000; round++) {
  kept.push(Array.from({ length: 5_000 }, (_, n) => ({ n, text: `row ${n} of ${round}` })))
  if (kept.length > 200) kept = kept.slice(-200)
}
kept = []
const grown = youngGenerationSize()
const started = Date.now()
startIdleCollector({
  checkMs: 1_000,
  quietChecks: 3,
  quietUtilization: 0.05,
  growthBytes: 16 * MiB,
  smallYoungBytes: 8 * MiB,
  shrinkTries: 8
})
while (Date.now() - started < 20_000 && youngGenerationSize() > 8 * MiB) {
  await new Promise((resolve) => setTimeout(resolve, 250))
}
console.log(JSON.stringify({ grown, after: youngGenerationSize(), ms: Date.now() - started }))
