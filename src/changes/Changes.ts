import type { JsonValue, Row } from "../kernel/Json.js"

/**
 * One row touched by an action, as the undo log keeps it. `before`/`after` hold only the
 * fields the action changed (all fields for an insert or delete), so undo restores exactly
 * what the action did and nothing else. `Id`: an inserted row's id, which the mutation
 * pipeline may know only once its commit statement has run.
 */
export type RowChange<Id = number> =
  | { readonly op: "insert"; readonly table: string; readonly id: Id; readonly after: Row }
  | {
    readonly op: "update"
    readonly table: string
    readonly id: number
    readonly before: Row
    readonly after: Row
    /** Fields that must still hold these values for undo/redo to touch the row. */
    readonly guard?: Row
  }
  | { readonly op: "delete"; readonly table: string; readonly id: number; readonly before: Row }

/** Names recorded as `undone_action` / `redone_action`. */
export type ActionName =
  | "create"
  | "edit"
  | "done"
  | "undone"
  | "snooze"
  | "skip"
  | "delete"
  | "restore"
  | "reprocess"
  | "enrich"
  | "reminder_roll"
  | "rollover"
  | "undo"
  | "redo"
  | "progress"
  | "quota_prompt"
  | "bulk_done"
  | "bulk_snooze"
  | "bulk_edit"
  | "time_slot_create"
  | "time_slot_edit"
  | "time_slot_delete"
  | "project_create"
  | "project_edit"
  | "project_delete"
  | "project_reorder"
  | "preferences"
  | "token_create"
  | "token_delete"

export type EventName =
  | "task.created"
  | "task.updated"
  | "task.completed"
  | "task.deleted"
  | "task.snoozed"
  | "task.skipped"
  | "task.progressed"

export const EVENT_NAMES: ReadonlyArray<EventName> = [
  "task.created",
  "task.updated",
  "task.completed",
  "task.deleted",
  "task.snoozed",
  "task.skipped",
  "task.progressed"
]

export interface DomainEvent {
  readonly event: EventName
  readonly taskId: number | null
  readonly data: { readonly [k: string]: JsonValue }
}

export type StatName = "completions" | "tasks_created" | "snoozes"

/** The fields an update changed, in a stable order, for `fields_changed`. */
export const changedFields = (changes: ReadonlyArray<RowChange>, table: string, id: number): ReadonlyArray<string> => {
  const fields = new Set<string>()
  for (const c of changes) {
    if (c.table === table && c.id === id && c.op === "update") for (const k of Object.keys(c.after)) fields.add(k)
  }
  return [...fields]
}
