import * as Crypto from "node:crypto"
import { DEFAULT_PREFERENCES } from "../src/accounts/Preferences.js"
import { DEFAULT_TIME_SLOTS, INBOX_NAME } from "../src/slots/Slots.js"

/**
 * Seeds a migrated Steady database with direct SQL: 20 users, each with an Inbox, three
 * projects, the default time slots and one API token; 10,000 tasks for the first user and a
 * few for the others, plus a project shared with everyone. Rows are generated in SQL so the
 * same script runs on a PostgreSQL server and on the embedded database.
 */

/** Runs one parameterised statement; both `pg` and PGlite fit this shape. */
export type Exec = (text: string, params?: ReadonlyArray<unknown>) => Promise<ReadonlyArray<Record<string, unknown>>>

export interface SeedOptions {
  readonly users: number
  readonly mainTasks: number
}

export interface Seeded {
  /** The raw Bearer token of the user with the big task list. */
  readonly token: string
  readonly userId: number
  /** Visible tasks of that user (open and done, not trashed), for GET by id. */
  readonly readIds: ReadonlyArray<number>
  /** Open one-off tasks of that user, for PATCH. */
  readonly patchIds: ReadonlyArray<number>
  /** Open recurring tasks (not quotas) of that user, for done. */
  readonly recurringIds: ReadonlyArray<number>
  readonly taskCount: number
}

const sha256 = (text: string) => Crypto.createHash("sha256").update(text, "utf8").digest("hex")

const ZONES = ["Europe/Berlin", "UTC", "America/New_York", "Asia/Tokyo", "Australia/Sydney"]

/**
 * One user's tasks, generated from `i`: a mix of due dates (20% none, the rest from 60 days
 * ago to 180 days ahead, some snoozed), labels, notes, priorities, recurring tasks,
 * reminders and quotas; 30% done, ~4% trashed, ~2% archived.
 * $1 user, $2 project ids (int[]), $3 now, $4 count, $5 title prefix.
 */
const TASKS_SQL = `
INSERT INTO tasks (
  user_id, project_id, title, original_title, short_title, done, done_at, priority, due_at, rrule,
  anchor_time, original_due_at, previous_due_at, horizon, horizon_set_at, deleted_at, archived_at,
  labels, notes, is_reminder, is_tracked, progress_target, progress_current, completion_count,
  snooze_count, last_completed_at, created_at, updated_at)
SELECT $1::int,
  ($2::int[])[1 + (i % cardinality($2::int[]))],
  title, title,
  CASE WHEN i % 3 = 0 THEN left(title, 20) ELSE '' END,
  done,
  CASE WHEN done THEN now_ - make_interval(hours => i % 500) END,
  i % 5,
  due,
  CASE WHEN i % 17 = 0 THEN 'FREQ=WEEKLY;BYDAY=MO,TH' WHEN i % 31 = 0 THEN 'FREQ=DAILY' END,
  CASE WHEN i % 17 = 0 THEN '09:00' END,
  CASE WHEN due IS NULL THEN NULL WHEN i % 11 = 0 THEN due - interval '2 days' ELSE due END,
  CASE WHEN i % 11 = 0 AND due IS NOT NULL THEN due - interval '1 day' END,
  CASE i % 13 WHEN 0 THEN 'week' WHEN 1 THEN 'someday' END,
  CASE WHEN i % 13 IN (0, 1) THEN now_ - interval '3 days' END,
  CASE WHEN i % 23 = 0 THEN now_ - make_interval(hours => i % 300) END,
  CASE WHEN done AND i % 47 = 0 THEN now_ - interval '5 days' END,
  (ARRAY['[]', '["work"]', '["home", "errand"]', '["work", "urgent"]', '[]', '["reading"]',
         '["health"]', '[]', '["work", "meeting", "q3"]'])[1 + i % 9]::jsonb,
  CASE WHEN i % 4 = 0 THEN 'Remember to check the details with the team before Friday. '
         || repeat('Some longer notes about this task. ', 1 + i % 6) ELSE '' END,
  i % 29 = 0,
  i % 97 = 0,
  CASE WHEN i % 53 = 0 THEN 8 ELSE 1 END,
  CASE WHEN i % 53 = 0 THEN i % 8 ELSE 0 END,
  CASE WHEN done THEN 1 + i % 4 ELSE 0 END,
  CASE WHEN i % 11 = 0 THEN 1 + i % 3 ELSE 0 END,
  CASE WHEN done THEN now_ - make_interval(hours => i % 500) END,
  now_ - make_interval(days => 1 + i % 400),
  now_ - make_interval(hours => i % 700)
FROM (
  SELECT i,
    $3::timestamptz AS now_,
    (i::bigint * 7919) % 10 < 3 AS done,
    CASE WHEN i % 5 = 0 THEN NULL
         ELSE date_trunc('hour', $3::timestamptz) + make_interval(days => ((i::bigint * 7919) % 240)::int - 60, hours => i % 24)
    END AS due,
    $5::text || ' ' || (ARRAY['Call', 'Email', 'Buy', 'Fix', 'Review', 'Plan', 'Write', 'Clean', 'Book', 'Read'])[1 + i % 10]
      || ' ' || (ARRAY['the report', 'groceries', 'dentist', 'the garden', 'invoices', 'slides', 'tax forms',
                       'birthday gift', 'the car', 'pull request'])[1 + (i / 10) % 10] || ' #' || i AS title
  FROM generate_series(1, $4::int) AS i
) g`

/**
 * Adds `count` tasks to a user's projects (generated as the seed's are), in batches of 50,000
 * so that no statement holds the embedded database for long.
 */
export const growTasks = async (exec: Exec, userId: number, count: number, prefix: string, now = new Date()) => {
  const projects = await exec(`SELECT id FROM projects WHERE owner_id = $1 ORDER BY id`, [userId])
  for (let done = 0; done < count; done += 50_000) {
    await exec(TASKS_SQL, [userId, projects.map((p) => Number(p.id)), now.toISOString(), Math.min(50_000, count - done), prefix])
  }
}

/**
 * Up to `limit` of a user's tasks of each kind the benchmarks write or read by id, spread
 * over the list: visible (GET), open one-off (PATCH), open recurring (done).
 */
export const sampleIds = async (exec: Exec, userId: number, limit: number) => {
  const ids = async (text: string) => (await exec(text, [userId, limit])).map((r) => Number(r.id))
  return {
    readIds: await ids(
      `SELECT id FROM tasks WHERE user_id = $1 AND deleted_at IS NULL ORDER BY (id::bigint * 7919) % 1009, id LIMIT $2`
    ),
    patchIds: await ids(
      `SELECT id FROM tasks WHERE user_id = $1 AND deleted_at IS NULL AND NOT done AND rrule IS NULL
         AND NOT is_tracked AND progress_target = 1 ORDER BY (id::bigint * 104729) % 1013, id LIMIT $2`
    ),
    recurringIds: await ids(
      `SELECT id FROM tasks WHERE user_id = $1 AND deleted_at IS NULL AND NOT done AND rrule IS NOT NULL
         AND NOT is_tracked AND progress_target = 1 ORDER BY (id::bigint * 104729) % 1013, id LIMIT $2`
    )
  }
}

export const seed = async (exec: Exec, options: SeedOptions, now = new Date()): Promise<Seeded> => {
  const at = now.toISOString()
  let main: { id: number; token: string; projects: Array<number> } | undefined
  const owners: Array<{ id: number; projects: Array<number> }> = []

  for (let n = 0; n < options.users; n++) {
    const [user] = await exec(
      `INSERT INTO users (username, timezone, preferences, created_at) VALUES ($1, $2, $3::jsonb, $4::timestamptz) RETURNING id`,
      [`bench_user_${String(n).padStart(2, "0")}`, ZONES[n % ZONES.length], JSON.stringify(DEFAULT_PREFERENCES), at]
    )
    const userId = Number(user!.id)
    const projects: Array<number> = []
    for (const [index, name] of [INBOX_NAME, "Work", "Home", "Errands"].entries()) {
      const [project] = await exec(
        `INSERT INTO projects (owner_id, name, is_inbox, sort_order, color, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $6::timestamptz) RETURNING id`,
        [userId, name, index === 0, index, ["", "#d33", "#3a3", "#33d"][index], at]
      )
      projects.push(Number(project!.id))
    }
    for (const [index, slot] of DEFAULT_TIME_SLOTS.entries()) {
      await exec(
        `INSERT INTO time_slots (user_id, label, start_time, sort_order, created_at) VALUES ($1, $2, $3, $4, $5::timestamptz)`,
        [userId, slot.label, slot.start_time, index, at]
      )
    }
    const token = Crypto.randomBytes(32).toString("hex")
    await exec(
      `INSERT INTO api_tokens (user_id, name, token_hash, token_preview, created_at) VALUES ($1, 'bench', $2, $3, $4::timestamptz)`,
      [userId, sha256(token), token.slice(-8), at]
    )
    if (n === 0) main = { id: userId, token, projects }
    else owners.push({ id: userId, projects })
  }
  if (main === undefined) throw new Error("seed needs at least one user")

  // A team project shared with everyone, so the list's shared-project branch has rows.
  const sharer = owners[0]
  if (sharer !== undefined) {
    const [shared] = await exec(
      `INSERT INTO projects (owner_id, name, shared, sort_order, created_at, updated_at)
       VALUES ($1, 'Team', true, 10, $2::timestamptz, $2::timestamptz) RETURNING id`,
      [sharer.id, at]
    )
    await exec(TASKS_SQL, [sharer.id, [Number(shared!.id)], at, 40, "Team"])
  }

  await exec(TASKS_SQL, [main.id, main.projects, at, options.mainTasks, "Task"])
  for (const [index, owner] of owners.entries()) {
    await exec(TASKS_SQL, [owner.id, owner.projects, at, 3 + (index * 7) % 13, "Chore"])
  }

  const { readIds, patchIds, recurringIds } = await sampleIds(exec, main.id, 1000)
  const [count] = await exec(`SELECT count(*)::int AS n FROM tasks`)
  return {
    token: main.token,
    userId: main.id,
    readIds,
    patchIds,
    recurringIds,
    taskCount: Number(count!.n)
  }
}
