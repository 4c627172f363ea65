import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import { Schema } from "effect"
import { ProjectIdParam } from "../kernel/Ids.js"
import { Project, ProjectCreate, ProjectPatch, ProjectReorder } from "./Project.js"
import { Data } from "../http/Envelope.js"
import { Authentication } from "../http/Security.js"

export const ProjectList = Schema.Struct({ projects: Schema.Array(Project), count: Schema.Int })
export const Reordered = Schema.Struct({ reordered: Schema.Int })
export const ProjectDeleted = Schema.Struct({ deleted: Schema.Literal(true), tasks_moved_to_inbox: Schema.Int })

export class ProjectsApi extends HttpApiGroup.make("projects")
  .add(
    HttpApiEndpoint.get("list", "/api/projects").addSuccess(
      Data(ProjectList)
    )
  )
  .add(HttpApiEndpoint.post("create", "/api/projects").setPayload(ProjectCreate).addSuccess(Data(Project), { status: 201 }))
  .add(
    HttpApiEndpoint.patch("reorder", "/api/projects/reorder").setPayload(ProjectReorder).addSuccess(
      Data(Reordered)
    )
  )
  .add(HttpApiEndpoint.get("get", "/api/projects/:id").setPath(ProjectIdParam).addSuccess(Data(Project)))
  .add(
    HttpApiEndpoint.patch("update", "/api/projects/:id").setPath(ProjectIdParam).setPayload(ProjectPatch).addSuccess(
      Data(Project)
    )
  )
  .add(
    HttpApiEndpoint.del("delete", "/api/projects/:id").setPath(ProjectIdParam).addSuccess(
      Data(ProjectDeleted)
    )
  )
  .middleware(Authentication)
{}
