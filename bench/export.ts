import { readMemoryMiB, sleep } from "./processes.js"
import { type Database, formatTable, type Section } from "./report.js"
import { seed } from "./seed.js"
import { config, log, prepare, startOurs } from "./setup.js"

/**
 * Export: one user with BENCH_EXPORT_TASKS tasks (and a completion for each done
 * one), GET /api/export (JSON) and GET /api/export?format=csv&type=tasks, read as fast as
 * the client can. For each: time to the first byte and to the last, the bytes, and the
 * service's RSS before and its peak during the download, sampled every 10 ms from
 * /proc/<pid>/status (VmHWM, the kernel's own peak, is shown too; it includes start-up).
 *
 * A last run reads the JSON export slowly (about 1 MiB/s for 5 s) and then hangs up: if the
 * service did not stream with backpressure it would buffer the whole export meanwhile.
 */

interface Download {
  readonly label: string
  readonly status: number
  readonly bytes: number
  readonly newlines: number
  readonly firstByteMs: number
  readonly totalMs: number
  readonly rssBefore: number
  readonly rssPeak: number
  readonly rssAfter: number
  readonly hwmAfter: number
  readonly head: string
  readonly tail: string
  readonly complete: boolean
}

const download = async (
  label: string,
  baseUrl: string,
  path: string,
  token: string,
  pid: number,
  slow?: { readonly bytesPerSecond: number; readonly seconds: number }
): Promise<Download> => {
  const memory = () => readMemoryMiB(pid) ?? { rss: Number.NaN, hwm: Number.NaN }
  const rssBefore = memory().rss
  let rssPeak = rssBefore
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, memory().rss)
  }, 10)
  const started = performance.now()
  let firstByteMs = Number.NaN
  let bytes = 0
  let newlines = 0
  let head = ""
  let tail = ""
  let complete = false
  let status = 0
  try {
    const res = await fetch(`${baseUrl}${path}`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(300_000)
    })
    status = res.status
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    for (;;) {
      const { done, value } = await reader.read()
      if (done) {
        complete = true
        break
      }
      if (Number.isNaN(firstByteMs)) firstByteMs = performance.now() - started
      bytes += value.byteLength
      for (const byte of value) if (byte === 10) newlines++
      if (head.length < 80) head += decoder.decode(value.subarray(0, 80))
      tail = (tail + Buffer.from(value.subarray(Math.max(0, value.byteLength - 80))).toString("utf8")).slice(-80)
      if (slow !== undefined) {
        const elapsed = (performance.now() - started) / 1000
        if (elapsed >= slow.seconds) {
          await reader.cancel()
          break
        }
        const ahead = bytes / slow.bytesPerSecond - elapsed
        if (ahead > 0) await sleep(ahead * 1000)
      }
    }
  } finally {
    clearInterval(sampler)
  }
  const totalMs = performance.now() - started
  rssPeak = Math.max(rssPeak, memory().rss)
  const after = memory()
  return {
    label,
    status,
    bytes,
    newlines,
    firstByteMs,
    totalMs,
    rssBefore,
    rssPeak,
    rssAfter: after.rss,
    hwmAfter: after.hwm,
    head: head.slice(0, 40),
    tail: tail.slice(-40),
    complete
  }
}

const mib = (bytes: number) => bytes / 1024 / 1024

export const exportScenario = async (database: Database): Promise<Section> => {
  log(`${database}: export: preparing a fresh database with ${config.exportTasks} tasks for one user`)
  const prepared = await prepare(database, async (exec) => {
    const seeded = await seed(exec, { users: 2, mainTasks: config.exportTasks })
    // A completion for each done task, so the export's third table has rows too.
    await exec(
      `INSERT INTO completions (task_id, user_id, completed_at, task_title, project_id, progress_target)
       SELECT id, user_id, COALESCE(done_at, updated_at), title, project_id, progress_target FROM tasks WHERE done AND user_id = $1`,
      [seeded.userId]
    )
    const [tasks] = await exec(`SELECT count(*)::int AS n FROM tasks WHERE user_id = $1`, [seeded.userId])
    const [completions] = await exec(`SELECT count(*)::int AS n FROM completions WHERE user_id = $1`, [seeded.userId])
    return { ...seeded, tasks: Number(tasks!.n), completions: Number(completions!.n) }
  })
  const { seeded } = prepared
  const ours = await startOurs(prepared.env)
  const downloads: Array<Download> = []
  const problems: Array<string> = []
  let startRss = Number.NaN
  let startHwm = Number.NaN
  try {
    // A few ordinary requests first, so "before" is a service that has served something.
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${ours.baseUrl}/api/tasks?limit=50`, { headers: { authorization: `Bearer ${seeded.token}` } })
      await res.arrayBuffer()
    }
    const start = readMemoryMiB(ours.pid)
    startRss = start?.rss ?? Number.NaN
    startHwm = start?.hwm ?? Number.NaN
    const kinds = [
      { label: "JSON", path: "/api/export" },
      { label: "CSV tasks", path: "/api/export?format=csv&type=tasks" }
    ]
    for (let round = 1; round <= config.rounds; round++) {
      for (const kind of round % 2 === 1 ? kinds : [...kinds].reverse()) {
        await sleep(500)
        const d = await download(`${kind.label} r${round}`, ours.baseUrl, kind.path, seeded.token, ours.pid)
        downloads.push(d)
        log(
          `${database} export ${d.label}: ${d.status}, ${mib(d.bytes).toFixed(1)} MiB in ${(d.totalMs / 1000).toFixed(2)} s ` +
            `(first byte ${d.firstByteMs.toFixed(0)} ms), RSS ${d.rssBefore.toFixed(0)} → peak ${d.rssPeak.toFixed(0)} MiB`
        )
        if (d.status !== 200 || !d.complete) problems.push(`${d.label}: status ${d.status}, complete ${d.complete}`)
        if (kind.label === "JSON" && (!d.head.startsWith(`{"data":{"tasks":[`) || !d.tail.endsWith("}}"))) {
          problems.push(`${d.label}: the body does not look like the export envelope`)
        }
        if (kind.label !== "JSON" && d.newlines !== seeded.tasks + 1) {
          problems.push(`${d.label}: ${d.newlines} lines, expected ${seeded.tasks + 1} (header + one per task)`)
        }
      }
    }
    await sleep(500)
    const slow = await download("JSON, slow reader, hangs up after 5 s", ours.baseUrl, "/api/export", seeded.token, ours.pid, {
      bytesPerSecond: 1024 * 1024,
      seconds: 5
    })
    downloads.push(slow)
    log(`${database} export ${slow.label}: ${mib(slow.bytes).toFixed(1)} MiB read, RSS ${slow.rssBefore.toFixed(0)} → peak ${slow.rssPeak.toFixed(0)} MiB`)
    // The service must carry on after the client went away mid-stream.
    await sleep(1_000)
    const health = await fetch(`${ours.baseUrl}/api/health`, { signal: AbortSignal.timeout(10_000) })
    await health.arrayBuffer()
    if (health.status !== 200) problems.push(`health answered ${health.status} after the hang-up`)
    const errors = ours.errors()
    if (errors.count > 0) problems.push(`the service logged ${errors.count} error(s): ${ours.errorSummary().join("; ")}`)
  } catch (error) {
    console.error(`service output:\n${ours.output()}`)
    throw error
  } finally {
    await ours.stop()
  }
  const header = ["export", "MiB", "time s", "first byte ms", "MiB/s", "RSS before", "RSS peak", "peak − before", "peak − before / body"]
  const rows = downloads.map((d) => [
    d.label,
    mib(d.bytes).toFixed(1),
    (d.totalMs / 1000).toFixed(2),
    d.firstByteMs.toFixed(0),
    (mib(d.bytes) / (d.totalMs / 1000)).toFixed(1),
    d.rssBefore.toFixed(0),
    d.rssPeak.toFixed(0),
    (d.rssPeak - d.rssBefore).toFixed(0),
    `${(((d.rssPeak - d.rssBefore) / mib(d.bytes)) * 100).toFixed(0)}%`
  ])
  const last = downloads.at(-1)
  return {
    title: `Export, ${database}: ${seeded.tasks} tasks and ${seeded.completions} completions of one user; ` +
      `service RSS in MiB (sampled every 10 ms), the body read as fast as the client can unless noted`,
    lines: [
      ...formatTable(header, rows, (i) => i >= 1),
      `Service RSS before the first export ${startRss.toFixed(0)} MiB (VmHWM ${startHwm.toFixed(0)}); ` +
      `after the last ${last?.rssAfter.toFixed(0) ?? "-"} MiB (VmHWM ${last?.hwmAfter.toFixed(0) ?? "-"}).`,
      problems.length === 0 ? "Checks: every export answered 200 and completed; CSV has a line per task; the service stayed healthy." : `PROBLEMS: ${problems.join("; ")}`
    ]
  }
}
