import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { pageOf } from "../domain/QueryParams.js"
import { CurrentUser } from "../services/CurrentUser.js"
import { now } from "../services/ServiceClock.js"
import { TaskQueries } from "../services/TaskQueries.js"
import { Tasks } from "../services/Tasks.js"
import { Api } from "./Api.js"
import { sendData, sendJsonText, whole } from "./Envelope.js"

export const TasksHttpLive = HttpApiBuilder.group(Api, "tasks", (handlers) =>
  Effect.gen(function*() {
    const tasks = yield* Tasks
    const queries = yield* TaskQueries

    return handlers
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, (user) =>
          Effect.flatMap(now, (at) => queries.listJson(user, urlParams, at))).pipe(Effect.map((body) => sendJsonText(body))), whole)
      .handle("create", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => tasks.create(user, payload)).pipe(Effect.map((task) => sendData(task, 201))), whole)
      .handle("counts", () =>
        Effect.flatMap(CurrentUser, (user) => Effect.flatMap(now, (at) => queries.counts(user, at))).pipe(
          Effect.map((counts) => sendData(counts))
        ), whole)
      .handle("trash", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, (user) => queries.trashJson(user, pageOf(urlParams))).pipe(
          Effect.map((body) => sendJsonText(body))
        ), whole)
      .handle("get", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => queries.getJson(user, path.id)).pipe(Effect.map((body) => sendJsonText(body))), whole)
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(CurrentUser, (user) => tasks.update(user, path.id, payload)).pipe(Effect.map((task) => sendData(task))), whole)
      .handle("delete", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => tasks.trash(user, path.id)).pipe(Effect.map((task) => sendData(task))), whole)
      .handle("restore", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => tasks.restore(user, path.id)).pipe(Effect.map((task) => sendData(task))), whole)
      .handle("reprocess", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => tasks.reprocess(user, path.id)).pipe(Effect.map((task) => sendData(task))), whole)
  }))
