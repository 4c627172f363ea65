import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"

/**
 * Every function and trigger of the schema is defined once, in `migrations/functions/<name>.sql`:
 * one `CREATE OR REPLACE FUNCTION` or `CREATE OR REPLACE TRIGGER` each, holding its current
 * definition, which the numbered migrations no longer need to repeat (they keep the history).
 * After the numbered migrations, the files are applied in one transaction whenever the
 * database may hold something else: a migration of this build ran since they were last
 * applied, or they changed. The `app_settings` row `sql_definitions` records which build's
 * files are in place: its newest migration and the files' digest. A database a newer build
 * migrated is left alone, so an older instance starting during a rolling upgrade never puts
 * its definitions back. migrations/functions/README.md is the contributor's side of this.
 */

export const DEFINITIONS_FOLDER = "functions"
/** The `app_settings` row recording which definitions are in place. */
export const DEFINITIONS_SETTING = "sql_definitions"

export interface SqlDefinition {
  /** The function's or trigger's name, which is also the file's. */
  readonly name: string
  readonly kind: "function" | "trigger"
  readonly file: string
  readonly text: string
}

/** Which build's definitions are in place: its newest migration and the digest of its files. */
export interface DefinitionsState {
  readonly migration: number
  readonly sha256: string
}

/** The row as read: its fields are null before the first application. */
interface StoredState {
  readonly migration: number | null
  readonly sha256: string | null
}

const STATEMENT = /^CREATE OR REPLACE (FUNCTION|TRIGGER) (\w+)\b/gm

const definitionOf = (dir: string, file: string): SqlDefinition => {
  const text = Fs.readFileSync(Path.join(dir, file), "utf8")
  const statements = [...text.matchAll(STATEMENT)]
  const name = statements[0]?.[2]
  if (statements.length !== 1 || `${name}.sql` !== file) {
    throw new Error(`${file} must hold one CREATE OR REPLACE FUNCTION or TRIGGER of the name ${file.replace(/\.sql$/, "")}`)
  }
  return { name: name!, kind: statements[0]![1] === "TRIGGER" ? "trigger" : "function", file, text }
}

/** The definition files, functions first (a trigger names its function), each kind in name order. */
export const readSqlDefinitions = (dir: string): ReadonlyArray<SqlDefinition> => {
  const all = Fs.readdirSync(dir).filter((file) => file.endsWith(".sql")).sort().map((file) => definitionOf(dir, file))
  return [...all.filter((d) => d.kind === "function"), ...all.filter((d) => d.kind === "trigger")]
}

export const definitionsDigest = (definitions: ReadonlyArray<SqlDefinition>): string => {
  const hash = Crypto.createHash("sha256")
  for (const d of definitions) hash.update(`${d.file}\0${d.text}\0`)
  return hash.digest("hex")
}

/**
 * Whether this build's definitions go in over `stored`: nothing recorded, an older build's, or
 * this build's migrations with other files (a file edited without a migration, in development).
 */
export const shouldApply = (stored: StoredState | undefined, shipped: DefinitionsState): boolean =>
  stored === undefined || stored.migration === null || stored.sha256 === null || stored.migration < shipped.migration ||
  (stored.migration === shipped.migration && stored.sha256 !== shipped.sha256)

/**
 * Applies the definition files when `shouldApply`; true when it did. `migration` is the newest
 * migration this build ships, all of which have run.
 */
export const applySqlDefinitions = Effect.fnUntraced(function*(dir: () => string, migration: number) {
  const sql = yield* SqlClient.SqlClient
  const definitions = yield* Effect.try({
    try: () => readSqlDefinitions(dir()),
    catch: (cause) => new Migrator.MigrationError({ reason: "import-error", message: String(cause), cause })
  })
  const shipped: DefinitionsState = { migration, sha256: definitionsDigest(definitions) }
  const stored = (lock: boolean) =>
    Effect.map(
      sql<StoredState>`
        SELECT (value ->> 'migration')::int AS migration, value ->> 'sha256' AS sha256
        FROM app_settings WHERE key = ${DEFINITIONS_SETTING} ${lock ? sql`FOR UPDATE` : sql``}`,
      (rows) => rows[0]
    )
  // The usual start: in place already, one read.
  const seen = yield* stored(false)
  if (!shouldApply(seen, shipped)) {
    if (seen?.migration != null && seen.migration > shipped.migration) {
      yield* Effect.logWarning(
        `The database holds the SQL definitions of a newer build (migration ${seen.migration}); this build's are left out`
      )
    }
    return false
  }
  return yield* sql.withTransaction(Effect.gen(function*() {
    // Instances starting together: the others wait on the row here, then find the work done.
    yield* sql`INSERT INTO app_settings (key, value) VALUES (${DEFINITIONS_SETTING}, '{}'::jsonb) ON CONFLICT (key) DO NOTHING`
    if (!shouldApply(yield* stored(true), shipped)) return false
    // Replacing a trigger waits for the table's lock, as a migration may.
    yield* sql`SET LOCAL statement_timeout = 0`
    // As pg_dump does: a SQL function's body is not checked against the others while they are
    // created, so the files apply in any order. test/sql-definitions.test.ts applies each one
    // with the checks on.
    yield* sql`SET LOCAL check_function_bodies = off`
    for (const definition of definitions) {
      yield* sql.unsafe(definition.text).unprepared.pipe(
        Effect.mapError((cause) =>
          new Migrator.MigrationError({ reason: "failed", message: `SQL definition ${definition.file} failed`, cause })
        )
      )
    }
    yield* sql`UPDATE app_settings SET value = ${JSON.stringify(shipped)}::jsonb WHERE key = ${DEFINITIONS_SETTING}`
    yield* Effect.logInfo(`Applied SQL definitions: ${definitions.length} files`)
    return true
  }))
})
