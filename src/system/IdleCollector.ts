import { performance } from "node:perf_hooks"
import * as V8 from "node:v8"
import * as Vm from "node:vm"

/** V8's `gc` extension: a full collection. */
export type Collect = () => void

/** `gc`, exposed after start-up: `--expose-gc` then reaches new contexts only, so it is taken from one. */
export const exposeGc = (): Collect | undefined => {
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

/**
 * One full collection that also compacts every page: survivors moved together and the
 * emptied pages handed back (old space 154 → 65 MiB on the loaded service, where a plain
 * full collection left 99). `--compact-on-every-full-gc` is set for this one collection
 * only (V8 reads it when the collection starts; Node leaves flags writable after start-up).
 * Run after seconds of quiet, it also shrinks the young generation to what it holds (128 →
 * 1 MiB): V8 shrinks it only at a collection that follows little allocation, judged over
 * its last ~5 s (`Heap::ReduceNewSpaceSize`), which is why a burst's own collections, or
 * one right after it, leave it at its full size. The next burst grows it again within a
 * few scavenges.
 */
export const collectIdleGarbage = (collect: Collect) => {
  V8.setFlagsFromString("--compact-on-every-full-gc")
  try {
    collect()
  } finally {
    V8.setFlagsFromString("--no-compact-on-every-full-gc")
  }
}

/**
 * Memory back once the service goes quiet. Under load V8 grows its young generation to its
 * two semi-spaces (128 MiB at `npm start`'s 64) and its old generation to about twice the
 * live heap, and keeps both. Its own idle "memory reducer" judges idleness by the allocation
 * rate it saw at its last collection, so after a burst it can wait minutes. So: every 2 s,
 * if the event loop was under 5 % busy for the last 10 s and the heap holds 16 MiB more than
 * after the last collection run here, `collectIdleGarbage`. It costs about twice a plain
 * full collection's pause, so it waits for quiet. The service's own upkeep keeps an idle
 * loop 0.4–0.9 % busy, more on a machine busy with other work: at the 1 % this used to
 * wait for, the collection after a burst came 20–40 s later on such a machine, and the
 * young generation stayed at its full size meanwhile.
 * Off with SERVICE_IDLE_GC=off.
 */
export const startIdleCollector = () => {
  if (/^(off|0|false|no)$/i.test((process.env.SERVICE_IDLE_GC ?? "").trim())) return
  const collect = exposeGc()
  if (collect === undefined) return
  const CHECK_MS = 2_000
  const QUIET_CHECKS = 5
  const QUIET_UTILIZATION = 0.05
  const GROWTH_BYTES = 16 * 1024 * 1024
  let last = performance.eventLoopUtilization()
  let quietChecks = 0
  let baseline = V8.getHeapStatistics().total_physical_size
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization()
    const utilization = performance.eventLoopUtilization(now, last).utilization
    last = now
    quietChecks = utilization < QUIET_UTILIZATION ? quietChecks + 1 : 0
    if (quietChecks < QUIET_CHECKS) return
    const heap = V8.getHeapStatistics().total_physical_size
    if (heap < baseline + GROWTH_BYTES) {
      // Shrunk meanwhile (V8's own collections): grow from there.
      baseline = Math.min(baseline, heap)
      return
    }
    collectIdleGarbage(collect)
    baseline = V8.getHeapStatistics().total_physical_size
    quietChecks = 0
    // The collection's own time shows as a busy loop in the next window; start it afresh.
    last = performance.eventLoopUtilization()
  }, CHECK_MS)
  timer.unref()
}
