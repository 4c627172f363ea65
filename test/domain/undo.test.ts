import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import type { RowChange } from "../../src/changes/Changes.js"
import type { JsonValue, Row } from "../../src/kernel/Json.js"
import { applyStep, type Direction, ordered, planStep, type Step } from "../../src/undo/Undo.js"

/**
 * The pure undo/redo plan (src/undo/Undo.ts): round trips, the no-clobber rule, guards,
 * and the soft delete of created tasks. Rows are compared with `toEqual`, which ignores
 * object key order just as the plan's own `sameValue` does.
 */

const NOW = "2026-03-08T12:00:00.000Z"
const FIELDS = ["a", "b", "c", "d", "e"] as const

/** Values a column can hold, including JSON objects and arrays (labels, quota_day_state). */
const valueArb: fc.Arbitrary<JsonValue> = fc.oneof(
  fc.constant(null),
  fc.integer({ min: -3, max: 3 }),
  fc.boolean(),
  fc.constantFrom("", "x", "y", "2026-03-08T12:00:00.000Z"),
  fc.array(fc.constantFrom("home", "work", "errand"), { maxLength: 3 }),
  fc.record({ date: fc.constantFrom("2026-03-08", "2026-03-09"), logged: fc.integer({ min: 0, max: 3 }) })
)

const rowArb: fc.Arbitrary<Row> = fc.record({
  a: valueArb,
  b: valueArb,
  c: valueArb,
  d: valueArb,
  e: valueArb
})

/** The same JSON value with every object's keys in reverse order (what a database may hand back). */
const reordered = (v: JsonValue): JsonValue => {
  if (v === null || typeof v !== "object") return v
  if (Array.isArray(v)) return v.map(reordered)
  const obj = v as Record<string, JsonValue>
  return Object.fromEntries(Object.keys(obj).reverse().map((k) => [k, reordered(obj[k]!)]))
}

const differentFrom = (current: JsonValue) => valueArb.filter((v) => JSON.stringify(v) !== JSON.stringify(current))

/**
 * A row and an update the way the pipeline records one: `before`/`after` hold only the
 * fields whose value really changed. Optional guard fields are disjoint from them.
 */
const updateCaseArb = fc
  .tuple(rowArb, fc.subarray([...FIELDS], { minLength: 1 }), fc.boolean())
  .chain(([row, fields, guarded]) =>
    fc
      .tuple(
        fc.tuple(...fields.map((f) => differentFrom(row[f]!))),
        guarded ? fc.subarray(FIELDS.filter((f) => !fields.includes(f))) : fc.constant([] as Array<string>)
      )
      .map(([values, guardFields]) => {
        const before: Row = {}
        const after: Row = {}
        fields.forEach((f, i) => {
          before[f] = row[f]!
          after[f] = values[i]!
        })
        const change: RowChange = guardFields.length > 0
          ? { op: "update", table: "tasks", id: 7, before, after, guard: Object.fromEntries(guardFields.map((f) => [f, row[f]!])) }
          : { op: "update", table: "tasks", id: 7, before, after }
        return { row, fields, after, change, guardFields }
      })
  )

const step = (change: RowChange, direction: Direction, current: Row | undefined): Step =>
  planStep(change, direction, current, NOW)
const run = (change: RowChange, direction: Direction, current: Row | undefined) =>
  applyStep(current, step(change, direction, current))

describe("planStep/applyStep round trips", () => {
  it.prop("update: redo from the state before the action reaches the state after it; undo comes back", [updateCaseArb], ([c]) => {
    const afterAction = { ...c.row, ...c.after }
    const redone = run(c.change, "redo", c.row)
    expect(redone).toEqual(afterAction)
    expect(run(c.change, "undo", redone)).toEqual(c.row)
    // And the other way round: undo then redo returns the state after the action.
    const undone = run(c.change, "undo", afterAction)
    expect(undone).toEqual(c.row)
    expect(run(c.change, "redo", undone)).toEqual(afterAction)
  })

  it.prop("update: values read back with object keys in another order still count as unchanged", [updateCaseArb], ([c]) => {
    const afterAction = Object.fromEntries(Object.entries({ ...c.row, ...c.after }).map(([k, v]) => [k, reordered(v)]))
    expect(run(c.change, "undo", afterAction)).toEqual(c.row)
  })

  it.prop("update: undo on the state before the action (or redo on the state after it) changes nothing", [updateCaseArb], ([c]) => {
    expect(step(c.change, "undo", c.row).kind).toBe("skip")
    expect(step(c.change, "redo", { ...c.row, ...c.after }).kind).toBe("skip")
  })

  it.prop("update of a row that is gone is skipped both ways", [updateCaseArb], ([c]) => {
    expect(step(c.change, "undo", undefined)).toEqual({ kind: "skip", table: "tasks", id: 7 })
    expect(step(c.change, "redo", undefined)).toEqual({ kind: "skip", table: "tasks", id: 7 })
  })

  it.prop("insert into a hard-deleted table: undo deletes the row, redo puts it back whole", [rowArb, fc.constantFrom("completions", "projects", "time_slots", "quota_periods")], ([row, table]) => {
    const change: RowChange = { op: "insert", table, id: 3, after: row }
    expect(step(change, "undo", row)).toEqual({ kind: "delete", table, id: 3 })
    const undone = run(change, "undo", row)
    expect(undone).toBeUndefined()
    expect(step(change, "redo", undone)).toEqual({ kind: "insert", table, id: 3, row })
    expect(run(change, "redo", undone)).toEqual(row)
    // Nothing to do when the row is already where the direction wants it.
    expect(step(change, "undo", undefined).kind).toBe("skip")
    expect(step(change, "redo", row).kind).toBe("skip")
  })

  it.prop("delete: undo re-creates the row as it was, redo deletes it again", [rowArb, fc.constantFrom("completions", "projects", "time_slots")], ([row, table]) => {
    const change: RowChange = { op: "delete", table, id: 4, before: row }
    const undone = run(change, "undo", undefined)
    expect(undone).toEqual(row)
    expect(run(change, "redo", undone)).toBeUndefined()
    expect(step(change, "undo", row).kind).toBe("skip")
    expect(step(change, "redo", undefined).kind).toBe("skip")
  })
})

describe("the no-clobber rule", () => {
  /** An update plus an intervening edit of some (not all, or all) of its fields. */
  const interveningArb = updateCaseArb.chain((c) =>
    fc.subarray(c.fields, { minLength: 1 }).chain((edited) =>
      fc.tuple(...edited.map((f) => differentFrom(c.after[f]!))).map((newer) => ({
        ...c,
        edited,
        newer: Object.fromEntries(edited.map((f, i) => [f, newer[i]!])) as Row
      }))
    )
  )

  it.prop("undo keeps the newer value of a field edited since and reverts the others", [interveningArb], ([c]) => {
    const now = { ...c.row, ...c.after, ...c.newer }
    const s = step(c.change, "undo", now)
    const result = applyStep(now, s)!
    for (const f of FIELDS) {
      if (c.edited.includes(f)) expect(result[f]).toEqual(c.newer[f])
      else if (c.fields.includes(f)) expect(result[f]).toEqual(c.row[f])
      else expect(result[f]).toEqual(now[f])
    }
    if (s.kind === "update") {
      expect(Object.keys(s.writes).sort()).toEqual(c.fields.filter((f) => !c.edited.includes(f)).sort())
    } else {
      // Every field of the action was edited since: nothing is left to take back.
      expect(s.kind).toBe("skip")
      expect(c.edited.length).toBe(c.fields.length)
    }
  })

  it.prop("redo keeps a value edited since the undo and re-applies the others", [interveningArb], ([c]) => {
    // After the undo the row holds `before`; then some fields are edited again.
    const newerThanBefore = Object.fromEntries(
      Object.entries(c.newer).filter(([f, v]) => JSON.stringify(v) !== JSON.stringify(c.row[f]))
    ) as Row
    const now = { ...c.row, ...newerThanBefore }
    const result = run(c.change, "redo", now)!
    for (const f of c.fields) {
      expect(result[f]).toEqual(f in newerThanBefore ? newerThanBefore[f] : c.after[f])
    }
  })

  it("worked example: priority edited since keeps its value, the title goes back", () => {
    const change: RowChange = {
      op: "update",
      table: "tasks",
      id: 1,
      before: { priority: 0, title: "Pay rent" },
      after: { priority: 2, title: "Pay the rent" }
    }
    const now = { priority: 4, title: "Pay the rent", notes: "" }
    expect(step(change, "undo", now)).toEqual({ kind: "update", table: "tasks", id: 1, writes: { title: "Pay rent" } })
    expect(run(change, "undo", now)).toEqual({ priority: 4, title: "Pay rent", notes: "" })
  })
})

describe("guards", () => {
  const guardedArb = updateCaseArb.filter((c) => c.guardFields.length > 0)

  it.prop("a changed guard field blocks the whole row step, both ways", [guardedArb.chain((c) =>
    fc.constantFrom(...c.guardFields).chain((g) => differentFrom(c.row[g]!).map((v) => ({ ...c, g, v }))))], ([c]) => {
    const afterAction = { ...c.row, ...c.after, [c.g]: c.v }
    expect(step(c.change, "undo", afterAction)).toEqual({ kind: "skip", table: "tasks", id: 7 })
    expect(run(c.change, "undo", afterAction)).toEqual(afterAction)
    const beforeAction = { ...c.row, [c.g]: c.v }
    expect(step(c.change, "redo", beforeAction)).toEqual({ kind: "skip", table: "tasks", id: 7 })
  })

  it.prop("guard fields that still hold their values let the step through", [guardedArb], ([c]) => {
    expect(run(c.change, "undo", { ...c.row, ...c.after })).toEqual(c.row)
  })

  it("a progress log is not taken back once its period has moved on", () => {
    const change: RowChange = {
      op: "update",
      table: "tasks",
      id: 9,
      before: { progress_current: 2 },
      after: { progress_current: 3 },
      guard: { progress_period_start: "2026-03-07T23:00:00.000Z" }
    }
    const rolled = { progress_current: 0, progress_period_start: "2026-03-08T23:00:00.000Z" }
    expect(step(change, "undo", rolled).kind).toBe("skip")
    const same = { progress_current: 3, progress_period_start: "2026-03-07T23:00:00.000Z" }
    expect(run(change, "undo", same)).toEqual({ progress_current: 2, progress_period_start: "2026-03-07T23:00:00.000Z" })
  })

  it("a guard field missing from the row counts as null", () => {
    const change: RowChange = { op: "update", table: "tasks", id: 1, before: { a: 1 }, after: { a: 2 }, guard: { g: null } }
    expect(run(change, "undo", { a: 2 })).toEqual({ a: 1 })
    expect(step(change, "undo", { a: 2, g: "x" }).kind).toBe("skip")
  })
})

describe("created tasks are soft deleted", () => {
  const taskArb = rowArb.map((r) => ({ ...r, deleted_at: null }))

  it.prop("undo of a task insert sets deleted_at; redo clears it; the row is never hard deleted", [taskArb], ([row]) => {
    const change: RowChange = { op: "insert", table: "tasks", id: 5, after: row }
    expect(step(change, "undo", row)).toEqual({ kind: "update", table: "tasks", id: 5, writes: { deleted_at: NOW } })
    const trashed = run(change, "undo", row)
    expect(trashed).toEqual({ ...row, deleted_at: NOW })
    expect(step(change, "redo", trashed)).toEqual({ kind: "update", table: "tasks", id: 5, writes: { deleted_at: null } })
    expect(run(change, "redo", trashed)).toEqual(row)
  })

  it.prop("undo of a task insert already in the trash or gone changes nothing", [taskArb], ([row]) => {
    const change: RowChange = { op: "insert", table: "tasks", id: 5, after: row }
    expect(step(change, "undo", { ...row, deleted_at: "2026-03-01T00:00:00.000Z" }).kind).toBe("skip")
    expect(step(change, "undo", undefined).kind).toBe("skip")
  })

  it.prop("redo of a task insert whose row is gone inserts it; a live row is left alone", [taskArb], ([row]) => {
    const change: RowChange = { op: "insert", table: "tasks", id: 5, after: row }
    expect(step(change, "redo", undefined)).toEqual({ kind: "insert", table: "tasks", id: 5, row })
    expect(step(change, "redo", { ...row, a: "edited since" }).kind).toBe("skip")
  })
})

describe("whole actions (ordered changes)", () => {
  type World = ReadonlyMap<string, Row>
  const key = (table: string, id: number) => `${table}#${id}`

  /** One operation of a simulated action: update or delete an existing row, or insert one. */
  const opArb = fc.record({
    kind: fc.constantFrom("update", "update", "insert", "delete"),
    pick: fc.nat(),
    table: fc.constantFrom("tasks", "completions"),
    row: rowArb,
    fields: fc.subarray([...FIELDS], { minLength: 1 })
  })

  /** Runs the operations on `world` as the pipeline would, recording the changes. */
  const simulate = (world: World, ops: ReadonlyArray<{ kind: string; pick: number; table: string; row: Row; fields: ReadonlyArray<string> }>) => {
    const state = new Map(world)
    const changes: Array<RowChange> = []
    let nextId = 100
    for (const op of ops) {
      const keys = [...state.keys()]
      if (op.kind === "insert" || keys.length === 0) {
        const id = nextId++
        const after = op.table === "tasks" ? { ...op.row, deleted_at: null } : op.row
        state.set(key(op.table, id), after)
        changes.push({ op: "insert", table: op.table, id, after })
        continue
      }
      const k = keys[op.pick % keys.length]!
      const [table, idText] = k.split("#") as [string, string]
      const id = Number(idText)
      const current = state.get(k)!
      if (op.kind === "delete") {
        state.delete(k)
        changes.push({ op: "delete", table, id, before: current })
        continue
      }
      const before: Row = {}
      const after: Row = {}
      for (const f of op.fields) {
        if (JSON.stringify(current[f] ?? null) !== JSON.stringify(op.row[f])) {
          before[f] = current[f] ?? null
          after[f] = op.row[f]!
        }
      }
      if (Object.keys(after).length === 0) continue
      state.set(k, { ...current, ...after })
      changes.push({ op: "update", table, id, before, after })
    }
    return { state: state as World, changes }
  }

  const replay = (world: World, changes: ReadonlyArray<RowChange>, direction: Direction) => {
    const state = new Map(world)
    for (const change of ordered(changes, direction)) {
      const k = key(change.table, change.id)
      const next = applyStep(state.get(k), planStep(change, direction, state.get(k), NOW))
      if (next === undefined) state.delete(k)
      else state.set(k, next)
    }
    return state
  }

  const worldArb = fc.array(fc.tuple(fc.constantFrom("tasks", "completions"), rowArb), { maxLength: 4 }).map((rows) =>
    new Map(rows.map(([table, row], i) => [key(table, i + 1), table === "tasks" ? { ...row, deleted_at: null } : row])) as World
  )

  it.prop("undo of a whole action restores the world, except that created tasks stay in the trash; redo then gives the action's result again", [worldArb, fc.array(opArb, { minLength: 1, maxLength: 8 })], ([world, ops]) => {
    const { changes, state: afterAction } = simulate(world, ops)
    const undone = replay(afterAction, changes, "undo")
    // The expected world: the original rows, plus each task the action created, as it was created, in the trash.
    const expected = new Map(world)
    for (const c of changes) {
      if (c.op === "insert" && c.table === "tasks") expected.set(key(c.table, c.id), { ...c.after, deleted_at: NOW })
    }
    expect(Object.fromEntries(undone)).toEqual(Object.fromEntries(expected))
    const redone = replay(undone, changes, "redo")
    expect(Object.fromEntries(redone)).toEqual(Object.fromEntries(afterAction))
    // A second undo after the redo lands on the same state as the first one.
    expect(Object.fromEntries(replay(redone, changes, "undo"))).toEqual(Object.fromEntries(expected))
  }, { fastCheck: { numRuns: 300 } })

  it("ordered walks undo backwards and redo forwards without touching the log", () => {
    const changes: Array<RowChange> = [
      { op: "insert", table: "completions", id: 1, after: {} },
      { op: "delete", table: "completions", id: 2, before: {} }
    ]
    expect(ordered(changes, "undo").map((c) => c.id)).toEqual([2, 1])
    expect(ordered(changes, "redo").map((c) => c.id)).toEqual([1, 2])
    expect(changes.map((c) => c.id)).toEqual([1, 2])
  })
})
