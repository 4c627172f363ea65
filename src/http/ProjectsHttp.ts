import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CurrentUser } from "../services/CurrentUser.js"
import { Projects } from "../services/Projects.js"
import { Api } from "./Api.js"
import { sendData, whole } from "./Envelope.js"

export const ProjectsHttpLive = HttpApiBuilder.group(Api, "projects", (handlers) =>
  Effect.gen(function*() {
    const projects = yield* Projects
    return handlers
      .handle("list", () => Effect.flatMap(CurrentUser, projects.list).pipe(Effect.map((body) => sendData(body))), whole)
      .handle("create", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => projects.create(user, payload)).pipe(Effect.map((p) => sendData(p, 201))), whole)
      .handle("reorder", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => projects.reorder(user, payload.project_ids)).pipe(Effect.map((r) => sendData(r))), whole)
      .handle("get", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => projects.read(user, path.id)).pipe(Effect.map((p) => sendData(p))), whole)
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(CurrentUser, (user) => projects.update(user, path.id, payload)).pipe(Effect.map((p) => sendData(p))), whole)
      .handle("delete", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => projects.remove(user, path.id)).pipe(Effect.map((r) => sendData(r))), whole)
  }))
