import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import Pg from "pg"

/** The PostgreSQL server the suite runs against, when one is configured. */
export const serverUrl = (): string | undefined => {
  const url = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL
  return url !== undefined && url.trim() !== "" ? url : undefined
}

export const databaseKind = (): "postgres" | "embedded" => (serverUrl() ? "postgres" : "embedded")

export interface TestDatabase {
  /** `DATABASE_URL` for the service, or undefined for the embedded database. */
  readonly url: string | undefined
  readonly dataDir: string
  readonly drop: () => Promise<void>
}

const withDatabase = (base: string, name: string) => {
  const url = new URL(base)
  url.pathname = `/${name}`
  return url.toString()
}

/**
 * One fresh database per test file: a new PostgreSQL database on the server when one is
 * configured, else a new embedded data directory.
 */
export const freshDatabase = async (): Promise<TestDatabase> => {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "steady-test-"))
  const base = serverUrl()
  if (base === undefined) {
    return { url: undefined, dataDir, drop: async () => Fs.rmSync(dataDir, { recursive: true, force: true }) }
  }
  const name = `steady_test_${Crypto.randomBytes(6).toString("hex")}`
  const admin = new Pg.Client({ connectionString: base })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  return {
    url: withDatabase(base, name),
    dataDir,
    drop: async () => {
      const client = new Pg.Client({ connectionString: base })
      await client.connect()
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await client.end()
      Fs.rmSync(dataDir, { recursive: true, force: true })
    }
  }
}
