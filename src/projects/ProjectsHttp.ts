import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Project } from "./Project.js"
import { Projects } from "./Projects.js"
import { answerData } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { whole } from "../http/Envelope.js"
import { ProjectDeleted, ProjectList, Reordered } from "./ProjectsApi.js"
import { onlyServices } from "../http/OnlyServices.js"
import { Authentication } from "../http/Security.js"
import { Idempotency } from "../pipeline/Idempotency.js"

export const ProjectsHttpLive = HttpApiBuilder.group(Api, "projects", (handlers) =>
  Effect.gen(function*() {
    const projects = yield* Projects
    return handlers
      .handle("list", () => answerData(ProjectList)(projects.list), whole)
      .handle("create", ({ payload }) => answerData(Project, 201)((user) => projects.create(user, payload)), whole)
      .handle("reorder", ({ payload }) => answerData(Reordered)((user) => projects.reorder(user, payload.project_ids)), whole)
      .handle("get", ({ path }) => answerData(Project)((user) => projects.read(user, path.id)), whole)
      .handle("update", ({ path, payload }) => answerData(Project)((user) => projects.update(user, path.id, payload)), whole)
      .handle("delete", ({ path }) => answerData(ProjectDeleted)((user) => projects.remove(user, path.id)), whole)
  })).pipe(onlyServices(Projects, Authentication, Idempotency))
