import { makeCompiler } from "@effect/sql-pg/PgClient"
import * as Statement from "@effect/sql/Statement"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { emptyText, joinText, rawText, renderText, sqlText } from "../../src/sql/SqlText.js"
import { Pending, Rendered } from "../../src/pipeline/Pending.js"

/*
 * The commit statement's text is built as `SqlText` (src/sql/SqlText.ts): templates kept as they
 * are, parameters numbered once when the whole statement is rendered. These pin the rendering
 * against what `@effect/sql`'s own compiler gives for the same statement, and the answer a write
 * renders (`Pending.resolve`) against the spread it stands for.
 */

// A statement constructor of `@effect/sql` with PostgreSQL's compiler and no connection: only compiled here.
const sql = Statement.make(Effect.dieMessage("not run"), makeCompiler(), [], undefined)

describe("SqlText", () => {
  it("numbers parameters in order through nested templates", () => {
    const inner = sqlText`b = ${"two"}::text AND c = ${3}`
    const [text, params] = renderText(sqlText`SELECT ${1}::int WHERE ${inner} OR d = ${null}`)
    expect(text).toBe("SELECT $1::int WHERE b = $2::text AND c = $3 OR d = $4")
    expect(params).toEqual([1, "two", 3, null])
  })

  it("renders the text and parameters @effect/sql compiles for the same statement", () => {
    const ours = sqlText`WITH x AS (SELECT ${7} AS n), ${joinText(", ", [sqlText`y AS (SELECT ${"a"} AS s)`, rawText("z AS (SELECT 1)")])}
      SELECT ${sqlText`(SELECT n FROM x) + ${8}`} AS total${emptyText}`
    const theirs = sql`WITH x AS (SELECT ${7} AS n), ${sql.join(", ", false)([sql`y AS (SELECT ${"a"} AS s)`, sql.literal("z AS (SELECT 1)")])}
      SELECT ${sql`(SELECT n FROM x) + ${8}`} AS total${sql``}`
    expect(renderText(ours)).toEqual(theirs.compile())
  })

  it("splices @effect/sql fragments, their parameters numbered in place", () => {
    const fragment = sql`EXISTS (SELECT 1 FROM users u WHERE u.id = ${sql.literal("t.user_id")} AND u.timezone = ${"Europe/Paris"})`
    const [text, params] = renderText(sqlText`(id = ${41} AND ${fragment} AND x = ${"y"})`)
    expect(text).toBe("(id = $1 AND EXISTS (SELECT 1 FROM users u WHERE u.id = t.user_id AND u.timezone = $2) AND x = $3)")
    expect(params).toEqual([41, "Europe/Paris", "y"])
  })

  it("refuses a fragment it cannot splice rather than sending it as a parameter", () => {
    expect(() => renderText(sqlText`SELECT * FROM ${sql("tasks")}`)).toThrow(/Identifier is not a parameter/)
    expect(() => renderText(sqlText`SELECT ${{ a: 1 }}`)).toThrow(/Object is not a parameter/)
    expect(() => renderText(sqlText`SELECT ${sql`* FROM ${sql("tasks")}`}`)).toThrow(/Identifier segment cannot be spliced/)
    expect(renderText(sqlText`SELECT ${new Date(0)}`)[1]).toEqual([new Date(0)])
  })

  it("joins nothing, one part and several", () => {
    expect(renderText(joinText(", ", []))).toEqual(["", []])
    expect(renderText(joinText(", ", [sqlText`a = ${1}`]))).toEqual(["a = $1", [1]])
    expect(renderText(joinText(" AND ", [sqlText`a = ${1}`, rawText("b"), sqlText`c = ${2}`]))).toEqual(["a = $1 AND b AND c = $2", [1, 2]])
  })

  it("takes a value that looks like SQL as a parameter, never as text", () => {
    expect(renderText(sqlText`SELECT ${"1; DROP TABLE tasks"}::text`)).toEqual(["SELECT $1::text", ["1; DROP TABLE tasks"]])
  })
})

describe("a write's rendered answer", () => {
  const wire = `{"id":5,"title":"Ünï \\"q\\"","labels":["a"],"due_at":null}`

  it("is the wire text itself when nothing is added", () => {
    const answer = new Pending<{ id: number }>().resolve(wire)
    expect(answer.text).toBe(wire)
    expect(answer.value).toEqual(JSON.parse(wire))
  })

  it("adds members after the wire's own, as the spread it stands for", () => {
    const extra = { fields_changed: ["title"], description: "Edited 'x' (title)", next_due_at: null }
    const answer = new Pending<{ id: number }>().with(extra).resolve(wire)
    expect(JSON.parse(answer.text)).toEqual({ ...JSON.parse(wire), ...extra })
    expect(Object.keys(JSON.parse(answer.text))).toEqual([...Object.keys(JSON.parse(wire)), ...Object.keys(extra)])
  })

  it("is its value inside a larger answer", () => {
    const answer = new Rendered<{ id: number }>(wire)
    expect(JSON.parse(JSON.stringify({ task: answer, n: 1 }))).toEqual({ task: JSON.parse(wire), n: 1 })
    expect(answer.value.id).toBe(5)
  })
})
