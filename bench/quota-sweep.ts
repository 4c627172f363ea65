import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Either, Layer, Logger, LogLevel, ManagedRuntime, Option, Redacted } from "effect"
import { DEFAULT_PREFERENCES } from "../src/accounts/Preferences.js"
import { localParts } from "../src/kernel/LocalTime.js"
import { type Period, periodContaining, type PeriodSettings, parsePeriodRule } from "../src/quotas/QuotaPeriods.js"
import { INBOX_NAME } from "../src/slots/Slots.js"
import { MigratedDatabaseLive } from "../src/Program.js"
import { AppConfig } from "../src/kernel/AppConfig.js"
import { Quotas } from "../src/quotas/Quotas.js"
import { ServicesLive } from "../src/system/ServicesLive.js"
import { onCleanup } from "./processes.js"
import type { Database, Section } from "./report.js"
import { formatTable } from "./report.js"
import { config, freshDatabase, log } from "./setup.js"
import { median } from "./stats.js"

/**
 * Quota rollover sweep (spec §8), in-process through the service's own layers: a
 * ManagedRuntime over ServicesLive and the migrated database, calling `Quotas.sweep()`
 * directly; no HTTP and no scheduler (so no background sweep runs meanwhile).
 *
 * Seeds BENCH_QUOTAS quotas (DAILY and WEEKLY, target 2-5) over BENCH_QUOTA_USERS users,
 * BENCH_QUOTA_ENDED of them in the period before the current one, the rest in the current
 * period; then times a sweep that closes the ended ones, sweeps with nothing ended, and a
 * sweep after ten times as many periods have ended. Every user's zone is chosen so that
 * no local midnight (a period boundary) falls within the next hour.
 */

const RULES = ["FREQ=DAILY", "FREQ=WEEKLY"] as const

const CANDIDATE_ZONES = [
  "Pacific/Honolulu",
  "America/Los_Angeles",
  "America/Chicago",
  "America/New_York",
  "America/Sao_Paulo",
  "UTC",
  "Europe/Berlin",
  "Europe/Helsinki",
  "Asia/Dubai",
  "Asia/Kolkata",
  "Asia/Bangkok",
  "Asia/Tokyo",
  "Australia/Sydney",
  "Pacific/Auckland"
]

/** Zones whose next local midnight is more than an hour away (and not just past). */
const safeZones = (now: Date) => {
  const zones = CANDIDATE_ZONES.filter((zone) => {
    const hour = localParts(now, zone).hour
    return hour >= 1 && hour <= 22
  })
  return zones.slice(0, 5)
}

interface Periods {
  readonly current: Period
  readonly previous: Period
}

const periodsFor = (rule: string, settings: PeriodSettings, now: Date): Periods => {
  const parsed = parsePeriodRule(rule)
  if (Either.isLeft(parsed)) throw new Error(parsed.left)
  const current = periodContaining(parsed.right, settings, now)
  const previous = periodContaining(parsed.right, settings, new Date(current.start.getTime() - 1))
  if (previous.end.getTime() !== current.start.getTime()) throw new Error(`${rule} in ${settings.zone}: periods do not meet`)
  return { current, previous }
}

/** $1 user, $2 project, $3 count, $4 created_at, $5 stride of ended quotas, $6 offset, then per rule: current start/end, previous start/end. */
const QUOTAS_SQL = `
INSERT INTO tasks (user_id, project_id, title, original_title, rrule, progress_target, progress_current,
  progress_period_start, progress_period_end, created_at, updated_at)
SELECT $1::int, $2::int, title, title, rule, target, (i * 7) % (target + 2),
  CASE WHEN ended THEN (CASE WHEN daily THEN $9 ELSE $13 END)::timestamptz ELSE (CASE WHEN daily THEN $7 ELSE $11 END)::timestamptz END,
  CASE WHEN ended THEN (CASE WHEN daily THEN $10 ELSE $14 END)::timestamptz ELSE (CASE WHEN daily THEN $8 ELSE $12 END)::timestamptz END,
  $4::timestamptz, $4::timestamptz
FROM (
  SELECT i, i % 2 = 0 AS daily, CASE WHEN i % 2 = 0 THEN 'FREQ=DAILY' ELSE 'FREQ=WEEKLY' END AS rule,
    2 + i % 4 AS target, ($6::int + i) % $5::int = 0 AS ended, 'Quota #' || i AS title
  FROM generate_series(1, $3::int) AS i
) g`

type Exec = (text: string, params?: ReadonlyArray<unknown>) => Promise<ReadonlyArray<Record<string, unknown>>>

const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(2))

export const quotaSweep = async (database: Database): Promise<Section> => {
  const fresh = await freshDatabase(database)
  const appConfig = AppConfig.layerWith({
    databaseUrl: fresh.databaseUrl === undefined ? Option.none() : Option.some(Redacted.make(fresh.databaseUrl)),
    dataDir: fresh.dataDir ?? "./data",
    serviceNow: Option.none(),
    webhookDispatch: false,
    logLevel: "warn"
  })
  const layer = ServicesLive.pipe(
    Layer.provideMerge(MigratedDatabaseLive),
    Layer.provideMerge(appConfig),
    Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
  )
  const runtime = ManagedRuntime.make(layer)
  const dispose = onCleanup(`close the quota-sweep runtime (${database})`, () => runtime.dispose())
  try {
    await runtime.runPromise(Effect.void)
    const exec: Exec = (text, params = []) =>
      runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<Record<string, unknown>>(text, [...params as Array<any>])))
    const count = async (text: string, params: ReadonlyArray<unknown> = []) => Number((await exec(text, params))[0]!.n)
    const sweep = async () => {
      const started = performance.now()
      const closed = await runtime.runPromise(Effect.flatMap(Quotas, (q) => q.sweep()))
      return { closed, ms: performance.now() - started }
    }

    // ---- seed ----
    const now = new Date()
    const zones = safeZones(now)
    const weekStart = DEFAULT_PREFERENCES.week_start
    const perUser = Math.ceil(config.quotas / config.quotaUsers)
    const stride = Math.round(config.quotas / config.quotaEnded)
    log(`${database}: seeding ${config.quotas} quotas over ${config.quotaUsers} users (zones ${zones.join(", ")}), 1 in ${stride} ended`)
    const at = now.toISOString()
    const periods = new Map<string, Record<(typeof RULES)[number], Periods>>()
    for (const zone of zones) {
      const settings = { zone, weekStart }
      periods.set(zone, { "FREQ=DAILY": periodsFor("FREQ=DAILY", settings, now), "FREQ=WEEKLY": periodsFor("FREQ=WEEKLY", settings, now) })
    }
    const users: Array<{ id: number; zone: string }> = []
    /** One user with `n` quotas, every `stride`-th (counting from `offset`) in the previous period. */
    const seedUser = async (name: string, zone: string, n: number, stride: number, offset: number) => {
      const [user] = await exec(
        `INSERT INTO users (username, timezone, preferences, created_at) VALUES ($1, $2, $3::jsonb, $4::timestamptz) RETURNING id`,
        [name, zone, JSON.stringify(DEFAULT_PREFERENCES), at]
      )
      const userId = Number(user!.id)
      const [project] = await exec(
        `INSERT INTO projects (owner_id, name, is_inbox, sort_order, created_at, updated_at)
         VALUES ($1, $2, true, 0, $3::timestamptz, $3::timestamptz) RETURNING id`,
        [userId, INBOX_NAME, at]
      )
      const { "FREQ=DAILY": daily, "FREQ=WEEKLY": weekly } = periods.get(zone)!
      await exec(QUOTAS_SQL, [
        userId,
        Number(project!.id),
        n,
        at,
        stride,
        offset,
        daily.current.start.toISOString(),
        daily.current.end.toISOString(),
        daily.previous.start.toISOString(),
        daily.previous.end.toISOString(),
        weekly.current.start.toISOString(),
        weekly.current.end.toISOString(),
        weekly.previous.start.toISOString(),
        weekly.previous.end.toISOString()
      ])
      return userId
    }

    // Warm-up: one user's 200 quotas, all ended, swept before anything is timed, so the
    // timed sweeps do not pay for the first compilation of the code paths.
    await seedUser("quota_warmup", zones[0]!, 200, 1, 0)
    const warm = await sweep()
    log(`${database}: warm-up sweep closed ${warm.closed} periods in ${ms(warm.ms)} ms`)

    const seedStarted = performance.now()
    let seeded = 0
    for (let n = 0; n < config.quotaUsers && seeded < config.quotas; n++) {
      const zone = zones[n % zones.length]!
      const count_ = Math.min(perUser, config.quotas - seeded)
      users.push({ id: await seedUser(`quota_user_${n}`, zone, count_, stride, seeded), zone })
      seeded += count_
    }
    // A webhook subscribed to every task event of the first user: the sweep must not write deliveries.
    await exec(
      `INSERT INTO webhooks (user_id, url, events, secret, created_at, updated_at)
       VALUES ($1, 'http://127.0.0.1:9/never', '["task.created","task.updated","task.completed","task.progressed"]'::jsonb,
               'bench', $2::timestamptz, $2::timestamptz)`,
      [users[0]!.id, at]
    )
    await exec("VACUUM ANALYZE")
    const nowIso = new Date().toISOString()
    const quotas = await count(`SELECT count(*)::int AS n FROM tasks t JOIN users u ON u.id = t.user_id WHERE t.progress_target > 1 AND u.username <> 'quota_warmup'`)
    const ended = await count(
      `SELECT count(*)::int AS n FROM tasks WHERE progress_period_end IS NOT NULL AND NOT done AND deleted_at IS NULL
         AND progress_period_end <= $1::timestamptz`,
      [nowIso]
    )
    log(`${database}: seeded ${quotas} quotas, ${ended} with an ended period, in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`)

    // ---- the selection query's plan ----
    const plan = (await exec(
      `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY ON)
       SELECT id FROM tasks
       WHERE progress_period_end IS NOT NULL AND NOT done AND deleted_at IS NULL
         AND progress_period_end <= $1::timestamptz
       ORDER BY progress_period_end, id LIMIT 500`,
      [nowIso]
    )).map((r) => String(Object.values(r)[0]))
    const usesIndex = plan.some((line) => line.includes("tasks_quota_period_end"))

    const sideEffects = async () => ({
      periods: await count(`SELECT count(*)::int AS n FROM quota_periods`),
      distinct: await count(`SELECT count(DISTINCT (task_id, period_start))::int AS n FROM quota_periods`),
      met: await count(`SELECT count(*)::int AS n FROM quota_periods WHERE met`),
      completions: await count(`SELECT count(*)::int AS n FROM completions`),
      outbox: await count(`SELECT count(*)::int AS n FROM outbox_events`),
      deliveries: await count(`SELECT count(*)::int AS n FROM webhook_deliveries`),
      undo: await count(`SELECT count(*)::int AS n FROM undo_entries`)
    })
    const before = await sideEffects()

    // ---- sweep 1: the ended periods ----
    const first = await sweep()
    log(`${database}: sweep closed ${first.closed} periods in ${ms(first.ms)} ms`)
    const afterFirst = await sideEffects()

    // ---- nothing ended: a few sweeps, the median ----
    const idle: Array<number> = []
    for (let i = 0; i < 5; i++) {
      const s = await sweep()
      if (s.closed !== 0) throw new Error(`a sweep with nothing ended closed ${s.closed} periods (a local midnight passed?)`)
      idle.push(s.ms)
    }
    const idleMs = median(idle)
    log(`${database}: sweep with nothing ended: median ${ms(idleMs)} ms of ${idle.map(ms).join(", ")}`)

    // ---- ten times as many ended: move that many other quotas back one period ----
    const more = config.quotaEnded * 10
    const candidates = await exec(
      `SELECT t.id, t.rrule, u.timezone FROM tasks t JOIN users u ON u.id = t.user_id
       WHERE t.progress_target > 1 AND t.progress_period_end > $1::timestamptz
         AND NOT EXISTS (SELECT 1 FROM quota_periods q WHERE q.task_id = t.id)
       ORDER BY t.id`,
      [nowIso]
    )
    const step = Math.floor(candidates.length / more)
    const groups = new Map<string, Array<number>>()
    for (let i = 0; i < more; i++) {
      const row = candidates[i * step]!
      const key = `${String(row.timezone)}|${String(row.rrule)}`
      groups.set(key, [...(groups.get(key) ?? []), Number(row.id)])
    }
    for (const [key, ids] of groups) {
      const [zone, rule] = key.split("|") as [string, (typeof RULES)[number]]
      const previous = periods.get(zone)![rule].previous
      await exec(
        `UPDATE tasks SET progress_period_start = $1::timestamptz, progress_period_end = $2::timestamptz WHERE id = ANY($3::int[])`,
        [previous.start.toISOString(), previous.end.toISOString(), ids]
      )
    }
    await exec("VACUUM ANALYZE tasks")
    const third = await sweep()
    log(`${database}: sweep closed ${third.closed} periods in ${ms(third.ms)} ms`)
    const afterThird = await sideEffects()

    // ---- checks ----
    const problems: Array<string> = []
    if (first.closed !== ended) problems.push(`the first sweep closed ${first.closed}, expected ${ended}`)
    if (third.closed !== more) problems.push(`the last sweep closed ${third.closed}, expected ${more}`)
    if (afterThird.periods - before.periods !== ended + more) {
      problems.push(`quota_periods grew by ${afterThird.periods - before.periods}, expected ${ended + more}`)
    }
    if (afterThird.distinct !== afterThird.periods) problems.push("a period was recorded twice")
    if (afterThird.completions - before.completions !== afterThird.met - before.met) {
      problems.push("completions do not match the met periods")
    }
    for (const k of ["outbox", "deliveries", "undo"] as const) {
      if (afterThird[k] !== before[k]) problems.push(`the sweeps wrote ${afterThird[k] - before[k]} ${k} rows`)
    }
    const stillEnded = await count(
      `SELECT count(*)::int AS n FROM tasks WHERE progress_period_end IS NOT NULL AND NOT done AND deleted_at IS NULL
         AND progress_period_end <= $1::timestamptz`,
      [new Date().toISOString()]
    )
    if (stillEnded !== 0) problems.push(`${stillEnded} quotas still have an ended period`)

    const perClosed1 = first.ms / Math.max(1, first.closed)
    const perClosed3 = third.ms / Math.max(1, third.closed)
    const header = ["sweep", "closed", "time ms", "ms per closed", "vs nothing ended"]
    const rows = [
      ["nothing ended", "0", ms(idleMs), "-", "1.0"],
      [`${ended} ended`, String(first.closed), ms(first.ms), perClosed1.toFixed(2), (first.ms / idleMs).toFixed(0)],
      [`${more} ended`, String(third.closed), ms(third.ms), perClosed3.toFixed(2), (third.ms / idleMs).toFixed(0)]
    ]
    return {
      title: `Quota rollover sweep, ${database}: ${quotas} quotas over ${users.length} users, in-process Quotas.sweep()`,
      lines: [
        ...formatTable(header, rows, (i) => i >= 1),
        `Ratios: ${ended} ended / nothing ended ${(first.ms / idleMs).toFixed(0)}×; ` +
        `${more} ended / ${ended} ended ${(third.ms / first.ms).toFixed(1)}× for ${(more / ended).toFixed(0)}× the periods; ` +
        `cost per closed period ${perClosed1.toFixed(2)} → ${perClosed3.toFixed(2)} ms.`,
        `Periods closed: ${afterFirst.periods - before.periods} then ${afterThird.periods - afterFirst.periods} ` +
        `(${afterThird.met - before.met} met, each with a completion); outbox events, webhook deliveries, ` +
        `undo entries written by the sweeps: ${afterThird.outbox - before.outbox}, ${afterThird.deliveries - before.deliveries}, ` +
        `${afterThird.undo - before.undo}.`,
        `Selection query plan (${usesIndex ? "uses" : "DOES NOT use"} the partial index tasks_quota_period_end), ${ended} ended of ${quotas}:`,
        ...plan.map((line) => `    ${line}`),
        problems.length === 0 ? "Checks: every ended period recorded exactly once; nothing else written." : `PROBLEMS: ${problems.join("; ")}`
      ]
    }
  } finally {
    await dispose()
  }
}
