import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Either, Layer, Schema } from "effect"
import {
  calendarKeyOwner,
  existingTokenIds,
  insertToken,
  liveSessionIds,
  putCalendarKey,
  tokenByDigest,
  tokenCount,
  tokensOf
} from "../src/accounts/CredentialsTable.js"
import {
  aiContextOf,
  allUsers,
  calendarOf,
  insertUser,
  preferencesOf,
  userById,
  userByName,
  userWithAiContext
} from "../src/accounts/UsersTable.js"
import { DEFAULT_PREFERENCES } from "../src/accounts/Preferences.js"
import {
  insertSession,
  latestCompleteSession,
  recentActivity,
  sessionOf,
  storedWhatsNext,
  storeWhatsNext,
  takeToken,
  tokensLeft,
  insertActivity,
  finishSession
} from "../src/ai/AiTables.js"
import { ChangeFeed } from "../src/changes/ChangeFeed.js"
import { Int8, IdRow } from "../src/kernel/Columns.js"
import { ProjectId, TaskId } from "../src/kernel/Ids.js"
import { completionsPageJson, exportPage as completionsExportPage, insertSwept, latestCompletions } from "../src/lifecycle/CompletionsTable.js"
import { addToDays, daysBetween, oneDay, sumOfDays } from "../src/pipeline/DailyStatsTable.js"
import { statementOf } from "../src/sql/SqlText.js"
import { Idempotency } from "../src/pipeline/Idempotency.js"
import {
  countsOf,
  exportPage as tasksExportPage,
  quotaListJson,
  remindersDueBy,
  taskPageJson,
  tasksWireJson,
  trashPageJson
} from "../src/tasks/TaskListSql.js"
import {
  isVisibleTo,
  liveTasksIn,
  lockOpenReminders,
  lockVisible,
  lockWithInbox,
  ownerOf,
  taskJson,
  taskWire,
  taskWithCalendar
} from "../src/tasks/TasksTable.js"
import {
  exportPage,
  inboxId,
  insertInbox,
  lockProject,
  nextSortOrder,
  projectAccess,
  projectsVisibleTo,
  projectVisibleTo,
  usableProject
} from "../src/projects/ProjectsTable.js"
import { insertSlot, ownsSlot, slotById, slotsOf } from "../src/slots/TimeSlotsTable.js"
import { DatabaseMaintenance } from "../src/system/DatabaseMaintenance.js"
import { keepSession, storedSession, takeSession } from "../src/triage/ReviewSessionsTable.js"
import { entryCounts, lockNextEntry, recentEntries, writersAfter } from "../src/undo/UndoLog.js"
import { attemptLog, WebhookDeliveries } from "../src/webhooks/WebhookDeliveries.js"
import { deliveryTarget, insertWebhook, webhookCount, webhookOf, webhooksOf } from "../src/webhooks/WebhooksTable.js"
import { databaseKind } from "./support/database.js"
import { migratedDatabase } from "./support/migrated.js"

/*
 * Repositories decode the rows they read with the row's schema. The two drivers hand back
 * some column types differently (`bigint` as text from `pg`, as a number from PGlite), so each
 * repository read runs here on real rows of this file's database (embedded, or PostgreSQL
 * when DATABASE_URL is set): a schema that did not fit a driver's values would fail here,
 * not as a 500 in production.
 */

const AT = "2031-03-04T05:06:07.089Z"

const services = Layer.mergeAll(WebhookDeliveries.Default, ChangeFeed.Default, DatabaseMaintenance.Default, Idempotency.Default).pipe(
  Layer.provideMerge(migratedDatabase)
)

/** A new user with an Inbox, as the accounts create them. */
const newUser = (name: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const user = yield* insertUser(sql, { username: name, timezone: "Europe/Paris", preferences: DEFAULT_PREFERENCES, at: AT })
    yield* insertInbox(sql, user.id, "Inbox", AT)
    return user
  })

describe(`rows decoded where they are read (${databaseKind()})`, () => {
  it.layer(services, { timeout: Duration.minutes(2) })((it) => {
    it.effect("a bigint column decodes as a number from either driver, and one beyond 2^53 is refused", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql`SELECT 9007199254740991::bigint AS big, 3::bigint AS small,
          (SELECT count(*) FROM (VALUES (1), (2)) v) AS n`
        expect(yield* Schema.decodeUnknown(Schema.Array(Schema.Struct({ big: Int8, small: Int8, n: Int8 })))(rows)).toEqual([
          { big: 9007199254740991, small: 3, n: 2 }
        ])
        const beyond = yield* sql`SELECT 9007199254740993::bigint AS big`
        expect(Either.isLeft(Schema.decodeUnknownEither(Schema.Array(Schema.Struct({ big: Int8 })))(beyond))).toBe(true)
      }))

    it.effect("users, preferences and credentials", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const ada = yield* newUser("ada")
        expect(ada).toEqual({ id: ada.id, username: "ada", timezone: "Europe/Paris" })
        expect(yield* userByName(sql, "ADA")).toEqual(ada)
        expect(yield* userById(sql, ada.id)).toEqual(ada)
        expect(yield* userById(sql, 2_000_000_000)).toBeUndefined()
        expect((yield* allUsers(sql)).find((u) => u.id === ada.id)).toEqual({ ...ada, created_at: AT })
        expect(yield* preferencesOf(sql, ada.id)).toEqual({ preferences: DEFAULT_PREFERENCES, timezone: "Europe/Paris" })
        expect(yield* calendarOf(sql, ada.id)).toEqual({ timezone: "Europe/Paris", week_start: "sunday" })
        expect(yield* aiContextOf(sql, ada.id)).toBe("")
        expect(yield* userWithAiContext(sql, ada.id)).toEqual({ ...ada, context: "" })

        const token = yield* insertToken(sql, { userId: ada.id, name: "cli", digest: "d1", preview: "abcdefgh", at: AT })
        expect(token).toEqual({ id: token.id, name: "cli", token_preview: "abcdefgh", created_at: AT })
        expect(yield* tokenCount(sql, ada.id)).toBe(1)
        expect(yield* tokensOf(sql, ada.id)).toEqual([token])
        expect(yield* tokenByDigest(sql, "d1")).toEqual({ ...ada, credential_id: token.id, digest: "d1" })
        expect(yield* tokenByDigest(sql, "nope")).toBeUndefined()
        expect(yield* existingTokenIds(sql, [token.id, token.id + 1000])).toEqual(new Set([token.id]))
        expect(yield* liveSessionIds(sql, [1, 2], AT)).toEqual(new Set())
        expect(yield* putCalendarKey(sql, ada.id, "k1", AT)).toBe(AT)
        expect(yield* calendarKeyOwner(sql, "k1")).toEqual(ada)
      }))

    it.effect("projects and time slots", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const bob = yield* newUser("bob")
        const inbox = yield* inboxId(sql, bob.id)
        const now = new Date(AT)
        const [listed] = yield* projectsVisibleTo(sql, bob.id, now)
        expect(listed).toMatchObject({ id: inbox, name: "Inbox", owner_id: bob.id, is_inbox: true, active_count: 0, created_at: AT })
        expect(yield* projectVisibleTo(sql, bob.id, ProjectId.make(listed!.id), now)).toEqual(listed)
        expect(yield* nextSortOrder(sql, bob.id)).toBe(1)
        expect(yield* usableProject(sql, bob.id, ProjectId.make(listed!.id))).toBe(inbox)
        expect(yield* projectAccess(sql, inbox)).toEqual({ owner_id: bob.id, shared: false })
        expect(yield* sql.withTransaction(lockProject(sql, ProjectId.make(listed!.id)))).toEqual({
          owner_id: bob.id,
          shared: false,
          is_inbox: true,
          name: "Inbox"
        })
        const [page] = yield* exportPage(sql, bob.id, 0, 10, now)
        expect(JSON.parse(page!.json)).toEqual(listed)

        yield* insertSlot(sql, { user_id: bob.id, label: "Morning", start_time: "08:00", sort_order: 0, created_at: AT })
        const [slot] = yield* slotsOf(sql, bob.id)
        expect(slot).toEqual({ id: slot!.id, user_id: bob.id, label: "Morning", start_time: "08:00", sort_order: 0, created_at: AT })
        expect(yield* slotById(sql, slot!.id)).toEqual(slot)
        expect(yield* ownsSlot(sql, bob.id, slot!.id)).toBe(true)
      }))

    it.effect("webhooks, their attempts and the outbox mark (a bigint max)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const deliveries = yield* WebhookDeliveries
        const cy = yield* newUser("cy")
        const id = yield* insertWebhook(sql, { userId: cy.id, url: "https://example.com/h", events: ["task.created"], secret: "s", at: AT })
        const hook = { id, user_id: cy.id, url: "https://example.com/h", events: ["task.created"], active: true, created_at: AT, updated_at: AT }
        expect(yield* webhookOf(sql, cy.id, id)).toEqual(hook)
        expect(yield* webhooksOf(sql, cy.id)).toEqual([hook])
        expect(yield* webhookCount(sql, cy.id)).toBe(1)
        expect(yield* deliveryTarget(sql, id)).toEqual({ url: "https://example.com/h", secret: "s", active: true })
        yield* sql`INSERT INTO webhook_attempts (webhook_id, delivery_id, event, payload, status_code, error, attempt, success, duration_ms, created_at)
          VALUES (${id}, 'd-1', 'task.created', '{"a":[1,"x",null]}'::jsonb, NULL, 'refused', 1, false, 12, ${AT}::timestamptz)`
        const [attempt] = yield* attemptLog(sql, id, 10)
        expect(attempt).toMatchObject({ webhook_id: id, payload: { a: [1, "x", null] }, status_code: null, success: false, created_at: AT })

        const before = yield* deliveries.outboxMark
        yield* sql`INSERT INTO outbox_events (user_id, event, task_id, payload, occurred_at)
          VALUES (${cy.id}, 'task.created', 1, '{}', ${AT}::timestamptz)`
        const mark = yield* deliveries.outboxMark
        expect(typeof mark).toBe("number")
        expect(mark).toBeGreaterThan(before)
        expect(yield* deliveries.purgeOutbox(mark)).toBeGreaterThanOrEqual(1)
        expect(yield* deliveries.claim(10)).toEqual([])
      }))

    it.effect("undo entries, review sessions, the change feed's bound", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const dee = yield* newUser("dee")
        const changes = [
          { op: "update", table: "tasks", id: 7, before: { title: "a" }, after: { title: "b" }, guard: { done: false } },
          { op: "insert", table: "projects", id: 8, after: { name: "P", shared: false } },
          { op: "delete", table: "time_slots", id: 9, before: { label: "L", sort_order: 0 } }
        ]
        yield* sql`INSERT INTO undo_entries (user_id, action, description, changes, tasks_affected, created_at)
          VALUES (${dee.id}, 'edit', 'Edited', ${JSON.stringify(changes)}::jsonb, 1, ${AT}::timestamptz)`
        const entry = yield* sql.withTransaction(lockNextEntry(sql, dee.id, "undo"))
        expect(entry).toEqual({ id: entry!.id, action: "edit", description: "Edited", changes, tasks_affected: 1 })
        expect(yield* entryCounts(sql, dee.id, undefined)).toEqual({ undoable: 1, redoable: 0, latest: entry!.id })
        expect(yield* recentEntries(sql, dee.id, 5)).toEqual([
          { id: entry!.id, action: "edit", description: "Edited", created_at: AT, undone: false }
        ])
        expect((yield* writersAfter(sql, 0)).find((w) => w.user_id === dee.id)).toEqual({ user_id: dee.id, latest: entry!.id })

        const sessionId = "0b7c3c1e-8f3a-4a57-9b1d-4b6f0f2d8a11"
        yield* keepSession(sql, { id: sessionId, userId: dee.id, at: AT, tasks: [3, 1, 2] }, "2031-03-04T04:00:00.000Z", 100)
        expect(yield* storedSession(sql, sessionId)).toEqual({ user_id: dee.id, created_at: AT, tasks: [3, 1, 2] })
        expect(yield* storedSession(sql, "not-a-uuid")).toBeUndefined()
        expect(yield* takeSession(sql, sessionId)).toBe(true)
        expect(yield* takeSession(sql, sessionId)).toBe(false)

        const bound = yield* (yield* ChangeFeed).bound
        expect(typeof bound.xmin).toBe("bigint")
      }))

    it.effect("the AI's tables", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const eve = yield* newUser("eve")
        const result = { tasks: [{ task_id: 4, reason: "due" }], summary: "Do it", generated_at: AT, duration_ms: 12 }
        expect(yield* storedWhatsNext(sql, eve.id, "2031-03-04")).toBeNull()
        yield* storeWhatsNext(sql, eve.id, "2031-03-04", result)
        expect(yield* storedWhatsNext(sql, eve.id, "2031-03-04")).toEqual(result)

        expect(yield* insertSession(sql, { id: "s1", userId: eve.id, totalTasks: 3, at: AT })).toBe(true)
        expect(yield* insertSession(sql, { id: "s2", userId: eve.id, totalTasks: 3, at: AT })).toBe(false)
        expect(yield* sessionOf(sql, eve.id, "s1")).toEqual({
          session_id: "s1",
          status: "running",
          total_tasks: 3,
          completed: 0,
          started_at: AT,
          finished_at: null,
          error: null
        })
        yield* finishSession(sql, "s1", null, AT)
        expect(yield* latestCompleteSession(sql, eve.id)).toEqual({ id: "s1", finished_at: AT })

        yield* insertActivity(sql, {
          userId: eve.id,
          feature: "quick_take",
          ok: false,
          durationMs: 5,
          provider: "fake",
          model: "m",
          error: "boom",
          prompt: null,
          answer: null,
          at: AT
        })
        expect(yield* recentActivity(sql, eve.id, 20)).toEqual([
          { feature: "quick_take", status: "error", duration_ms: 5, model: "m", error: "boom", created_at: AT }
        ])

        const bucket = { userId: eve.id, bucket: "quick_take", capacity: 1, windowMs: 60_000, at: AT }
        expect(yield* takeToken(sql, bucket)).toBe(true)
        expect(yield* takeToken(sql, bucket)).toBe(false)
        expect(yield* tokensLeft(sql, bucket)).toBe(0)
      }))

    it.effect("tasks: JSON texts, wire objects as the driver gives them, locks and counts", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const fay = yield* newUser("fay")
        const inbox = yield* inboxId(sql, fay.id)
        const insert = (columns: string, values: string) =>
          Effect.flatMap(
            sql.unsafe(`INSERT INTO tasks (user_id, project_id, title, original_title, short_title, created_at, updated_at${columns})
              VALUES (${fay.id}, ${inbox}, 't', 't', 't', '${AT}', '${AT}'${values}) RETURNING id`),
            Schema.decodeUnknown(Schema.Tuple(IdRow))
          ).pipe(Effect.map(([row]) => TaskId.make(row.id)))
        const overdue = yield* insert(", due_at, original_due_at", ", '2031-03-01T00:00:00.000Z', '2031-03-01T00:00:00.000Z'")
        const reminder = yield* insert(", is_reminder, anchor_time", ", true, '09:30'")
        const now = new Date(AT)

        expect(JSON.parse((yield* taskJson(sql, fay.id, overdue))!)).toMatchObject({ data: { id: overdue, user_id: fay.id } })
        expect(yield* taskJson(sql, fay.id, TaskId.make(2_000_000_000))).toBeUndefined()
        // The wire object goes on as the driver parsed it, keys in the database's order.
        const wire = yield* taskWire(sql, overdue)
        const [raw] = yield* sql`SELECT steady_task_json(t) AS task FROM tasks t WHERE t.id = ${overdue}`
        expect(JSON.stringify(wire)).toBe(JSON.stringify(raw!.task))
        expect(wire).toMatchObject({ id: overdue, due_at: "2031-03-01T00:00:00.000Z", labels: [] })
        const [due] = yield* remindersDueBy(sql, fay.id, new Date("2031-03-05T00:00:00.000Z"))
        expect(due!.task).toMatchObject({ id: reminder, is_reminder: true, anchor_time: "09:30" })
        expect(yield* lockOpenReminders(sql, fay.id)).toEqual([{ id: reminder, due_at: null, anchor_time: "09:30" }])

        expect(yield* liveTasksIn(sql, inbox)).toBe(2)
        expect(yield* countsOf(sql, fay.id, now, "2031-03-04T00:00:00.000Z", "2031-03-05T00:00:00.000Z")).toEqual({
          total: 2,
          overdue: 1,
          today: 0
        })
        const page = JSON.parse(yield* taskPageJson(sql, fay.id, {}, now))
        expect(page.data.count).toBe(2)
        expect(page.data.tasks.map((t: { id: number }) => t.id)).toEqual([overdue, reminder])
        expect(JSON.parse(yield* trashPageJson(sql, fay.id, { limit: 10, offset: 0 }))).toEqual({ data: { tasks: [], count: 0 } })
        expect(JSON.parse(yield* quotaListJson(sql, fay.id, now))).toEqual({ data: { quotas: [], total: 0, has_any: false } })
        expect(yield* tasksWireJson(sql, [overdue])).toEqual(new Map([[overdue, (yield* tasksExportPage(sql, fay.id, 0, 1))[0]!.json]]))

        expect(yield* isVisibleTo(sql, fay.id, overdue)).toBe(true)
        expect(yield* isVisibleTo(sql, fay.id, 2_000_000_000)).toBeUndefined()
        expect(yield* ownerOf(sql, overdue)).toBe(fay.id)
        const locked = yield* sql.withTransaction(lockVisible(sql, fay.id, overdue))
        expect(locked).toMatchObject({ id: overdue, user_id: fay.id, due_at: "2031-03-01T00:00:00.000Z" })
        const lockedWithCalendar = yield* sql.withTransaction(taskWithCalendar(sql, fay.id, overdue, true))
        const withCalendar = lockedWithCalendar && { row: lockedWithCalendar.row, calendar: lockedWithCalendar.calendar }
        expect(withCalendar).toEqual({ row: locked, calendar: { timezone: "Europe/Paris", week_start: "sunday" } })
        expect(yield* sql.withTransaction(lockWithInbox(sql, inbox))).toEqual([
          { id: overdue, inbox },
          { id: reminder, inbox }
        ])
      }))

    it.effect("completions, the daily stats' sums and the idempotency purge's counts", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const gus = yield* newUser("gus")
        const inbox = yield* inboxId(sql, gus.id)
        const [task] = yield* Effect.flatMap(
          sql`INSERT INTO tasks (user_id, project_id, title, original_title, short_title, created_at, updated_at)
            VALUES (${gus.id}, ${inbox}, 'q', 'q', 'q', ${AT}::timestamptz, ${AT}::timestamptz) RETURNING id`,
          Schema.decodeUnknown(Schema.Tuple(IdRow))
        )
        const taskId = TaskId.make(task.id)
        const swept = { task_id: taskId, user_id: gus.id, task_title: "q", project_id: inbox, is_tracked: false, progress_target: 1 }
        yield* insertSwept(sql, [{ ...swept, completed_at: AT }, { ...swept, completed_at: "2031-03-03T00:00:00.000Z" }])
        const latest = yield* latestCompletions(sql, taskId, 2)
        expect(latest.map((c) => [c.completed_at, c.due_at_was, c.due_at_next])).toEqual([
          [AT, null, null],
          ["2031-03-03T00:00:00.000Z", null, null]
        ])
        const history = JSON.parse(yield* completionsPageJson(sql, { userId: gus.id, taskId, ranges: [] }, { limit: 1, offset: 0 }))
        expect(history.data.count).toBe(1)
        expect(history.data.completions[0]).toMatchObject({ id: latest[0]!.id, task_id: taskId })
        const exported = yield* completionsExportPage(sql, gus.id, 0, 10)
        expect(exported.map((r) => r.id)).toEqual(latest.map((c) => c.id).sort((a, b) => a - b))
        expect(JSON.parse(exported[0]!.json)).toMatchObject({ id: exported[0]!.id, task_id: taskId })

        const day = { user_id: gus.id, date: "2031-03-04", completions: 2, tasks_created: 1, snoozes: 0 }
        yield* statementOf(sql, addToDays([day]))
        yield* statementOf(sql, addToDays([{ ...day, completions: 1 }]))
        expect(yield* sumOfDays(sql, gus.id, undefined, undefined)).toEqual({ completions: 3, tasks_created: 2, snoozes: 0 })
        expect(yield* sumOfDays(sql, gus.id, "2031-03-05", undefined)).toEqual({ completions: 0, tasks_created: 0, snoozes: 0 })
        const today = yield* oneDay(sql, gus.id, "2031-03-04")
        expect(today).toEqual({ id: today.id, completions: 3, tasks_created: 2, snoozes: 0 })
        expect(typeof today.id).toBe("number")
        expect(yield* oneDay(sql, gus.id, "2031-03-05")).toEqual({ id: null, completions: null, tasks_created: null, snoozes: null })
        expect(yield* daysBetween(sql, gus.id, "2031-03-01", "2031-03-31")).toEqual([
          { id: today.id, user_id: gus.id, date: "2031-03-04", completions: 3, tasks_created: 2, snoozes: 0 }
        ])

        expect(yield* (yield* Idempotency).purge).toBeGreaterThanOrEqual(0)
      }))

    it.effect("the maintenance counters", () =>
      Effect.gen(function*() {
        const maintenance = yield* DatabaseMaintenance
        expect(Array.isArray(yield* maintenance.neverAnalyzed)).toBe(true)
        expect(typeof (yield* maintenance.autovacuumOn)).toBe("boolean")
      }))
  })
})
