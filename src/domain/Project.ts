import { Schema } from "effect"
import { Timestamp } from "./Task.js"

export const Project = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  owner_id: Schema.Int,
  shared: Schema.Boolean,
  sort_order: Schema.Int,
  color: Schema.String,
  description: Schema.String,
  active_count: Schema.Int,
  overdue_count: Schema.Int,
  is_inbox: Schema.Boolean,
  created_at: Timestamp
}).annotations({ identifier: "Project" })

const Name = Schema.String.pipe(
  Schema.filter((s) => s.trim().length > 0 || "must not be empty"),
  Schema.maxLength(200, { message: () => "must be at most 200 characters" })
)
const Color = Schema.String.pipe(Schema.maxLength(50, { message: () => "must be at most 50 characters" }))
const Description = Schema.String.pipe(Schema.maxLength(10_000, { message: () => "must be at most 10000 characters" }))
const SortOrder = Schema.Int.pipe(Schema.between(-1_000_000, 1_000_000))

export const ProjectCreate = Schema.Struct({
  name: Name,
  shared: Schema.optional(Schema.Boolean),
  sort_order: Schema.optional(SortOrder),
  color: Schema.optional(Color),
  description: Schema.optional(Description)
})
export type ProjectCreate = typeof ProjectCreate.Type

export const ProjectPatch = Schema.Struct({
  name: Schema.optional(Name),
  shared: Schema.optional(Schema.Boolean),
  sort_order: Schema.optional(SortOrder),
  color: Schema.optional(Color),
  description: Schema.optional(Description)
})
export type ProjectPatch = typeof ProjectPatch.Type

export const ProjectReorder = Schema.Struct({
  project_ids: Schema.Array(Schema.Int.pipe(Schema.between(1, 2_147_483_647))).pipe(
    Schema.minItems(1),
    Schema.maxItems(1000)
  )
})
