import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { ProjectIdParam } from "../domain/Ids.js"
import { Project, ProjectCreate, ProjectPatch, ProjectReorder } from "../domain/Project.js"
import { Data } from "./Envelope.js"
import { Authentication } from "./Security.js"

export class ProjectsApi extends HttpApiGroup.make("projects")
  .add(
    HttpApiEndpoint.get("list", "/api/projects").addSuccess(
      Data(Schema.Struct({ projects: Schema.Array(Project), count: Schema.Int }))
    )
  )
  .add(HttpApiEndpoint.post("create", "/api/projects").setPayload(ProjectCreate).addSuccess(Data(Project), { status: 201 }))
  .add(
    HttpApiEndpoint.patch("reorder", "/api/projects/reorder").setPayload(ProjectReorder).addSuccess(
      Data(Schema.Struct({ reordered: Schema.Int }))
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
      Data(Schema.Struct({ deleted: Schema.Literal(true), tasks_moved_to_inbox: Schema.Int }))
    )
  )
  .middleware(Authentication)
{}
