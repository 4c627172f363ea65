import type * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Option, Schema } from "effect"
import { compactJson, CountRow, IdRow } from "../kernel/Columns.js"
import { ProjectId, UserId } from "../kernel/Ids.js"
import { Project } from "./Project.js"
import { projectJson } from "../pipeline/WireSql.js"

/**
 * Every statement on `projects` outside the mutation pipeline's own writes:
 * the reads a user's projects are listed, checked and locked by, a new user's Inbox,
 * the export's pages, and the probes other tables' statements make (whether a task's
 * project is shared, a user's Inbox, the projects a change names). The pipeline inserts,
 * updates and removes projects through `ProjectsTable` (`Tables.ts`), the table's spec.
 * Statements that read tasks with their project (the shared branch of the task list, the
 * tasks moved to their owners' Inboxes) are the tasks'.
 */

/** Rows of a project's wire JSON (`projectJson`), which both drivers parse. */
const ProjectJsonRow = Schema.Struct({ project: Project })

/** The user's projects (own and shared) or one of them, as the reads below pick them. */
const Visible = Schema.Struct({ userId: UserId, now: Schema.DateFromSelf })

/** The projects the user sees (their own and shared ones), in their order, as wire JSON. */
export const projectsVisibleTo = (sql: SqlClient.SqlClient, userId: UserId, now: Date) =>
  SqlSchema.findAll({
    Request: Visible,
    Result: ProjectJsonRow,
    execute: ({ now, userId }) =>
      sql`SELECT ${projectJson(sql, now)} AS project FROM projects p
          WHERE p.owner_id = ${userId} OR p.shared ORDER BY p.sort_order, lower(p.name), p.name, p.id`
  })({ userId, now }).pipe(Effect.map((rows) => rows.map((r) => r.project)))

/** One project as wire JSON, if the user sees it. */
export const projectVisibleTo = (sql: SqlClient.SqlClient, userId: UserId, id: ProjectId, now: Date) =>
  SqlSchema.findOne({
    Request: Schema.Struct({ ...Visible.fields, id: ProjectId }),
    Result: ProjectJsonRow,
    execute: ({ id, now, userId }) =>
      sql`SELECT ${projectJson(sql, now)} AS project FROM projects p
          WHERE p.id = ${id} AND (p.owner_id = ${userId} OR p.shared)`
  })({ userId, id, now }).pipe(Effect.map(Option.match({ onNone: () => undefined, onSome: (r) => r.project })), Effect.orDie)

/** What changing a project checks: who owns it, whether it is shared or the owner's Inbox, its name. */
export const LockedProject = Schema.Struct({ owner_id: UserId, shared: Schema.Boolean, is_inbox: Schema.Boolean, name: Schema.String })

/** A project locked for a change by its owner, with what the checks need; undefined when gone. */
export const lockProject = (sql: SqlClient.SqlClient, id: ProjectId) =>
  SqlSchema.findOne({
    Request: ProjectId,
    Result: LockedProject,
    execute: (id) => sql`SELECT owner_id, shared, is_inbox, name FROM projects WHERE id = ${id} FOR UPDATE`
  })(id).pipe(Effect.map(Option.getOrUndefined), Effect.orDie)

/** Where a new project of the owner's goes by default: after their last one. */
export const nextSortOrder = (sql: SqlClient.SqlClient, ownerId: UserId) =>
  SqlSchema.single({
    Request: UserId,
    Result: CountRow,
    execute: (ownerId) => sql`SELECT (COALESCE(max(sort_order), 0) + 1)::int AS n FROM projects WHERE owner_id = ${ownerId}`
  })(ownerId).pipe(Effect.map((row) => row.n), Effect.orDie)

/** The project, if the user may file tasks in it: their own or a shared one. */
export const usableProject = (sql: SqlClient.SqlClient, userId: UserId, projectId: ProjectId) =>
  SqlSchema.findOne({
    Request: Schema.Struct({ userId: UserId, projectId: ProjectId }),
    Result: Schema.Struct({ id: ProjectId }),
    execute: ({ projectId, userId }) =>
      sql`SELECT id FROM projects WHERE id = ${projectId} AND (owner_id = ${userId} OR shared)`
  })({ userId, projectId }).pipe(Effect.map(Option.match({ onNone: () => undefined, onSome: (r) => r.id })), Effect.orDie)

/** What decides who can see a project (`canSeeProject`). */
export const ProjectAccessRow = Schema.Struct({ owner_id: UserId, shared: Schema.Boolean })

/**
 * Who can see a project, read with a share lock so it cannot be unshared before the
 * transaction that files a task in it commits.
 */
export const projectAccess = (sql: SqlClient.SqlClient, projectId: number) =>
  SqlSchema.findOne({
    Request: Schema.Int,
    Result: ProjectAccessRow,
    execute: (projectId) => sql`SELECT owner_id, shared FROM projects WHERE id = ${projectId} FOR SHARE`
  })(projectId).pipe(Effect.map(Option.getOrUndefined), Effect.orDie)

/** The user's Inbox (every user has one, made with the user). */
export const inboxId = (sql: SqlClient.SqlClient, userId: UserId) =>
  SqlSchema.single({
    Request: UserId,
    Result: IdRow,
    execute: (userId) => sql`SELECT id FROM projects WHERE owner_id = ${userId} AND is_inbox`
  })(userId).pipe(Effect.map((row) => row.id), Effect.orDie)

/** The Inbox of the user `owner` names (a parameter or a column of the caller's row), as a scalar subquery. */
export const inboxOf = (sql: SqlClient.SqlClient, owner: Fragment): Fragment =>
  sql`(SELECT p.id FROM projects p WHERE p.owner_id = ${owner} AND p.is_inbox)`

/** A new user's Inbox (written outside the pipeline: a new user has nothing to undo). */
export const insertInbox = (sql: SqlClient.SqlClient, ownerId: UserId, name: string, at: string) =>
  sql`INSERT INTO projects (owner_id, name, is_inbox, sort_order, created_at, updated_at)
          VALUES (${ownerId}, ${name}, true, 0, ${at}::timestamptz, ${at}::timestamptz)`

/**
 * The owner's private project names for the AI's prompt: the first `limit` in their order.
 * Shared ones are left out, so enrichment never moves a task where other users would read
 * what the owner's private context made of it.
 */
export const privateProjectNames = (sql: SqlClient.SqlClient, ownerId: UserId, limit: number) =>
  SqlSchema.findAll({
    Request: Schema.Struct({ ownerId: UserId, limit: Schema.Int }),
    Result: Schema.Struct({ id: Schema.Int, name: Schema.String }),
    execute: ({ limit, ownerId }) =>
      sql`SELECT id, name FROM projects WHERE owner_id = ${ownerId} AND NOT shared ORDER BY sort_order, name, id LIMIT ${limit}`
  })({ ownerId, limit }).pipe(Effect.orDie)

/**
 * One page of the user's own projects for the export, by id after `after`, each as its wire
 * JSON text, compact (`compactJson`). A user has few projects, so the page is decoded like any other read.
 */
export const exportPage = (sql: SqlClient.SqlClient, userId: UserId, after: number, limit: number, now: Date) =>
  SqlSchema.findAll({
    Request: Schema.Struct({ userId: UserId, after: Schema.Int, limit: Schema.Int, now: Schema.DateFromSelf }),
    Result: Schema.Struct({ id: Schema.Int, json: Schema.String }),
    execute: ({ after, limit, now, userId }) =>
      sql`SELECT p.id, ${projectJson(sql, now)}::text AS json
            FROM projects p WHERE p.owner_id = ${userId} AND p.id > ${after} ORDER BY p.id LIMIT ${limit}`
  })({ userId, after, limit, now }).pipe(Effect.map((rows) => rows.map((row) => ({ id: row.id, json: compactJson(row.json) }))))

/**
 * Whether the project `projectId` names (a column of the caller's row) is shared, looked up
 * by key for that row: an `IN (shared projects)` lets a plan made on a small database hash
 * every shared project on each call, for good. False without a project.
 */
export const inSharedProject = (sql: SqlClient.SqlClient, projectId: string): Fragment =>
  sql`COALESCE((SELECT sp.shared FROM projects sp WHERE sp.id = ${sql.literal(projectId)}), false)`

/** Whether any project `ids` picks (an `= ANY (…)` or `IN (…)` test of `sp.id`) is shared. */
export const anyShared = (sql: SqlClient.SqlClient, ids: Fragment): Fragment =>
  sql`EXISTS (SELECT 1 FROM projects sp WHERE sp.id ${ids} AND sp.shared)`

/** The ids of the shared projects, as a subquery. */
export const sharedProjectIds = (sql: SqlClient.SqlClient): Fragment => sql`(SELECT id FROM projects WHERE shared)`

/**
 * Probes by key for a LATERAL join, one index probe per row (OFFSET 0); a plain join let a
 * generic plan made on a small database hash-join a scan of the table on each read.
 * `id` (and `kind`) are the caller's columns; `columns`, what is read of the
 * project `x`.
 */
export const projectSharedBy = (sql: SqlClient.SqlClient, id: string): Fragment =>
  sql`(SELECT x.shared FROM projects x WHERE x.id = ${sql.literal(id)} OFFSET 0)`

/** The project a change names (see `projectSharedBy`). */
export const projectNamedBy = (sql: SqlClient.SqlClient, columns: "x.*" | "x.owner_id, x.shared", kind: string, id: string): Fragment =>
  sql`(SELECT ${sql.literal(columns)} FROM projects x WHERE ${sql.literal(kind)} = 'project' AND x.id = ${sql.literal(id)} OFFSET 0)`
