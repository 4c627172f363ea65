import type { RowChange } from "../changes/Changes.js"
import { type Row, sameValue } from "../kernel/Json.js"

/**
 * Undo and redo of a recorded action, as pure plans over the rows' current values.
 *
 * The no-clobber rule: a field is put back only while it still holds the value the action
 * (or the last redo) left; a field edited since keeps its newer value. An update's guard
 * fields must also still hold their values (a progress log is not taken back once its
 * quota period has ended).
 */

export type Direction = "undo" | "redo"

export type Step =
  | { readonly kind: "update"; readonly table: string; readonly id: number; readonly writes: Row }
  | { readonly kind: "insert"; readonly table: string; readonly id: number; readonly row: Row }
  | { readonly kind: "delete"; readonly table: string; readonly id: number }
  | { readonly kind: "skip"; readonly table: string; readonly id: number }

/** Rows whose creation is undone by trashing them rather than deleting them. */
const SOFT_DELETED = new Set(["tasks"])

/**
 * The step that takes one change back (`undo`) or applies it again (`redo`), given the
 * row as it is now (undefined when it no longer exists). `now` stamps a soft delete.
 */
export const planStep = (change: RowChange, direction: Direction, current: Row | undefined, now: string): Step => {
  const skip: Step = { kind: "skip", table: change.table, id: change.id }
  switch (change.op) {
    case "update": {
      if (current === undefined) return skip
      const guard = (change as { guard?: Row }).guard ?? {}
      for (const [field, value] of Object.entries(guard)) if (!sameValue(current[field] ?? null, value)) return skip
      const [expected, target] = direction === "undo" ? [change.after, change.before] : [change.before, change.after]
      const writes: Row = {}
      for (const field of Object.keys(target)) {
        if (sameValue(current[field] ?? null, expected[field] ?? null)) writes[field] = target[field] ?? null
      }
      return Object.keys(writes).length === 0 ? skip : { kind: "update", table: change.table, id: change.id, writes }
    }
    case "insert": {
      if (SOFT_DELETED.has(change.table)) {
        if (direction === "undo") {
          if (current === undefined || current.deleted_at !== null) return skip
          return { kind: "update", table: change.table, id: change.id, writes: { deleted_at: now } }
        }
        if (current === undefined) return { kind: "insert", table: change.table, id: change.id, row: change.after }
        if (current.deleted_at === null) return skip
        return { kind: "update", table: change.table, id: change.id, writes: { deleted_at: null } }
      }
      if (direction === "undo") return current === undefined ? skip : { kind: "delete", table: change.table, id: change.id }
      return current === undefined ? { kind: "insert", table: change.table, id: change.id, row: change.after } : skip
    }
    case "delete": {
      if (direction === "undo") {
        return current === undefined ? { kind: "insert", table: change.table, id: change.id, row: change.before } : skip
      }
      return current === undefined ? skip : { kind: "delete", table: change.table, id: change.id }
    }
  }
}

/** Undo walks an action's changes backwards; redo walks them forwards. */
export const ordered = (changes: ReadonlyArray<RowChange>, direction: Direction) =>
  direction === "undo" ? [...changes].reverse() : [...changes]

/** Applies a step to an in-memory row (what the database does), for reasoning and tests. */
export const applyStep = (current: Row | undefined, step: Step): Row | undefined => {
  switch (step.kind) {
    case "skip":
      return current
    case "delete":
      return undefined
    case "insert":
      return { ...step.row }
    case "update":
      return current === undefined ? undefined : { ...current, ...step.writes }
  }
}
