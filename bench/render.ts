/**
 * `npx tsx bench/render.ts`: what rendering a task costs, per database.
 * Seeds 1,000 tasks (timestamps with milliseconds, some done, some labelled) into a fresh
 * database migrated by the service, then times pages of 50 and 1,000 tasks through the
 * service's own SQL client, interleaved, and prints µs a task over a page that renders only
 * ids:
 *   - before:   row_to_json over a declared row type in PL/pgSQL, a call per row (migration
 *               0008's steady_task_wire, recreated here under another name);
 *   - computed: the columns concatenated into JSON text (migration 0014's steady_task_wire_text,
 *               now `steady_task_wire_of` over the columns): what lists ran until migration
 *               0022, and what each write now pays once for the row it writes;
 *   - stored:   the stored `tasks.wire_text` aggregated (`wireArray`), what lists, the trash
 *               and single reads run since migration 0022;
 *   - node:     typed columns (timestamps as epoch milliseconds) encoded in Node.
 * Every variant's text is checked to be the same bytes as `before` first.
 *
 * Environment: BENCH_DATABASES (postgres,embedded), BENCH_PG_URL, RENDER_ITERATIONS (200).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer, Logger, LogLevel, ManagedRuntime, Option, Redacted } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { MigratedDatabaseLive } from "../src/Program.js"
import { AppConfig } from "../src/kernel/AppConfig.js"
import { Users } from "../src/accounts/Users.js"
import { cleanupAll, onCleanup } from "./processes.js"
import type { Database } from "./report.js"
import { config, freshDatabase, ROOT } from "./setup.js"

const ITERATIONS = Number(process.env.RENDER_ITERATIONS ?? 200)

/** Migration 0002's row type and 0008's function, renamed: the rendering this replaced. */
const beforeDefinition = (): Array<string> => {
  const read = (file: string) => Fs.readFileSync(Path.join(ROOT, "migrations", file), "utf8")
  const type = read("0002_wire_speed.sql").match(/CREATE TYPE steady_task_wire_row AS \([\s\S]*?\n\);/)![0]
  const fn = read("0008_ai.sql").match(/CREATE OR REPLACE FUNCTION steady_task_wire\(t tasks\)[\s\S]*?END \$\$;/)![0]
  return [type.replace(/\n\);$/, ",\n  enrichment_status text\n);"), fn]
    .map((s) => s.replaceAll("steady_task_wire_row", "bench_wire_row_before").replace("steady_task_wire(", "bench_wire_before("))
}

/** The columns the generated `wire_text` is computed from, as migration 0022 lists them. */
const wireOfColumns = (): string => {
  const migration = Fs.readFileSync(Path.join(ROOT, "migrations", "0022_stored_task_wire.sql"), "utf8")
  return migration.match(/GENERATED ALWAYS AS \(steady_task_wire_of\(([\s\S]*?)\)\) STORED/)![1]!.trim()
}

const TIMESTAMPS = [
  "done_at", "due_at", "original_due_at", "target_at", "deadline_at", "horizon_set_at", "last_considered_at",
  "segment_deferred_at", "segment_targeted_at", "target_set_at", "occurrence_at", "deleted_at", "archived_at",
  "progress_period_start", "first_completed_at", "last_completed_at", "created_at", "updated_at"
] as const

const NODE_COLUMNS = `t.id, t.user_id, t.project_id, t.title, t.original_title, t.short_title, t.done, t.priority, t.rrule,
  t.recurrence_mode, t.anchor_time, t.anchor_dow, t.anchor_dom, t.horizon, t.target_auto, t.deadline_nag_off,
  t.auto_snooze_minutes, t.labels::text AS labels, t.notes, t.progress_target, t.progress_current,
  t.quota_prompt_config::text AS quota_prompt_config, t.quota_day_state::text AS quota_day_state, t.completion_count,
  t.skip_count, t.is_reminder, t.is_tracked, t.snooze_count, t.enrichment_status, t.rrule IS NOT NULL AND NOT (t.is_tracked OR t.progress_target > 1) AS is_recurring,
  NOT t.done AND t.snooze_count > 0 AND t.due_at IS DISTINCT FROM t.original_due_at AS is_snoozed,
  ${TIMESTAMPS.map((c) => `floor(extract(epoch FROM t.${c}) * 1000)::float8 AS ${c}`).join(", ")}`

/** The Node candidate: the same keys in the same order, the same text. */
const encodeNode = (rows: ReadonlyArray<Record<string, any>>): string => {
  const s = (v: string | null) => v === null ? "null" : JSON.stringify(v)
  const ts = (v: number | null) => v === null ? "null" : `"${new Date(v).toISOString()}"`
  const parts = rows.map((r) =>
    `{"id":${r.id},"user_id":${r.user_id},"project_id":${r.project_id},"title":${s(r.title)},"original_title":${s(r.original_title)},` +
    `"short_title":${s(r.short_title)},"done":${r.done},"done_at":${ts(r.done_at)},"priority":${r.priority},"due_at":${ts(r.due_at)},` +
    `"rrule":${s(r.rrule)},"recurrence_mode":${s(r.recurrence_mode)},"anchor_time":${s(r.anchor_time)},"anchor_dow":${r.anchor_dow},` +
    `"anchor_dom":${r.anchor_dom},"original_due_at":${ts(r.original_due_at)},"target_at":${ts(r.target_at)},"deadline_at":${ts(r.deadline_at)},` +
    `"horizon":${s(r.horizon)},"horizon_set_at":${ts(r.horizon_set_at)},"last_considered_at":${ts(r.last_considered_at)},` +
    `"segment_deferred_at":${ts(r.segment_deferred_at)},"segment_targeted_at":${ts(r.segment_targeted_at)},"target_set_at":${ts(r.target_set_at)},` +
    `"target_auto":${r.target_auto},"occurrence_at":${ts(r.occurrence_at)},"deadline_nag_off":${r.deadline_nag_off},` +
    `"auto_snooze_minutes":${r.auto_snooze_minutes},"deleted_at":${ts(r.deleted_at)},"archived_at":${ts(r.archived_at)},"labels":${r.labels},` +
    `"notes":${s(r.notes)},"progress_target":${r.progress_target},"progress_current":${r.progress_current},` +
    `"progress_period_start":${ts(r.progress_period_start)},"quota_prompt_config":${r.quota_prompt_config ?? "null"},` +
    `"quota_day_state":${r.quota_day_state},"completion_count":${r.completion_count},"skip_count":${r.skip_count},` +
    `"first_completed_at":${ts(r.first_completed_at)},"last_completed_at":${ts(r.last_completed_at)},"created_at":${ts(r.created_at)},` +
    `"updated_at":${ts(r.updated_at)},"is_recurring":${r.is_recurring},"is_reminder":${r.is_reminder},"is_tracked":${r.is_tracked},` +
    `"snooze_count":${r.snooze_count},"is_snoozed":${r.is_snoozed},"enrichment_status":${s(r.enrichment_status)}}`
  )
  return `[${parts.join(", ")}]`
}

const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const measure = async (database: Database) => {
  const fresh = await freshDatabase(database)
  const appConfig = AppConfig.layerWith({
    databaseUrl: fresh.databaseUrl === undefined ? Option.none() : Option.some(Redacted.make(fresh.databaseUrl)),
    dataDir: fresh.dataDir ?? "./data",
    serviceNow: Option.none(),
    logLevel: "warn"
  })
  const layer = Layer.merge(Users.Default, MigratedDatabaseLive).pipe(
    Layer.provideMerge(MigratedDatabaseLive),
    Layer.provideMerge(appConfig),
    Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
  )
  const runtime = ManagedRuntime.make(layer)
  onCleanup(`close the render runtime (${database})`, () => runtime.dispose())
  const exec = (text: string, params: Array<unknown> = []) =>
    runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql.unsafe<Record<string, any>>(text, params as Array<any>).pipe(
        Effect.tapError((e) => Effect.sync(() => console.error(String(e.cause), text.slice(0, 200))))
      )))
  const user = await runtime.runPromise(Effect.flatMap(Users, (users) => users.findOrCreate("render", "UTC")))
  await exec(`
    INSERT INTO tasks (user_id, project_id, title, original_title, due_at, original_due_at, target_at, done, done_at, labels,
                       notes, created_at, updated_at, priority, snooze_count)
    SELECT $1, p.id, 'task "' || g || E'" \\ é', 'task ' || g,
      '2026-11-01T12:00:00.123Z'::timestamptz + g * interval '1 hour 7 ms',
      '2026-11-01T12:00:00.123Z'::timestamptz + (g / 3) * interval '1 hour 7 ms',
      CASE WHEN g % 3 = 0 THEN '2026-11-05T08:00:00Z'::timestamptz END,
      g % 5 = 0, CASE WHEN g % 5 = 0 THEN '2026-11-02T10:11:12.345678Z'::timestamptz END,
      CASE WHEN g % 7 = 0 THEN '["home"]'::jsonb ELSE '[]'::jsonb END, 'notes ' || g,
      '2026-10-01T00:00:00.001Z'::timestamptz + g * interval '1 minute', now(), g % 5, g % 2
    FROM generate_series(1, 1000) g, projects p WHERE p.owner_id = $1 AND p.is_inbox`, [user.id])
  for (const statement of beforeDefinition()) await exec(statement)
  await exec("ANALYZE tasks")

  const wireOf = wireOfColumns().split(/,\s*/).map((column) => `p.${column}`).join(", ")
  const page = (n: number) => `(SELECT * FROM tasks t WHERE t.user_id = ${user.id} ORDER BY t.id LIMIT ${n})`
  const variants = {
    base: async (n: number) => (await exec(`SELECT COALESCE(json_agg(p.id ORDER BY p.id), '[]')::text AS body FROM ${page(n)} p`))[0]!.body,
    before: async (n: number) =>
      (await exec(`SELECT COALESCE(json_agg(bench_wire_before(p) ORDER BY p.id), '[]')::text AS body FROM ${page(n)} p`))[0]!.body,
    computed: async (n: number) =>
      (await exec(`SELECT '[' || COALESCE(string_agg(steady_task_wire_of(${wireOf}), ', ' ORDER BY p.id), '') || ']' AS body
        FROM ${page(n)} p`))[0]!.body,
    stored: async (n: number) =>
      (await exec(`SELECT '[' || COALESCE(string_agg(p.wire_text, ', ' ORDER BY p.id), '') || ']' AS body
        FROM (SELECT t.wire_text, t.id FROM tasks t WHERE t.user_id = ${user.id} ORDER BY t.id LIMIT ${n}) p`))[0]!.body,
    node: async (n: number) => encodeNode(await exec(`SELECT ${NODE_COLUMNS} FROM ${page(n)} t ORDER BY t.id`))
  } as const
  const lines: Array<string> = []
  for (const n of [50, 1000]) {
    const expected = await variants.before(n)
    for (const [name, run] of Object.entries(variants)) {
      const got = name === "base" ? expected : await run(n)
      if (got !== expected) {
        const at = [...got].findIndex((c, i) => c !== expected[i])
        throw new Error(`${database}: ${name} renders other text than before at ${at}: ${got.slice(at - 80, at + 40)} vs ${expected.slice(at - 80, at + 40)}`)
      }
    }
    const iterations = n === 50 ? ITERATIONS : Math.max(10, Math.round(ITERATIONS / 10))
    const times: Record<string, Array<number>> = Object.fromEntries(Object.keys(variants).map((k) => [k, []]))
    for (let i = 0; i < iterations; i++) {
      for (const [name, run] of Object.entries(variants)) {
        const t0 = performance.now()
        await run(n)
        times[name]!.push(performance.now() - t0)
      }
    }
    const base = median(times.base!)
    const perTask = (name: string) => ((median(times[name]!) - base) * 1000 / n).toFixed(1)
    lines.push(
      `render ${database} ${n} tasks: µs/task before ${perTask("before")}, computed ${perTask("computed")}, stored ${perTask("stored")}, ` +
        `node ${perTask("node")} (page of ids ${base.toFixed(2)} ms)`
    )
  }
  await runtime.dispose()
  return lines
}

const main = async () => {
  for (const database of config.databases as Array<Database>) {
    for (const line of await measure(database)) console.log(line)
  }
}

main().then(
  async () => {
    await cleanupAll()
    process.exit(0)
  },
  async (error) => {
    console.error(error instanceof Error ? error.stack ?? error.message : error, (error as any)?.cause)
    await cleanupAll()
    process.exit(1)
  }
)
