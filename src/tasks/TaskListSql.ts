import type * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Schema } from "effect"
import { INSIGHT_SIGNALS } from "../ai/AiAnswers.js"
import { compactJson, decodeOneBody, IsoText } from "../kernel/Columns.js"
import type { UserId } from "../kernel/Ids.js"
import { type Page, pageOf } from "../kernel/QueryParams.js"
import { Task, type TaskListQuery, Timestamp } from "./Task.js"
import type { TriageTask } from "../triage/Triage.js"
import { sharedProjectIds } from "../projects/ProjectsTable.js"
import { overdueOf, TaskWire } from "./TasksTable.js"
import { isNotQuota, isOpen, isPastDue, isQuota, wireArray } from "../pipeline/WireSql.js"

/**
 * Statements on `tasks` that list a user's tasks: the task list, the
 * counts and the trash, the calendar feed, the export's pages, the process (triage) and
 * review screens, the reminders screen and the quota list, and the tasks the AI features
 * put in their prompts. Single tasks and the tasks an action locks are `TasksTable`'s.
 */

/** The one row of a statement that renders its whole answer as JSON text (`…Json` reads). */

/**
 * `{data: {tasks, count}}` for a page of stored wire texts, compact (no spacing, as
 * `JSON.stringify` writes); `tasks` is the page's array text (`wireArray`).
 */
const pageBody = (sql: SqlClient.SqlClient, tasks: Fragment): Fragment =>
  sql`'{"data":{"tasks":' || ${tasks} || ',"count":' || count(*) || '}}'`

const filters = (sql: SqlClient.SqlClient, query: TaskListQuery, userId: UserId, now: Date): Array<Fragment> => {
  const out: Array<Fragment> = []
  const trashed = query.trashed ?? false
  out.push(trashed ? sql`t.deleted_at IS NOT NULL` : sql`t.deleted_at IS NULL`)
  // done defaults to false and archived to "not archived", unless the caller asks
  // for the trash, the archive or done tasks.
  const done = query.done ?? (query.archived === true || trashed ? undefined : false)
  if (done !== undefined) out.push(done ? sql`t.done` : sql`NOT t.done`)
  const archived = query.archived ?? (done === true || trashed ? undefined : false)
  if (archived !== undefined) out.push(archived ? sql`t.archived_at IS NOT NULL` : sql`t.archived_at IS NULL`)
  const project = query.project_id ?? query.project
  if (project !== undefined) out.push(sql`t.project_id = ${project}`)
  if (query.label !== undefined) out.push(sql`t.labels @> jsonb_build_array(${query.label}::text)`)
  if (query.search !== undefined && query.search.trim() !== "") {
    const pattern = `%${query.search.trim().replace(/[\\%_]/g, (c) => `\\${c}`)}%`
    out.push(sql`(t.title ILIKE ${pattern} OR t.notes ILIKE ${pattern})`)
  }
  const quota = isQuota(sql)
  if (query.kind === "quota") out.push(quota)
  if (query.kind === "reminder") out.push(sql`t.is_reminder AND NOT ${quota}`)
  if (query.kind === "task") out.push(sql`NOT t.is_reminder AND NOT ${quota}`)
  if (query.recurring !== undefined) {
    out.push(query.recurring ? sql`(t.rrule IS NOT NULL AND NOT ${quota})` : sql`(t.rrule IS NULL OR ${quota})`)
  }
  if (query.one_off !== undefined) {
    out.push(query.one_off ? sql`(t.rrule IS NULL AND NOT ${quota})` : sql`(t.rrule IS NOT NULL OR ${quota})`)
  }
  if (query.overdue === true) out.push(overdueOf(sql, userId, now))
  // IS NOT TRUE, not NOT: the predicate is NULL for a task without a due date.
  if (query.overdue === false) out.push(sql`(${overdueOf(sql, userId, now)}) IS NOT TRUE`)
  return out
}

/**
 * Always true (project_id is NOT NULL); stated only by the shared branch below, so that only it
 * can use `tasks_open_in_project_by_due`, whose predicate ends with this clause (migration 0026).
 */
const sharedWalk = (sql: SqlClient.SqlClient): Fragment => sql`num_nulls(t.project_id) = 0`

/**
 * A page of the user's tasks as of `now`, as `{data: {tasks, count}}` JSON text. Own tasks
 * and shared-project tasks are read by two index-ordered branches, each limited, then
 * merged; a single OR would make PostgreSQL sort every open task of the user on each
 * request. The shared branch is driven from the shared projects, one index walk per project
 * (`LATERAL ... LIMIT`), so it reads nothing when no project is shared and never walks other
 * users' tasks in due order looking for shared ones — the plan an unanalyzed database
 * picked for a plain `project_id IN (...)`. The rows carry their stored wire text: joining
 * the page back to `tasks` by id instead lets the planner pick a hash join over the whole
 * table for pages of a few hundred.
 */
export const taskPageJson = (sql: SqlClient.SqlClient, userId: UserId, query: TaskListQuery, now: Date) => {
  const { limit, offset } = pageOf(query)
  const where = sql.and(filters(sql, query, userId, now))
  const window = limit + offset
  const shared = query.overdue === true
    ? sql``
    : sql`UNION ALL (SELECT s.task, s.due_at, s.id FROM projects p CROSS JOIN LATERAL (
               SELECT t.wire_text AS task, t.due_at, t.id FROM tasks t
               WHERE t.project_id = p.id AND t.user_id <> ${userId} AND ${where} AND ${sharedWalk(sql)}
               ORDER BY t.due_at, t.id LIMIT ${window}) s
             WHERE p.shared
             ORDER BY s.due_at, s.id LIMIT ${window})`
  return sql`
        WITH page AS (
          SELECT * FROM (
            (SELECT t.wire_text AS task, t.due_at, t.id FROM tasks t WHERE t.user_id = ${userId} AND ${where}
             ORDER BY t.due_at, t.id LIMIT ${window})
            ${shared}
          ) merged ORDER BY due_at, id LIMIT ${limit} OFFSET ${offset}
        )
        SELECT ${pageBody(sql, wireArray(sql, "page.task", "page.due_at, page.id"))} AS body FROM page`.pipe(
    Effect.flatMap(decodeOneBody),
    Effect.map(([row]) => row.body),
    Effect.orDie
  )
}

/** The counts as the statement casts them (`::int`), in the order GET /api/tasks/counts sends them. */
const decodeCounts = Schema.decodeUnknown(Schema.Tuple(Schema.Struct({ total: Schema.Int, overdue: Schema.Int, today: Schema.Int })))

/** The user's open tasks, overdue ones, and those due in `[dayStart, dayEnd)` (the user's local day). */
export const countsOf = (sql: SqlClient.SqlClient, userId: UserId, now: Date, dayStart: string, dayEnd: string) =>
  // Over the user's own open tasks, overdue is `isPastDue` (`overdueOf` less what the WHERE
  // already says). Every column the statement names is then in `tasks_open_by_due`, whose
  // predicate is the WHERE's: an index-only scan, ~40 bytes a task instead of its ~1.5 KB row
  // (migration 0037).
  sql`
        SELECT count(*)::int AS total,
               (count(*) FILTER (WHERE ${isPastDue(sql, now)}))::int AS overdue,
               (count(*) FILTER (WHERE t.due_at >= ${dayStart}::timestamptz AND t.due_at < ${dayEnd}::timestamptz))::int AS today
        FROM tasks t
        WHERE t.user_id = ${userId} AND ${isOpen(sql)}`.pipe(
    Effect.flatMap(decodeCounts),
    Effect.map(([row]) => row),
    Effect.orDie
  )

/** The user's trash, most recently trashed first, one page of it, as `{data: {tasks, count}}` JSON text. */
export const trashPageJson = (sql: SqlClient.SqlClient, userId: UserId, page: Page) =>
  sql`
        WITH trash AS (
          SELECT t.wire_text AS task, t.deleted_at, t.id FROM tasks t
          WHERE t.user_id = ${userId} AND t.deleted_at IS NOT NULL
          ORDER BY t.deleted_at DESC, t.id DESC LIMIT ${page.limit} OFFSET ${page.offset}
        )
        SELECT ${pageBody(sql, wireArray(sql, "trash.task", "trash.deleted_at DESC, trash.id DESC"))} AS body FROM trash`.pipe(
    Effect.flatMap(decodeOneBody),
    Effect.map(([row]) => row.body),
    Effect.orDie
  )

/**
 * The calendar feed's tasks as one JSON text of arrays (see `CalendarFeeds`): open tasks
 * with a due date that the user can see (their own and those in shared projects, as the task
 * list), quotas left out, soonest due first, at most `limit`. Two index-ordered branches,
 * each limited, as the task list does.
 */
export const feedJson = (sql: SqlClient.SqlClient, userId: UserId, limit: number) => {
  const dated = sql`${isOpen(sql)} AND t.due_at IS NOT NULL AND ${isNotQuota(sql)}`
  return sql`
        SELECT COALESCE(json_agg(json_build_array(
          t.id, t.title, t.notes, t.priority, steady_iso(t.due_at), steady_iso(t.series_start_at),
          steady_iso(t.created_at), steady_iso(t.updated_at), t.rrule, t.anchor_time, t.labels
        ) ORDER BY t.due_at, t.id), '[]')::text AS body
        FROM (
          SELECT * FROM (
            (SELECT t.* FROM tasks t WHERE t.user_id = ${userId} AND ${dated}
             ORDER BY t.due_at, t.id LIMIT ${limit})
            UNION ALL
            (SELECT t.* FROM tasks t
             WHERE t.user_id <> ${userId} AND t.project_id IN ${sharedProjectIds(sql)} AND ${dated}
             ORDER BY t.due_at, t.id LIMIT ${limit})
          ) merged ORDER BY merged.due_at, merged.id LIMIT ${limit}
        ) t`.pipe(
    Effect.flatMap(decodeOneBody),
    Effect.map(([row]) => row.body),
    Effect.orDie
  )
}

/** An export page's rows: each task's wire JSON text, handed on as it is (never parsed). */
const decodeExportRows = Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.Int, json: Schema.String })))

/** One page of the user's own tasks for the export, by id after `after`. */
export const exportPage = (sql: SqlClient.SqlClient, userId: UserId, after: number, limit: number) =>
  // The inlinable text form: planned once for a whole page, it renders faster than a
  // PL/pgSQL call per row.
  Effect.flatMap(
    sql`SELECT t.id, steady_task_wire_text(t) AS json FROM tasks t
            WHERE t.user_id = ${userId} AND t.id > ${after} ORDER BY t.id LIMIT ${limit}`,
    decodeExportRows
  )

/** What the process screen looks at: the user's own open tasks, never reminders or quotas. */
const triageable = (sql: SqlClient.SqlClient, userId: UserId) =>
  sql`t.user_id = ${userId} AND ${isOpen(sql)} AND NOT t.is_reminder AND ${isNotQuota(sql)}`

const decodeInbox = Schema.decodeUnknown(Schema.Array(Schema.Struct({ tasks: Schema.String })))

/** The process screen's Inbox: the wire texts of its tasks as one JSON array text, oldest first. */
export const triageInboxJson = (sql: SqlClient.SqlClient, userId: UserId, inboxId: number) =>
  Effect.orDie(Effect.flatMap(
    sql`
          SELECT ${wireArray(sql, "t.wire_text", "t.created_at, t.id")} AS tasks FROM tasks t
          WHERE ${triageable(sql, userId)} AND t.project_id = ${inboxId}`,
    decodeInbox
  )).pipe(Effect.map((rows) => rows[0]?.tasks))

/** What the process screen's rules read of a task (`TriageTask`), timestamps as `steady_iso` text. */
const TriageRow: Schema.Schema<TriageTask> = Schema.Struct({
  id: Schema.Int,
  horizon: Schema.NullOr(Schema.String),
  horizon_set_at: Schema.NullOr(IsoText),
  created_at: IsoText,
  target_at: Schema.NullOr(IsoText),
  target_auto: Schema.Boolean,
  segment_targeted_at: Schema.NullOr(IsoText),
  deadline_at: Schema.NullOr(IsoText),
  priority: Schema.Int
})
const decodeTriage = Schema.decodeUnknown(Schema.Array(TriageRow))

/** The non-recurring tasks the process screen's rules look at. */
export const triageCandidates = (sql: SqlClient.SqlClient, userId: UserId) =>
  Effect.orDie(Effect.flatMap(
    sql`
          SELECT t.id, t.horizon, steady_iso(t.horizon_set_at) AS horizon_set_at, steady_iso(t.created_at) AS created_at,
                 steady_iso(t.target_at) AS target_at, t.target_auto, steady_iso(t.segment_targeted_at) AS segment_targeted_at,
                 steady_iso(t.deadline_at) AS deadline_at, t.priority
          FROM tasks t WHERE ${triageable(sql, userId)} AND t.rrule IS NULL ORDER BY t.id`,
    decodeTriage
  ))

const decodeWireTexts = Schema.decodeUnknown(Schema.Array(Schema.Struct({ id: Schema.Int, task: Schema.String })))

/**
 * Wire JSON texts by id. One array parameter, however many ids: growth can hold most of a
 * large list's tasks, past the 65,535 parameters a statement may have.
 */
export const tasksWireJson = (sql: SqlClient.SqlClient, ids: ReadonlyArray<number>) =>
  sql`
            SELECT t.id, steady_task_wire_text(t) AS task FROM tasks t WHERE t.id = ANY(${`{${ids.join(",")}}`}::int[])`.pipe(
    Effect.flatMap(decodeWireTexts),
    Effect.map((rows) => new Map(rows.map((r) => [r.id, r.task]))),
    Effect.orDie
  )

/** A task the review lists, in the order its answer shows the fields. */
export const ReviewRow = Schema.Struct({
  id: Schema.Int,
  title: Schema.String,
  due_at: IsoText,
  priority: Schema.Int,
  rrule: Schema.NullOr(Schema.String),
  labels: Schema.Array(Schema.String),
  overdue: Schema.Boolean
})
export type ReviewRow = typeof ReviewRow.Type
const decodeReview = Schema.decodeUnknown(Schema.Array(ReviewRow))

/** The review's tasks: the user's own open tasks (not reminders or quotas) due before `horizon`, in due order. */
export const reviewRows = (sql: SqlClient.SqlClient, userId: UserId, now: Date, horizon: string) =>
  Effect.orDie(Effect.flatMap(
    sql`
          SELECT t.id, t.title, steady_iso(t.due_at) AS due_at, t.priority, t.rrule, t.labels,
                 (${overdueOf(sql, userId, now)}) AS overdue
          FROM tasks t
          WHERE t.user_id = ${userId} AND ${isOpen(sql)} AND NOT t.is_reminder AND ${isNotQuota(sql)}
            AND t.due_at < ${horizon}::timestamptz
          ORDER BY t.due_at, t.id`,
    decodeReview
  ))

const decodeReminders = Schema.decodeUnknown(Schema.Array(Schema.Struct({ task: TaskWire })))

/** The reminders screen: the user's open reminders due before `dayEnd` (or undated), as wire objects. */
export const remindersDueBy = (sql: SqlClient.SqlClient, userId: UserId, dayEnd: Date) =>
  Effect.orDie(Effect.flatMap(
    sql`
          SELECT steady_task_json(t) AS task FROM tasks t
          WHERE t.user_id = ${userId} AND t.is_reminder AND ${isOpen(sql)} AND ${isNotQuota(sql)}
            AND (t.due_at IS NULL OR t.due_at < ${dayEnd.toISOString()}::timestamptz)
          ORDER BY t.due_at NULLS LAST, t.id`,
    decodeReminders
  ))

/** A quota as the prompts read it: its wire shape, with its period's end. */
const QuotaWireShape = Schema.Struct({ ...Task.fields, progress_period_end: Schema.NullOr(Timestamp) })
export type QuotaWire = typeof QuotaWireShape.Type
const isQuotaWire = Schema.is(QuotaWireShape)
/** Checked where it stands, as `TaskWire` is: the prompts read a few of its fields, nothing needs rebuilding. */
const QuotaWire = Schema.declare((u: unknown): u is QuotaWire => isQuotaWire(u), { identifier: "QuotaWire" })
const decodeQuotas = Schema.decodeUnknown(Schema.Array(Schema.Struct({ task: QuotaWire })))

/** The user's open quotas for the reminders screen's prompts, by id. */
export const quotasForPrompts = (sql: SqlClient.SqlClient, userId: UserId) =>
  Effect.orDie(Effect.flatMap(
    sql`
              SELECT steady_task_json(t) || jsonb_build_object('progress_period_end', steady_iso(t.progress_period_end)) AS task
              FROM tasks t
              WHERE t.user_id = ${userId} AND ${isQuota(sql)} AND ${isOpen(sql)}
              ORDER BY t.id`,
    decodeQuotas
  ))

/** GET /api/quotas as JSON text: the user's open quotas; a period that ended but is not rolled yet counts 0. */
export const quotaListJson = (sql: SqlClient.SqlClient, userId: UserId, now: Date) =>
  Effect.orDie(Effect.flatMap(
    sql`
          WITH q AS (
            SELECT t AS task, t.id, t.progress_period_end FROM tasks t
            WHERE t.user_id = ${userId} AND ${isQuota(sql)} AND ${isOpen(sql)}
          )
          SELECT json_build_object('data', json_build_object(
            'quotas', COALESCE(json_agg(
              CASE WHEN q.progress_period_end <= ${now.toISOString()}::timestamptz
                THEN steady_task_json(q.task) || jsonb_build_object('progress_current', 0)
                ELSE steady_task_json(q.task) END ORDER BY q.id), '[]'::json),
            'total', count(*)::int,
            'has_any', count(*) > 0))::text AS body FROM q`,
    decodeOneBody
  )).pipe(Effect.map(([row]) => compactJson(row.body)))

/** A task as the AI prompts list it. */
export const TaskLine = Schema.Struct({
  id: Schema.Int,
  title: Schema.String,
  priority: Schema.Int,
  due_at: Schema.NullOr(IsoText),
  created_at: IsoText
})
export type TaskLine = typeof TaskLine.Type
const decodeLines = Schema.decodeUnknown(Schema.Array(TaskLine))

/** The user's open tasks for a prompt, soonest due first, then the most urgent. */
export const openTaskLines = (sql: SqlClient.SqlClient, userId: UserId, limit: number) =>
  sql`
        SELECT id, title, priority, steady_iso(due_at) AS due_at, steady_iso(created_at) AS created_at FROM tasks
        WHERE user_id = ${userId} AND ${isOpen(sql, "")}
        ORDER BY due_at NULLS LAST, priority DESC, id LIMIT ${limit}`.pipe(Effect.flatMap(decodeLines), Effect.orDie)

/** What's next's candidates: open, not quotas, undated or due by `dueBy` (overdue included). */
export const whatsNextCandidates = (sql: SqlClient.SqlClient, userId: UserId, dueBy: string, limit: number) =>
  sql`
        SELECT id, title, priority, steady_iso(due_at) AS due_at, steady_iso(created_at) AS created_at FROM tasks
        WHERE user_id = ${userId} AND ${isOpen(sql, "")} AND ${isNotQuota(sql, "")}
          AND (due_at IS NULL OR due_at <= ${dueBy}::timestamptz)
        ORDER BY due_at NULLS LAST, priority DESC, id LIMIT ${limit}`.pipe(Effect.flatMap(decodeLines), Effect.orDie)

/** A task an insights session scores (an `InsightTask` with what its prompt shows). */
const InsightCandidate = Schema.Struct({
  id: Schema.Int,
  title: Schema.String,
  priority: Schema.Int,
  due_at: Schema.NullOr(IsoText),
  ageDays: Schema.Int
})
export type InsightCandidate = typeof InsightCandidate.Type
const decodeCandidates = Schema.decodeUnknown(Schema.Array(InsightCandidate))

/** The user's open tasks an insights session scores, oldest first, with their age in days at `now`. */
export const insightCandidates = (sql: SqlClient.SqlClient, userId: UserId, now: Date, limit: number) =>
  sql`
        SELECT id, title, priority, steady_iso(due_at) AS due_at,
               floor(extract(epoch FROM (${now.toISOString()}::timestamptz - created_at)) / 86400)::int AS "ageDays"
        FROM tasks
        WHERE user_id = ${userId} AND ${isOpen(sql, "")}
        ORDER BY created_at, id LIMIT ${limit}`.pipe(Effect.flatMap(decodeCandidates), Effect.orDie)

/** A stored insight as GET /api/ai/insights/results lists it; `signals` is the checked list it was stored from. */
const InsightRow = Schema.Struct({
  task_id: Schema.Int,
  title: Schema.String,
  score: Schema.Int,
  commentary: Schema.String,
  signals: Schema.Array(Schema.Literal(...INSIGHT_SIGNALS))
})
const decodeInsights = Schema.decodeUnknown(Schema.Array(InsightRow))

/** An insights session's results, highest score first, with their tasks' titles ('' for a task gone since). */
export const insightResults = (sql: SqlClient.SqlClient, sessionId: string) =>
  sql`
          SELECT r.task_id, COALESCE(t.title, '') AS title, r.score, r.commentary, r.signals
          FROM ai_insight_results r LEFT JOIN tasks t ON t.id = r.task_id
          WHERE r.session_id = ${sessionId} ORDER BY r.score DESC, r.task_id`.pipe(Effect.flatMap(decodeInsights), Effect.orDie)
