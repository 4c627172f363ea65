import { Schema } from "effect"
import { Timestamp } from "../tasks/Task.js"
import { nonBlank, StoredString } from "../kernel/Text.js"

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

const Name = StoredString.pipe(
  nonBlank(),
  Schema.maxLength(200, { message: () => "must be at most 200 characters" })
)
const Color = StoredString.pipe(Schema.maxLength(50, { message: () => "must be at most 50 characters" }))
const Description = StoredString.pipe(Schema.maxLength(10_000, { message: () => "must be at most 10000 characters" }))
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
  project_ids: Schema.Array(Schema.Int.pipe(Schema.between(1, 2_147_483_647), Schema.brand("ProjectId"))).pipe(
    Schema.minItems(1),
    Schema.maxItems(1000)
  )
})

/** What decides who can see a project: a shared project is visible to every user (CONTRACT §4). */
export interface ProjectAccess {
  readonly owner_id: number
  readonly shared: boolean
}

export const canSeeProject = (project: ProjectAccess, userId: number) => project.shared || project.owner_id === userId

export const PROJECT_NOT_FOUND = "Project not found"
export const OWNER_CANNOT_SEE_PROJECT =
  "The task's owner cannot see this project: only their own projects and shared ones can hold their tasks"

/**
 * Why `actorId` may not file a task owned by `ownerId` in `project` (undefined: they may).
 * Both must see the project; otherwise moving a shared task into the mover's private
 * project would take it out of its owner's reach.
 */
export const projectRefusal = (project: ProjectAccess | undefined, actorId: number, ownerId: number): string | undefined => {
  if (project === undefined || !canSeeProject(project, actorId)) return PROJECT_NOT_FOUND
  if (!canSeeProject(project, ownerId)) return OWNER_CANNOT_SEE_PROJECT
  return undefined
}
