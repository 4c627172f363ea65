import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { EXPORT_PAGE } from "../src/history/Exporter.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, expectServiceTime, inboxOf, TASK_FIELDS } from "./support/tasks.js"

/**
 * GET /api/export (spec §4.5): JSON of everything the caller owns, CSV per table with RFC 4180
 * quoting and spreadsheet formulas neutralised, streamed in pages.
 *
 * The clock is pinned at 12:00 UTC on Tuesday 10 March 2026.
 */
const NOW = new Date("2026-03-10T12:00:00Z")
const PROJECT_FIELDS = [
  "id", "name", "owner_id", "shared", "sort_order", "color", "description", "active_count", "overdue_count", "is_inbox", "created_at"
]

type Row = Record<string, any>

/** A strict RFC 4180 reader: every record ends with CRLF; quotes only around whole cells. */
const parseCsv = (text: string): Array<Array<string>> => {
  const rows: Array<Array<string>> = []
  let row: Array<string> = []
  let cell = ""
  let quoted = false
  let wasQuoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === "\"") {
        if (text[i + 1] === "\"") {
          cell += "\""
          i++
        } else {
          quoted = false
          wasQuoted = true
        }
      } else cell += c
      continue
    }
    if (c === "\"") {
      if (cell !== "" || wasQuoted) throw new Error(`quote inside an unquoted cell at ${i}`)
      quoted = true
    } else if (c === ",") {
      row.push(cell)
      cell = ""
      wasQuoted = false
    } else if (c === "\r" && text[i + 1] === "\n") {
      row.push(cell)
      rows.push(row)
      row = []
      cell = ""
      wasQuoted = false
      i++
    } else if (c === "\r" || c === "\n") {
      throw new Error(`bare line break outside quotes at ${i}`)
    } else {
      if (wasQuoted) throw new Error(`text after a closing quote at ${i}`)
      cell += c
    }
  }
  if (quoted || cell !== "" || row.length > 0) throw new Error("the last record is not terminated by CRLF")
  return rows
}

/** What a cell should read once unquoted (the oracle for the rules of src/history/Csv.ts). */
const cellText = (value: unknown): string => {
  if (value === null || value === undefined) return ""
  if (typeof value === "string") return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value
  if (typeof value === "number" || typeof value === "boolean") return String(value)
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return cellText(value.join(", "))
  return cellText(JSON.stringify(value))
}

describe("GET /api/export (spec §4.5)", () => {
  let service: TestService
  let alice: TestUser
  let bob: TestUser
  const t: Record<string, Row> = {}
  let workProject: Row

  const exportJson = async (user: TestUser, query = "") => {
    const res = await user.api.get(`/api/export${query}`)
    if (res.status !== 200) throw new Error(`GET /api/export${query} -> ${res.status} ${res.text}`)
    expect(res.headers.get("content-type")).toMatch(/^application\/json/)
    expect(res.headers.get("content-disposition")).toBe("attachment; filename=\"steady-export-2026-03-10.json\"")
    expect(Object.keys(res.body)).toEqual(["data"])
    expect(Object.keys(res.body.data)).toEqual(["tasks", "projects", "completions", "exported_at"])
    return res.body.data as { tasks: Array<Row>; projects: Array<Row>; completions: Array<Row>; exported_at: string }
  }
  const exportCsv = async (user: TestUser, type: "tasks" | "projects") => {
    const res = await user.api.get(`/api/export?format=csv&type=${type}`)
    if (res.status !== 200) throw new Error(`GET /api/export csv ${type} -> ${res.status} ${res.text}`)
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8")
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="steady-${type}-2026-03-10.csv"`)
    return { text: res.text, rows: parseCsv(res.text) }
  }
  const byId = (items: ReadonlyArray<Row>) => [...items].sort((a, b) => a.id - b.id)

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
    alice = await service.user("export-alice", "Europe/Berlin")
    bob = await service.user("export-bob", "UTC")
    workProject = (await alice.api.post("/api/projects", {
      name: "=HYPERLINK(\"http://evil\")",
      description: "Line one\nLine \"two\", with a comma",
      color: "+red"
    })).body.data
    const shared = (await bob.api.post("/api/projects", { name: "Bob shared", shared: true })).body.data
    await bob.api.post("/api/projects", { name: "Bob private project" })

    const make = async (key: string, body: Record<string, unknown>, user: TestUser = alice) => {
      t[key] = await createTask(user.api, { title: key, ...body })
    }
    await make("plain", { priority: 2, due_at: "2026-03-09T08:00:00Z" })
    await make("=SUM(A1:A2)", { labels: ["=x", "y"] })
    await make("+1 call", { notes: "\tindented" })
    await make("-2 degrees", { notes: "line1\nline2\r\nline3" })
    await make("@mention", { notes: "  padded  " })
    await make("a,b", { notes: "say \"hi\"" })
    await make("done", { project_id: workProject.id })
    await make("trashed", {})
    await make("skipped", { due_at: "2026-03-11T08:00:00Z" })
    await make("quota", { progress_target: 3, rrule: "FREQ=WEEKLY", quota_prompt_config: { enabled: false, numbers: { "1": 2 } } })
    await make("in bob's shared project", { project_id: shared.id })
    await make("bob private task", {}, bob)
    await make("bob shared task", { project_id: shared.id }, bob)
    await make("bob done", {}, bob)
    expect((await alice.api.post(`/api/tasks/${t.done!.id}/done`)).status).toBe(200)
    expect((await alice.api.delete(`/api/tasks/${t.trashed!.id}`)).status).toBe(200)
    expect((await alice.api.post(`/api/tasks/${t.skipped!.id}/skip-occurrence`)).status).toBe(200)
    expect((await bob.api.post(`/api/tasks/${t["bob done"]!.id}/done`)).status).toBe(200)
  })
  afterAll(async () => {
    await service.stop()
  })

  describe("JSON", () => {
    it("holds every task the caller owns (done, trashed and archived included), their projects and completions, nothing of others", async () => {
      const data = await exportJson(alice)
      expect(await exportJson(alice, "?format=json")).toEqual({ ...data, exported_at: expect.any(String) })
      expectServiceTime(data.exported_at, NOW)

      const own = Object.entries(t).filter(([key]) => !key.startsWith("bob")).map(([, task]) => task.id).sort((a, b) => a - b)
      expect(data.tasks.map((task) => task.id)).toEqual(own)
      // Each task exactly as GET /api/tasks/{id} shows it.
      for (const task of data.tasks) {
        expect(Object.keys(task).sort()).toEqual([...TASK_FIELDS].sort())
        expect(task).toEqual((await alice.api.get(`/api/tasks/${task.id}`)).body.data)
      }
      expect(data.tasks.find((task) => task.id === t.done!.id)).toMatchObject({ done: true })
      expect(data.tasks.find((task) => task.id === t.trashed!.id)!.deleted_at).not.toBeNull()
      expect(data.tasks.find((task) => task.id === t.skipped!.id)!.archived_at).not.toBeNull()

      // Own projects only, as the project endpoints show them.
      const listed = (await alice.api.get("/api/projects")).body.data.projects as Array<Row>
      const ownProjects = byId(listed.filter((p) => p.owner_id === alice.id))
      expect(ownProjects.map((p) => p.name)).toEqual(["Inbox", workProject.name])
      expect(data.projects).toEqual(ownProjects)
      for (const p of data.projects) expect(Object.keys(p).sort()).toEqual([...PROJECT_FIELDS].sort())

      const completions = (await alice.api.get("/api/completions")).body.data.completions as Array<Row>
      expect(completions.map((c) => c.task_id)).toEqual([t.done!.id])
      expect(data.completions).toEqual(byId(completions))

      const text = JSON.stringify(data)
      for (const name of ["bob private task", "bob shared task", "bob done", "Bob shared", "Bob private project"]) {
        expect(text).not.toContain(name)
      }
    })

    it("a user with nothing but the defaults exports an Inbox and empty lists", async () => {
      const carol = await service.user("export-carol", "UTC")
      const data = await exportJson(carol)
      expect(data.tasks).toEqual([])
      expect(data.completions).toEqual([])
      expect(data.projects.map((p) => [p.name, p.owner_id, p.is_inbox])).toEqual([["Inbox", carol.id, true]])
      expect(data.projects[0]!.id).toBe(await inboxOf(carol.api))
    })
  })

  describe("CSV", () => {
    it("tasks: one header row of Task fields, one row per own task, RFC 4180 quoting, formulas neutralised", async () => {
      const { rows, text } = await exportCsv(alice, "tasks")
      const json = await exportJson(alice)
      expect(rows[0]).toEqual([...TASK_FIELDS])
      expect(rows.length).toBe(1 + json.tasks.length)
      for (const [index, task] of json.tasks.entries()) {
        const row = rows[index + 1]!
        expect(row.length).toBe(TASK_FIELDS.length)
        expect(row, String(task.title)).toEqual(TASK_FIELDS.map((field) => cellText(task[field])))
      }
      const cells = (key: string) => {
        const row = rows.find((r) => r[0] === String(t[key]!.id))!
        return Object.fromEntries(TASK_FIELDS.map((field, i) => [field, row[i]]))
      }
      expect(cells("=SUM(A1:A2)")).toMatchObject({ title: "'=SUM(A1:A2)", original_title: "'=SUM(A1:A2)", labels: "'=x, y" })
      expect(cells("+1 call")).toMatchObject({ title: "'+1 call", notes: "'\tindented" })
      expect(cells("-2 degrees")).toMatchObject({ title: "'-2 degrees", notes: "line1\nline2\r\nline3" })
      expect(cells("@mention")).toMatchObject({ title: "'@mention", notes: "  padded  " })
      expect(cells("a,b")).toMatchObject({ title: "a,b", notes: "say \"hi\"" })
      expect(cells("plain")).toMatchObject({
        title: "plain",
        priority: "2",
        due_at: "2026-03-09T08:00:00.000Z",
        done: "false",
        done_at: "",
        labels: "",
        notes: ""
      })
      expect(cells("quota")).toMatchObject({ quota_prompt_config: "{\"enabled\":false,\"numbers\":{\"1\":2}}", progress_target: "3" })
      // The raw text: quoted where RFC 4180 needs it, doubled quotes inside.
      expect(text).toContain(",\"a,b\",")
      expect(text).toContain(",\"say \"\"hi\"\"\",")
      expect(text).toContain(",\"line1\nline2\r\nline3\",")
      expect(text).toContain(",\"  padded  \",")
      expect(text).toContain(",\"{\"\"enabled\"\":false,\"\"numbers\"\":{\"\"1\"\":2}}\",")
      expect(text).toContain(",'=SUM(A1:A2),")
      expect(text.endsWith("\r\n")).toBe(true)
      for (const name of ["bob private task", "bob shared task", "bob done"]) expect(text).not.toContain(name)
    })

    it("projects: the caller's own projects with formulas neutralised and line breaks quoted", async () => {
      const { rows, text } = await exportCsv(alice, "projects")
      expect(rows[0]).toEqual(PROJECT_FIELDS)
      const json = await exportJson(alice)
      expect(rows.slice(1)).toEqual(json.projects.map((p) => PROJECT_FIELDS.map((field) => cellText(p[field]))))
      const work = rows.find((r) => r[0] === String(workProject.id))!
      expect(work[1]).toBe("'=HYPERLINK(\"http://evil\")")
      expect(work[5]).toBe("'+red")
      expect(work[6]).toBe("Line one\nLine \"two\", with a comma")
      expect(text).toContain("\"'=HYPERLINK(\"\"http://evil\"\")\"")
      expect(text).toContain("\"Line one\nLine \"\"two\"\", with a comma\"")
      expect(text).not.toContain("Bob")
    })
  })

  describe("bad requests", () => {
    it("csv without a type, or an unknown format or type, is a 400; authentication is required", async () => {
      const csvNoType = await alice.api.get("/api/export?format=csv")
      expect(csvNoType.status).toBe(400)
      expect(csvNoType.body).toEqual({
        error: expect.any(String),
        code: "VALIDATION_ERROR",
        details: { type: "type (tasks or projects) is required for csv" }
      })
      for (const query of ["format=xml", "format=CSV&type=tasks", "format=csv&type=completions", "format=csv&type=", "type=users", "format="]) {
        const res = await alice.api.get(`/api/export?${query}`)
        expect(res.status, query).toBe(400)
        expect(res.body.code, query).toBe("VALIDATION_ERROR")
      }
      expect((await service.anonymous.get("/api/export")).status).toBe(401)
      expect((await service.anonymous.get("/api/export?format=csv&type=tasks")).status).toBe(401)
    })
  })

  describe("a large export", () => {
    it(`streams ${EXPORT_PAGE * 2 + 500} tasks completely, in JSON and CSV`, async () => {
      const big = await service.user("export-big", "UTC")
      const inbox = await inboxOf(big.api)
      const n = EXPORT_PAGE * 2 + 500
      await service.run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`INSERT INTO tasks (user_id, project_id, title, original_title, short_title, notes, priority, labels, created_at, updated_at)
          SELECT ${big.id}, ${inbox}, 'Task ' || i || ', "n"', 'Task ' || i, '=T' || i, 'note' || chr(10) || i, i % 5,
                 jsonb_build_array('l' || (i % 3)), '2026-03-01T00:00:00Z'::timestamptz, '2026-03-01T00:00:00Z'::timestamptz
          FROM generate_series(1, ${n}) AS i`))
      // A neighbour's tasks must not leak into the pages.
      await createTask(alice.api, { title: "interleaved" })

      const data = await exportJson(big)
      expect(data.tasks).toHaveLength(n)
      const ids = data.tasks.map((task) => task.id)
      expect(new Set(ids).size).toBe(n)
      expect(ids).toEqual([...ids].sort((a, b) => a - b))
      expect(data.tasks.every((task) => task.user_id === big.id)).toBe(true)
      expect(data.tasks.map((task) => task.title)).toEqual(Array.from({ length: n }, (_, i) => `Task ${i + 1}, "n"`))
      expect(data.tasks[n - 1]).toMatchObject({ notes: `note\n${n}`, priority: n % 5, labels: [`l${n % 3}`] })
      expect(data.projects).toHaveLength(1)

      const { rows } = await exportCsv(big, "tasks")
      expect(rows).toHaveLength(n + 1)
      expect(rows.slice(1).map((r) => Number(r[0]))).toEqual(ids)
      const title = TASK_FIELDS.indexOf("title")
      const shortTitle = TASK_FIELDS.indexOf("short_title")
      expect(rows.slice(1).map((r) => r[title])).toEqual(Array.from({ length: n }, (_, i) => `Task ${i + 1}, "n"`))
      expect(rows.slice(1).every((r, i) => r[shortTitle] === `'=T${i + 1}` && r.length === TASK_FIELDS.length)).toBe(true)
    })
  })
})
