import { performance } from "node:perf_hooks"
import * as V8 from "node:v8"
import * as Vm from "node:vm"

/** V8's `gc` extension: no argument is a full collection, `{ type: "minor" }` a scavenge. */
type Collect = (options?: { readonly type: "minor" }) => void

/** `gc`, exposed after start-up: `--expose-gc` then reaches new contexts only, so it is taken from one. */
const exposeGc = (): Collect | undefined => {
  try {
    const exposed = (globalThis as { gc?: unknown }).gc
    if (typeof exposed === "function") return exposed as Collect
    V8.setFlagsFromString("--expose-gc")
    const fromContext: unknown = Vm.runInNewContext("gc")
    return typeof fromContext === "function" ? fromContext as Collect : undefined
  } catch {
    return undefined
  }
}

/** Bytes the young generation holds room for (its semi-spaces), grown or not. */
export const youngGenerationSize = () =>
  V8.getHeapSpaceStatistics().find((space) => space.space_name === "new_space")?.space_size ?? 0

/**
 * One full collection that also compacts every page: survivors moved together and the
 * emptied pages handed back (old space 154 → 65 MiB on the loaded service, where a plain
 * full collection left 99). `--compact-on-every-full-gc` is set for this one collection only
 * (V8 reads it when the collection starts; Node leaves flags writable after start-up).
 */
const collectIdleGarbage = (collect: Collect) => {
  V8.setFlagsFromString("--compact-on-every-full-gc")
  try {
    collect()
  } finally {
    V8.setFlagsFromString("--no-compact-on-every-full-gc")
  }
}

export interface IdleCollectorOptions {
  /** How often the event loop's busyness is read. */
  readonly checkMs: number
  /** Checks in a row under `quietUtilization` before collecting. */
  readonly quietChecks: number
  readonly quietUtilization: number
  /** Heap growth since the last collection run here that makes one worth it. */
  readonly growthBytes: number
  /** A young generation at most this size is left as it is. */
  readonly smallYoungBytes: number
  /** Scavenges tried, one per check, to shrink the young generation after a collection. */
  readonly shrinkTries: number
}

const DEFAULTS: IdleCollectorOptions = {
  checkMs: 2_000,
  quietChecks: 5,
  quietUtilization: 0.05,
  growthBytes: 16 * 1024 * 1024,
  smallYoungBytes: 8 * 1024 * 1024,
  shrinkTries: 5
}

/**
 * Memory back once the service goes quiet. Under load V8 grows its young generation to its
 * two semi-spaces (32 MiB at `npm start`'s 16, 128 at `SERVICE_SEMI_SPACE_MB=64`) and its old
 * generation up to four times the live heap with V8's own growth (~140 MiB for ~40 live under
 * the bench's load), and keeps both. Its own idle "memory reducer" judges idleness by the
 * allocation rate it saw at its last collection, so after a burst it can wait minutes. So,
 * every 2 s:
 *
 * - If the event loop was under 5 % busy for the last 10 s and the heap holds 16 MiB more
 *   than after the last collection run here (so also once, 10 s after start-up),
 *   `collectIdleGarbage`. It costs about twice a plain full collection's pause, so it waits
 *   for quiet. The service's own upkeep keeps an idle loop 0.4–0.9 % busy, more on a machine
 *   busy with other work: at the 1 % this used to wait for, the collection after a burst
 *   came 20–40 s later on such a machine.
 * - Then, while still quiet, a scavenge at each check until the young generation is down to
 *   8 MiB (at most five). V8 shrinks it only at a collection whose last ~5 s of collections
 *   saw a low but measurable allocation rate (`Heap::ShouldResizeNewSpace`); the full
 *   collection above, after seconds with almost nothing allocated, left it at 121 MiB, and
 *   the third scavenge 2 s apart reliably brings it to 1 MiB (measured at semi-space 64).
 *   A scavenge of an almost empty young generation takes well under a millisecond. The next
 *   burst grows it again within a few scavenges.
 *
 * Off with SERVICE_IDLE_GC=off.
 */
export const startIdleCollector = (options: IdleCollectorOptions = DEFAULTS) => {
  if (/^(off|0|false|no)$/i.test((process.env.SERVICE_IDLE_GC ?? "").trim())) return
  const collect = exposeGc()
  if (collect === undefined) return
  let last = performance.eventLoopUtilization()
  let quietChecks = 0
  let shrinkTries = 0
  // Nothing collected yet: the first quiet moment after start-up collects what start-up
  // left (the modules' garbage, a young generation grown while they loaded).
  let baseline = 0
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization()
    const utilization = performance.eventLoopUtilization(now, last).utilization
    last = now
    quietChecks = utilization < options.quietUtilization ? quietChecks + 1 : 0
    if (quietChecks === 0) shrinkTries = 0 // a burst came: it needs the young generation
    if (shrinkTries > 0) {
      if (youngGenerationSize() <= options.smallYoungBytes) shrinkTries = 0
      else {
        collect({ type: "minor" })
        shrinkTries--
      }
      baseline = V8.getHeapStatistics().total_physical_size
      return
    }
    if (quietChecks < options.quietChecks) return
    const heap = V8.getHeapStatistics().total_physical_size
    if (heap < baseline + options.growthBytes) {
      // Shrunk meanwhile (V8's own collections): grow from there.
      baseline = Math.min(baseline, heap)
      return
    }
    collectIdleGarbage(collect)
    baseline = V8.getHeapStatistics().total_physical_size
    shrinkTries = options.shrinkTries
    quietChecks = 0
    // The collection's own time shows as a busy loop in the next window; start it afresh.
    last = performance.eventLoopUtilization()
  }, options.checkMs)
  timer.unref()
}
