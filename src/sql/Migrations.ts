import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Layer } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { withoutQueryBound } from "./PgGuard.js"
import { applySqlDefinitions, DEFINITIONS_FOLDER } from "./SqlDefinitions.js"

/** Our own table, so a host application's migrations never collide with ours. */
export const MIGRATIONS_TABLE = "steady_migrations"

/** `migrations/` sits at the package root, above both `src/` and `dist/src/`. */
const findMigrationsDir = (): string => {
  let dir = Path.dirname(fileURLToPath(import.meta.url))
  for (let i = 0; i < 6; i++) {
    const candidate = Path.join(dir, "migrations")
    if (Fs.existsSync(candidate) && Fs.statSync(candidate).isDirectory()) return candidate
    dir = Path.dirname(dir)
  }
  throw new Error("The migrations folder was not found next to the package")
}

/** Files named `NNNN_name.sql`, each run once, in id order, as one script. */
export const sqlFileLoader: Migrator.Loader = Effect.try({
  try: () => {
    const dir = findMigrationsDir()
    return Fs.readdirSync(dir)
      .map((file) => file.match(/^(\d+)_(.+)\.sql$/))
      .filter((match): match is RegExpMatchArray => match !== null)
      .map((match): Migrator.ResolvedMigration => {
        const text = Fs.readFileSync(Path.join(dir, match[0]), "utf8")
        return [
          Number(match[1]),
          match[2]!,
          // A migration over a large table may outlast the request-sized statement timeout.
          Effect.succeed(Effect.flatMap(SqlClient.SqlClient, (sql) =>
            Effect.zipRight(sql.unsafe("SET LOCAL statement_timeout = 0").unprepared, sql.unsafe(text).unprepared)))
        ]
      })
      .sort((a, b) => a[0] - b[0])
  },
  catch: (cause) => new Migrator.MigrationError({ reason: "import-error", message: String(cause), cause })
})

/** The numbered migrations, then the functions and triggers defined in `migrations/functions/` (SqlDefinitions). */
export const runMigrations = Migrator.make({})({ loader: sqlFileLoader, table: MIGRATIONS_TABLE }).pipe(
  Effect.tap(() =>
    Effect.flatMap(sqlFileLoader, (shipped) =>
      applySqlDefinitions(() => Path.join(findMigrationsDir(), DEFINITIONS_FOLDER), Math.max(0, ...shipped.map(([id]) => id))))
  ),
  withoutQueryBound,
  Effect.tap((applied) =>
    applied.length > 0
      ? Effect.logInfo(`Applied migrations: ${applied.map(([id, name]) => `${id}_${name}`).join(", ")}`)
      : Effect.void
  )
)

/** Runs pending migrations while the layer builds; a failure stops start-up. */
export const MigrationsLive = Layer.effectDiscard(runMigrations)
