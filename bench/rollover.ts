import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Either, Layer, Logger, LogLevel, ManagedRuntime, Option, Redacted } from "effect"
import { localParts } from "../src/kernel/LocalTime.js"
import { DEFAULT_PREFERENCES } from "../src/accounts/Preferences.js"
import { type Period, periodContaining, parsePeriodRule } from "../src/quotas/QuotaPeriods.js"
import { INBOX_NAME } from "../src/slots/Slots.js"
import { MigratedDatabaseLive } from "../src/Program.js"
import { AppConfig } from "../src/kernel/AppConfig.js"
import { Quotas } from "../src/quotas/Quotas.js"
import { ServicesLive } from "../src/system/ServicesLive.js"
import Pg from "pg"
import { onCleanup } from "./processes.js"
import type { Database, Section } from "./report.js"
import { formatTable } from "./report.js"
import { freshDatabase, log } from "./setup.js"
import { TaskId } from "../src/kernel/Ids.js"

/**
 * Rollover at scale: BENCH_ROLLOVER_QUOTAS daily quotas (100,000) over
 * BENCH_ROLLOVER_USERS users (1,000), all in one zone, all in yesterday's local period, so
 * every period ends at the same local midnight. Seeded with SQL (the setup is not what is
 * measured), then closed by `Quotas.sweep()`:
 *
 *   one instance   one service layer sweeps them all;
 *   two instances  the periods are moved back again and two service layers (two pools on
 *                  one database, as two processes would have) sweep at the same moment.
 *
 * Each run checks that every period was recorded exactly once, that met periods have their
 * completion and daily statistics, and that nothing else (events, deliveries, undo) was
 * written. For scale, the per-task rollover (one mutation-pipeline transaction a quota, the
 * path the sweep used before) closes a sample of BENCH_ROLLOVER_SAMPLE quotas one by one.
 */

const numberEnv = (name: string, fallback: number) => {
  const raw = process.env[name]
  const value = raw === undefined || raw.trim() === "" ? fallback : Number(raw)
  if (!Number.isInteger(value) || value < 1 || value > 2_000_000) throw new Error(`${name} must be a whole number from 1 to 2,000,000`)
  return value
}

const CANDIDATE_ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "America/Los_Angeles", "Asia/Kolkata"]

/** A zone whose next local midnight is hours away, so no boundary passes during the run. */
const quietZone = (now: Date) => CANDIDATE_ZONES.find((zone) => {
  const hour = localParts(now, zone).hour
  return hour >= 1 && hour <= 21
})!

type Exec = (text: string, params?: ReadonlyArray<unknown>) => Promise<ReadonlyArray<Record<string, unknown>>>

const makeRuntime = (databaseUrl: string | undefined, dataDir: string | undefined) =>
  ManagedRuntime.make(
    ServicesLive.pipe(
      Layer.provideMerge(MigratedDatabaseLive),
      Layer.provideMerge(AppConfig.layerWith({
        databaseUrl: databaseUrl === undefined ? Option.none() : Option.some(Redacted.make(databaseUrl)),
        dataDir: dataDir ?? "./data",
        serviceNow: Option.none(),
        webhookDispatch: false,
        logLevel: "warn"
      })),
      Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
    )
  )

const seconds = (ms: number) => (ms / 1000).toFixed(2)

export const rolloverScenario = async (database: Database): Promise<Section> => {
  const quotaCount = numberEnv("BENCH_ROLLOVER_QUOTAS", 100_000)
  const userCount = Math.min(numberEnv("BENCH_ROLLOVER_USERS", 1_000), quotaCount)
  const sampleCount = Math.min(numberEnv("BENCH_ROLLOVER_SAMPLE", 2_000), quotaCount)
  const fresh = await freshDatabase(database)
  const a = makeRuntime(fresh.databaseUrl, fresh.dataDir)
  const disposeA = onCleanup(`close rollover runtime A (${database})`, () => a.dispose())
  // The embedded database is one process's: a second instance exists only on PostgreSQL.
  const b = database === "postgres" ? makeRuntime(fresh.databaseUrl, fresh.dataDir) : undefined
  const disposeB = b === undefined ? undefined : onCleanup(`close rollover runtime B (${database})`, () => b.dispose())
  let closeAdmin: (() => Promise<void>) | undefined
  try {
    await a.runPromise(Effect.void)
    if (b !== undefined) await b.runPromise(Effect.void)
    // Set-up statements run past the service's statement bounds: on PostgreSQL they go
    // through a client of their own.
    const admin = fresh.databaseUrl === undefined ? undefined : new Pg.Client({ connectionString: fresh.databaseUrl })
    if (admin !== undefined) await admin.connect()
    closeAdmin = admin === undefined ? undefined : onCleanup(`close the rollover set-up client (${database})`, () => admin.end())
    const exec: Exec = (text, params = []) =>
      admin !== undefined
        ? admin.query(text, [...params]).then((result) => result.rows)
        : a.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe<Record<string, unknown>>(text, [...params as Array<any>])))
    const count = async (text: string, params: ReadonlyArray<unknown> = []) => Number((await exec(text, params))[0]!.n)

    const now = new Date()
    const zone = quietZone(now)
    const rule = parsePeriodRule("FREQ=DAILY")
    if (Either.isLeft(rule)) throw new Error(rule.left)
    const settings = { zone, weekStart: DEFAULT_PREFERENCES.week_start }
    const current = periodContaining(rule.right, settings, now)
    const previous: Period = periodContaining(rule.right, settings, new Date(current.start.getTime() - 1))
    const at = now.toISOString()

    // ---- seed: users, their inboxes, the quotas (target 2-5, 0-6 logged) ----
    const seedStarted = performance.now()
    const perUser = Math.ceil(quotaCount / userCount)
    await exec(
      `INSERT INTO users (username, timezone, preferences, created_at)
       SELECT 'rollover_' || i, $1, $2::jsonb, $3::timestamptz FROM generate_series(1, $4::int) AS i`,
      [zone, JSON.stringify(DEFAULT_PREFERENCES), at, userCount]
    )
    await exec(
      `INSERT INTO projects (owner_id, name, is_inbox, sort_order, created_at, updated_at)
       SELECT id, $1, true, 0, $2::timestamptz, $2::timestamptz FROM users ORDER BY id`,
      [INBOX_NAME, at]
    )
    await exec(
      `INSERT INTO tasks (user_id, project_id, title, original_title, rrule, progress_target, progress_current,
         progress_period_start, progress_period_end, created_at, updated_at)
       SELECT p.owner_id, p.id, 'Quota #' || n, 'Quota #' || n, 'FREQ=DAILY', 2 + n % 4, 0,
         $1::timestamptz, $2::timestamptz, $3::timestamptz, $3::timestamptz
       FROM (SELECT p.*, row_number() OVER (ORDER BY p.id) - 1 AS u FROM projects p) p
       CROSS JOIN LATERAL generate_series(p.u * $4::int, p.u * $4::int + $4::int - 1) AS n
       WHERE n < $5::int`,
      [previous.start.toISOString(), previous.end.toISOString(), at, perUser, quotaCount]
    )
    // 0-6 logged, by id, so moving the periods back restores the same counts.
    await exec(`UPDATE tasks SET progress_current = (id * 5) % 7`)
    await exec(
      `INSERT INTO webhooks (user_id, url, events, secret, created_at, updated_at)
       SELECT id, 'http://127.0.0.1:9/never', '["task.created","task.updated","task.completed","task.progressed"]'::jsonb,
              'bench', $1::timestamptz, $1::timestamptz FROM users ORDER BY id LIMIT 10`,
      [at]
    )
    await exec("VACUUM ANALYZE")
    const seeded = await count(`SELECT count(*)::int AS n FROM tasks WHERE progress_period_end = $1::timestamptz`, [previous.end.toISOString()])
    const expectedMet = await count(`SELECT count(*)::int AS n FROM tasks WHERE progress_current >= progress_target`)
    log(`${database}: seeded ${seeded} daily quotas over ${userCount} users in ${zone}, all ending at ${previous.end.toISOString()} ` +
      `(${expectedMet} met), in ${seconds(performance.now() - seedStarted)} s`)

    const facts = async () => ({
      periods: await count(`SELECT count(*)::int AS n FROM quota_periods`),
      distinct: await count(`SELECT count(DISTINCT (task_id, period_start))::int AS n FROM quota_periods`),
      met: await count(`SELECT count(*)::int AS n FROM quota_periods WHERE met`),
      completions: await count(`SELECT count(*)::int AS n FROM completions`),
      statCompletions: await count(`SELECT COALESCE(sum(completions), 0)::int AS n FROM daily_stats`),
      sideRows: await count(`SELECT ((SELECT count(*) FROM outbox_events) + (SELECT count(*) FROM webhook_deliveries)
        + (SELECT count(*) FROM undo_entries))::int AS n`),
      stillEnded: await count(
        `SELECT count(*)::int AS n FROM tasks WHERE progress_period_end IS NOT NULL AND NOT done AND deleted_at IS NULL
           AND progress_period_end <= $1::timestamptz`,
        [new Date().toISOString()]
      )
    })
    const problems: Array<string> = []
    const check = (label: string, before: Awaited<ReturnType<typeof facts>>, after: Awaited<ReturnType<typeof facts>>, closed: number) => {
      const grew = after.periods - before.periods
      if (closed !== seeded) problems.push(`${label}: the sweeps reported ${closed} periods, expected ${seeded}`)
      if (grew !== seeded) problems.push(`${label}: quota_periods grew by ${grew}, expected ${seeded}`)
      if (after.distinct !== after.periods) problems.push(`${label}: a period was recorded twice`)
      if (after.met - before.met !== expectedMet) problems.push(`${label}: ${after.met - before.met} met periods, expected ${expectedMet}`)
      if (after.completions - before.completions !== expectedMet) problems.push(`${label}: completions do not match the met periods`)
      if (after.statCompletions - before.statCompletions !== expectedMet) problems.push(`${label}: daily statistics do not match`)
      if (after.sideRows !== before.sideRows) problems.push(`${label}: events, deliveries or undo entries were written`)
      if (after.stillEnded !== 0) problems.push(`${label}: ${after.stillEnded} quotas still have an ended period`)
    }
    const sweepOn = (runtime: ManagedRuntime.ManagedRuntime<any, any>) =>
      runtime.runPromise(Effect.flatMap(Quotas, (q) => q.sweep())) as Promise<number>
    /** Back to the seeded state: the recorded periods forgotten, yesterday's period current again. */
    const moveBack = async () => {
      await exec(`DELETE FROM quota_periods`)
      await exec(`DELETE FROM completions`)
      await exec(`DELETE FROM daily_stats`)
      await exec(
        `UPDATE tasks SET progress_period_start = $1::timestamptz, progress_period_end = $2::timestamptz,
           progress_current = (id * 5) % 7, completion_count = 0, first_completed_at = NULL, last_completed_at = NULL`,
        [previous.start.toISOString(), previous.end.toISOString()]
      )
      await exec("VACUUM ANALYZE tasks")
    }

    // ---- one instance ----
    let before = await facts()
    let started = performance.now()
    const single = await sweepOn(a)
    const singleMs = performance.now() - started
    check("one instance", before, await facts(), single)
    log(`${database}: one instance closed ${single} periods in ${seconds(singleMs)} s`)

    // ---- two instances at the same moment ----
    let pair: { a: number; b: number; ms: number } | undefined
    if (b !== undefined) {
      await moveBack()
      before = await facts()
      started = performance.now()
      const [na, nb] = await Promise.all([sweepOn(a), sweepOn(b)])
      pair = { a: na, b: nb, ms: performance.now() - started }
      check("two instances", before, await facts(), na + nb)
      log(`${database}: two instances closed ${na} + ${nb} periods in ${seconds(pair.ms)} s`)
    }

    // ---- the per-task pipeline, on a sample ----
    await moveBack()
    const sample = (await exec(`SELECT id FROM tasks ORDER BY id LIMIT $1::int`, [sampleCount])).map((r) => TaskId.make(Number(r.id)))
    started = performance.now()
    await a.runPromise(Effect.flatMap(Quotas, (q) => Effect.forEach(sample, (id) => q.rollover(id), { discard: true })))
    const perTaskMs = (performance.now() - started) / sample.length

    const header = ["path", "quotas", "time s", "ms per quota", "100k extrapolated s"]
    const rows = [
      ["per-task pipeline (before)", String(sample.length), seconds(perTaskMs * sample.length), perTaskMs.toFixed(3), seconds(perTaskMs * 100_000)],
      ["batched sweep, one instance", String(single), seconds(singleMs), (singleMs / single).toFixed(3), seconds(singleMs / single * 100_000)],
      ...(pair === undefined
        ? []
        : [["batched sweep, two instances", `${pair.a}+${pair.b}`, seconds(pair.ms), (pair.ms / seeded).toFixed(3), seconds(pair.ms / seeded * 100_000)]])
    ]
    return {
      title: `Rollover at one local midnight, ${database}: ${seeded} daily quotas over ${userCount} users (${zone})`,
      lines: [
        ...formatTable(header, rows, (i) => i >= 1),
        `Ratio per quota, per-task pipeline / batched sweep (one instance): ${(perTaskMs / (singleMs / single)).toFixed(0)}×.`,
        `rollover: ${seeded} periods closed in ${seconds(singleMs)} s (one instance)` +
        (pair === undefined ? "" : `, ${seconds(pair.ms)} s (two instances sweeping at once: ${pair.a} + ${pair.b})`) +
        `; target ≤ 10 s on PostgreSQL.`,
        problems.length === 0
          ? `Checks: every period recorded exactly once, ${expectedMet} met with a completion and a daily count; no events, deliveries or undo entries.`
          : `PROBLEMS: ${problems.join("; ")}`
      ]
    }
  } finally {
    if (closeAdmin !== undefined) await closeAdmin()
    if (disposeB !== undefined) await disposeB()
    await disposeA()
  }
}
