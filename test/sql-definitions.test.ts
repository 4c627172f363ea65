import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, ManagedRuntime } from "effect"
import * as Path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { DatabaseLive } from "../src/sql/Database.js"
import { MIGRATIONS_TABLE, runMigrations, sqlFileLoader } from "../src/sql/Migrations.js"
import {
  applySqlDefinitions,
  DEFINITIONS_SETTING,
  definitionsDigest,
  readSqlDefinitions,
  type SqlDefinition
} from "../src/sql/SqlDefinitions.js"
import { databaseKind, freshDatabase, type TestDatabase } from "./support/database.js"
import { configFor, migratedDatabase } from "./support/migrated.js"
import { startService, type TestService } from "./support/service.js"
import { wireTextColumn } from "./support/taskRows.js"
import { rolledBack } from "./support/values.js"

/*
 * Every function and trigger is defined once, in migrations/functions/ (one file each), and the
 * migration runner applies the files after the numbered migrations (src/sql/SqlDefinitions.ts).
 * This fails when a database the runner migrated holds anything else: a public function or
 * trigger without a file (an overload left behind by an argument change included), or a
 * definition other than its file's. A file's definition is what PostgreSQL makes of it: it is
 * applied over the database's, with bodies checked, in a transaction that is rolled back, and
 * the two `pg_get_functiondef` (`pg_get_triggerdef`) texts are compared, whitespace normalised.
 * Both a fresh database and one the previous build migrated (0001-0031, no files) are checked.
 */

const DEFINITIONS_DIR = Path.join(import.meta.dirname, "..", "migrations", "functions")
const definitions = readSqlDefinitions(DEFINITIONS_DIR)
/** What the runner does after the migrations, on its own: true when it applied the files. */
const applyFiles = (latest: number) => applySqlDefinitions(() => DEFINITIONS_DIR, latest)
/** The newest migration of the build before the definition files. */
const PREVIOUS_BUILD = 31

const normalise = (text: string) => text.replace(/\s+/g, " ").trim()
const byKindAndName = (a: { kind: string; name: string }, b: { kind: string; name: string }) =>
  a.kind.localeCompare(b.kind) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)

/** What the database holds under a definition's name: one text per object of that name. */
const held = (definition: SqlDefinition) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    definition.kind === "function"
      ? sql<{ text: string }>`
          SELECT pg_get_functiondef(p.oid) AS text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
          WHERE n.nspname = 'public' AND p.proname = ${definition.name} ORDER BY p.oid`
      : sql<{ text: string }>`
          SELECT pg_get_triggerdef(t.oid) AS text
          FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = 'public' AND NOT t.tgisinternal AND t.tgname = ${definition.name} ORDER BY t.oid`
  ).pipe(Effect.map((rows) => rows.map((row) => normalise(row.text))))

/** What the database makes of `text` (the file's, unless given): applied with bodies checked, read, rolled back. */
const fromFile = (definition: SqlDefinition, text = definition.text) =>
  rolledBack(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`SET LOCAL check_function_bodies = on`
    yield* sql.unsafe(text).unprepared
    return yield* held(definition)
  }))

/** The database's public functions and triggers (not an extension's), with how many of each name. */
const publicObjects = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ kind: string; name: string; count: number }>`
    SELECT 'function' AS kind, p.proname AS name, count(*)::int AS count
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = 'public'
      AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
    GROUP BY p.proname
    UNION ALL
    SELECT 'trigger', t.tgname, count(*)::int
    FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = 'public' AND NOT t.tgisinternal
    GROUP BY t.tgname`).pipe(Effect.map((rows) => [...rows].sort(byKindAndName)))

const expectOneFileEach = Effect.gen(function*() {
  const files = definitions.map((d) => ({ kind: d.kind, name: d.name, count: 1 })).sort(byKindAndName)
  expect(yield* publicObjects).toEqual(files)
})

const expectTheFiles = Effect.forEach(definitions, (definition) =>
  Effect.gen(function*() {
    const inDatabase = yield* held(definition)
    expect(inDatabase, definition.file).toHaveLength(1)
    expect(yield* fromFile(definition), definition.file).toEqual(inDatabase)
  }), { discard: true })

const latestMigration = Effect.map(sqlFileLoader, (shipped) => Math.max(...shipped.map(([id]) => id)))

const recorded = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ value: string }>`SELECT value::text AS value FROM app_settings WHERE key = ${DEFINITIONS_SETTING}`).pipe(
    Effect.map((rows) => rows.map((row) => JSON.parse(row.value) as unknown))
  )

/** Tasks whose stored wire text is not what `steady_task_wire_of` renders for them now. */
const staleWireTexts = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const { expression } = yield* wireTextColumn
  return yield* sql<{ id: number }>`SELECT id FROM tasks WHERE wire_text IS DISTINCT FROM (${sql.literal(expression)}) ORDER BY id`
})

/** A user with an Inbox and a few varied tasks, written with SQL alone (no service of any build). */
const seedTasks = (username: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [user] = yield* sql<{ id: number }>`
      INSERT INTO users (username, timezone, created_at) VALUES (${username}, 'Europe/Berlin', now()) RETURNING id`
    const [inbox] = yield* sql<{ id: number }>`
      INSERT INTO projects (owner_id, name, is_inbox, created_at, updated_at) VALUES (${user!.id}, 'Inbox', true, now(), now())
      RETURNING id`
    yield* sql`
      INSERT INTO tasks (user_id, project_id, title, original_title, short_title, created_at, updated_at)
      VALUES (${user!.id}, ${inbox!.id}, 'plain', 'plain', 'plain', '2026-11-01T12:00:00.123456Z', '2026-11-01T12:00:00.123Z')`
    yield* sql`
      INSERT INTO tasks (user_id, project_id, title, original_title, short_title, created_at, updated_at, due_at, original_due_at,
        rrule, priority, labels, notes, snooze_count, anchor_time)
      VALUES (${user!.id}, ${inbox!.id}, ${"quote \" backslash \\ newline \n é ✓ 😀"}, 'q', 'q', now(), now(),
        '2026-11-02T08:30:00.120Z', '2026-11-01T08:30:00.120Z', 'FREQ=WEEKLY;BYDAY=MO', 4,
        ${JSON.stringify(["home", "a \"quoted\" label"])}::jsonb, ${"</script> \u2028 line separator"}, 2, '09:30')`
    yield* sql`
      INSERT INTO tasks (user_id, project_id, title, original_title, short_title, created_at, updated_at, rrule, progress_target,
        is_tracked, quota_prompt_config, enrichment_status, deleted_at)
      VALUES (${user!.id}, ${inbox!.id}, 'quota', 'quota', 'quota', now(), now(), 'FREQ=DAILY', 3, true,
        ${JSON.stringify({ enabled: true, numbers: { "1": 1 } })}::jsonb, 'done', now())`
    return user!.id
  })

describe(`SQL definitions, a fresh database (${databaseKind()})`, () => {
  it.layer(migratedDatabase, { timeout: Duration.minutes(2) })((it) => {
    it.effect("every public function and trigger has its file, and each name is defined once", () => expectOneFileEach)

    it.effect("each file is the definition the database holds", () => expectTheFiles)

    it.effect("a file that differs is noticed; whitespace alone is not a difference", () =>
      Effect.gen(function*() {
        const bool = definitions.find((d) => d.name === "steady_json_bool")!
        const trigger = definitions.find((d) => d.name === "tasks_resume_reminder_roll")!
        expect(yield* fromFile(bool, bool.text.replace("ELSE 'null'", "ELSE 'NULL'"))).not.toEqual(yield* held(bool))
        expect(yield* fromFile(trigger, trigger.text.replace("OLD.rrule IS DISTINCT", "OLD.notes IS DISTINCT")))
          .not.toEqual(yield* held(trigger))
        expect(yield* fromFile(bool, bool.text.replace("THEN 'true'", "THEN\n      'true'"))).toEqual(yield* held(bool))
        // A function without a file, and an overload of one with a file.
        const sql = yield* SqlClient.SqlClient
        const objects = yield* rolledBack(Effect.zipRight(
          sql.unsafe(`CREATE FUNCTION steady_orphan() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;
            CREATE FUNCTION steady_json_bool(b integer) RETURNS text LANGUAGE sql AS $$ SELECT b::text $$;`).unprepared,
          publicObjects
        ))
        expect(objects).toContainEqual({ kind: "function", name: "steady_orphan", count: 1 })
        expect(objects).toContainEqual({ kind: "function", name: "steady_json_bool", count: 2 })
      }))

    it.effect("a stored wire text the renderer would now write otherwise is noticed", () =>
      Effect.gen(function*() {
        yield* seedTasks("stale-seeded")
        const wire = definitions.find((d) => d.name === "steady_task_wire_of")!
        const stale = yield* rolledBack(Effect.zipRight(
          Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(wire.text.replace(`'{"id":'`, `'{"id" :'`)).unprepared),
          staleWireTexts
        ))
        expect(stale.length).toBeGreaterThan(0)
        expect(yield* staleWireTexts).toEqual([])
      }))

    it.effect("the runner records the files it applied, and applies them again only when something changed", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const latest = yield* latestMigration
        const digest = definitionsDigest(definitions)
        expect(yield* recorded).toEqual([{ migration: latest, sha256: digest }])
        // A replaced function is a new version of its catalog row.
        const version = sql<{ xmin: string }>`SELECT xmin::text AS xmin FROM pg_proc WHERE proname = 'steady_task_wire_of'`.pipe(
          Effect.map((rows) => rows[0]!.xmin)
        )
        const setRecord = (value: object) =>
          sql`UPDATE app_settings SET value = ${JSON.stringify(value)}::jsonb WHERE key = ${DEFINITIONS_SETTING}`
        yield* seedTasks("fresh-seeded")
        const stored = yield* sql<{ id: number; wire_text: string }>`SELECT id, wire_text FROM tasks ORDER BY id`
        const first = yield* version

        // A start with nothing new: one read, nothing applied.
        expect(yield* runMigrations).toEqual([])
        expect(yield* version).toBe(first)

        // The record of a newer build (a higher migration): left alone.
        yield* setRecord({ migration: latest + 1, sha256: "newer" })
        yield* runMigrations
        expect(yield* version).toBe(first)

        // Other files at the same migration (a file edited in development): applied again and
        // recorded. steady_task_wire_of is replaced under the generated column that uses it; the
        // stored rows keep their text, and writes render with it.
        yield* setRecord({ migration: latest, sha256: "edited" })
        yield* runMigrations
        expect(yield* version).not.toBe(first)
        expect(yield* recorded).toEqual([{ migration: latest, sha256: digest }])
        expect(yield* sql<{ id: number; wire_text: string }>`SELECT id, wire_text FROM tasks ORDER BY id`).toEqual(stored)
        expect(yield* staleWireTexts).toEqual([])
        yield* sql`UPDATE tasks SET title = 'renamed' WHERE id = ${stored[0]!.id}`
        const [renamed] = yield* sql<{ wire_text: string }>`SELECT wire_text FROM tasks WHERE id = ${stored[0]!.id}`
        expect(JSON.parse(renamed!.wire_text)).toMatchObject({ id: stored[0]!.id, title: "renamed" })

        // Nothing recorded (a database migrated before the record existed): applied, by one of
        // two instances starting together (on a server, each on a connection of its own).
        yield* sql`DELETE FROM app_settings WHERE key = ${DEFINITIONS_SETTING}`
        const second = yield* version
        const applied = yield* Effect.all([applyFiles(latest), applyFiles(latest)], { concurrency: "unbounded" })
        expect([...applied].sort()).toEqual([false, true])
        expect(yield* version).not.toBe(second)
        expect(yield* recorded).toEqual([{ migration: latest, sha256: digest }])
        yield* expectOneFileEach
        yield* expectTheFiles
      }))
  })
})

describe(`SQL definitions, a database the previous build migrated (${databaseKind()})`, () => {
  let db: TestDatabase
  let service: TestService
  let owner: number
  let before: ReadonlyArray<{ id: number; wire_text: string }>

  beforeAll(async () => {
    db = await freshDatabase()
    // The build before the definition files: migrations 0001-0031 by the plain migrator.
    const previous = ManagedRuntime.make(DatabaseLive.pipe(Layer.provide(configFor(db)), Layer.orDie))
    await previous.runPromise(Migrator.make({})({
      loader: Effect.map(sqlFileLoader, (shipped) => shipped.filter(([id]) => id <= PREVIOUS_BUILD)),
      table: MIGRATIONS_TABLE
    }))
    owner = await previous.runPromise(seedTasks("upgraded"))
    before = await previous.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ id: number; wire_text: string }>`SELECT id, wire_text FROM tasks ORDER BY id`))
    await previous.dispose()
    // This build: the service migrates the rest and applies the files as it starts.
    service = await startService({}, db)
  })
  afterAll(async () => {
    await service?.stop()
    await db?.drop()
  })

  it("runs the newer migrations and applies the files: one file each, each what the database holds", async () => {
    const latest = await service.run(latestMigration)
    const newer = (await service.run(sqlFileLoader)).map(([id]) => id).filter((id) => id > PREVIOUS_BUILD)
    const applied = await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ id: number }>`SELECT migration_id AS id FROM ${sql(MIGRATIONS_TABLE)} WHERE migration_id > ${PREVIOUS_BUILD} ORDER BY 1`))
    expect(applied.map((row) => row.id)).toEqual(newer)
    expect(await service.run(recorded)).toEqual([{ migration: latest, sha256: definitionsDigest(definitions) }])
    await service.run(expectOneFileEach)
    await service.run(expectTheFiles)
  })

  it("renders the wire text of the rows written before again, compact, as the files do", async () => {
    // Migration 0033 dropped jsonb's spacing from the stored text; the content is the same.
    expect(await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ id: number; wire_text: string }>`SELECT id, wire_text FROM tasks ORDER BY id`))).toEqual(
        before.map(({ id, wire_text }) => ({ id, wire_text: JSON.stringify(JSON.parse(wire_text)) }))
      )
    expect(await service.run(staleWireTexts)).toEqual([])
  })

  it("serves the tasks written before and writes new ones", async () => {
    const user = await service.user("upgraded")
    expect(user.id).toBe(owner)
    for (const { id, wire_text } of before) {
      const res = await user.api.get(`/api/tasks/${id}`)
      expect(res.status, res.text).toBe(200)
      expect(res.body.data).toEqual(JSON.parse(wire_text))
    }
    const created = await user.api.post("/api/tasks", { title: "after the upgrade", due_at: "2026-12-01T09:00:00Z" })
    expect(created.status, created.text).toBe(201)
    const patched = await user.api.patch(`/api/tasks/${before[0]!.id}`, { title: "edited after the upgrade" })
    expect(patched.status, patched.text).toBe(200)
    expect((await user.api.get(`/api/tasks/${before[0]!.id}`)).body.data.title).toBe("edited after the upgrade")
  })
})
