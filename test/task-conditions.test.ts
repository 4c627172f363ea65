import * as SqlClient from "@effect/sql/SqlClient"
import type { Fragment } from "@effect/sql/Statement"
import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { UserId } from "../src/kernel/Ids.js"
import { overdueOf, visibleTo } from "../src/tasks/TasksTable.js"
import { isOpen, isOverdue, isQuota } from "../src/pipeline/WireSql.js"
import { databaseKind } from "./support/database.js"
import { startService, type TestService } from "./support/service.js"

/*
 * The task conditions (open, overdue, quota, visible to a user) are written
 * once and hold under any alias: the same tasks match under `t` and under another name, and
 * a condition under another alias names no column of `t`.
 */

const NOW = new Date("2026-11-26T12:00:00Z")
const YESTERDAY = "2026-11-25T09:00:00Z"
const TOMORROW = "2026-11-27T09:00:00Z"

describe(`task conditions under any alias (${databaseKind()})`, () => {
  let service: TestService
  let alice: number
  const ids: Record<string, number> = {}

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
    const a = await service.user("alice")
    const b = await service.user("bob")
    alice = a.id
    const create = async (key: string, body: object, api = a.api) => {
      const created = await api.post("/api/tasks", body)
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      ids[key] = created.body.data.id
    }
    await create("overdue", { title: "overdue", due_at: YESTERDAY })
    await create("later", { title: "later", due_at: TOMORROW })
    await create("reminder", { title: "reminder", due_at: YESTERDAY, is_reminder: true })
    await create("quota", { title: "quota", progress_target: 3, rrule: "FREQ=WEEKLY" })
    await create("done", { title: "done", due_at: YESTERDAY })
    expect((await a.api.post(`/api/tasks/${ids.done}/done`, {})).status).toBe(200)
    await create("trashed", { title: "trashed", due_at: YESTERDAY })
    expect((await a.api.delete(`/api/tasks/${ids.trashed}`)).status).toBe(200)
    await create("bobs", { title: "bob's", due_at: YESTERDAY }, b.api)
    const shared = await b.api.post("/api/projects", { name: "Household", shared: true })
    expect(shared.status).toBe(201)
    await create("shared", { title: "shared", project_id: shared.body.data.id }, b.api)
  }, 120_000)
  afterAll(async () => {
    await service?.stop()
  })

  /** The names of the tasks matching a condition under `alias`. */
  const matching = (condition: (sql: SqlClient.SqlClient, alias: string) => Fragment, alias: string) =>
    service.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      Effect.gen(function*() {
        const fragment = condition(sql, alias)
        const rows = yield* sql<{ id: number }>`SELECT ${sql.literal(alias)}.id FROM tasks ${sql.literal(alias)} WHERE ${fragment} ORDER BY 1`
        const [text] = sql`SELECT 1 WHERE ${fragment}`.compile()
        return { names: rows.map((r) => Object.keys(ids).find((k) => ids[k] === r.id)), text }
      })))

  const conditions: ReadonlyArray<[string, (sql: SqlClient.SqlClient, alias: string) => Fragment, ReadonlyArray<string>]> = [
    ["open", (sql, alias) => isOpen(sql, alias), ["overdue", "later", "reminder", "quota", "bobs", "shared"]],
    ["overdue", (sql, alias) => isOverdue(sql, NOW, alias), ["overdue", "bobs"]],
    ["alice's overdue", (sql, alias) => overdueOf(sql, alice as UserId, NOW, alias), ["overdue"]],
    ["quota", (sql, alias) => isQuota(sql, alias), ["quota"]],
    ["visible to alice", (sql, alias) => visibleTo(sql, alice as UserId, alias), ["overdue", "later", "reminder", "quota", "done", "trashed", "shared"]]
  ]

  for (const [name, condition, expected] of conditions) {
    it(`${name}: the same tasks under t and under another alias`, async () => {
      const underT = await matching(condition, "t")
      const underX = await matching(condition, "x")
      expect([...underT.names].sort()).toEqual([...expected].sort())
      expect(underX.names).toEqual(underT.names)
      expect(underX.text).not.toMatch(/\bt\./)
    })
  }
})
