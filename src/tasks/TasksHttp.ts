import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { pageOf } from "../kernel/QueryParams.js"
import { Task, TaskCounts, TaskList, TaskWithChanges, TaskWithMessage } from "./Task.js"
import { TaskQueries } from "./TaskQueries.js"
import { Tasks } from "./Tasks.js"
import { answerData, answerJsonText } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { whole } from "../http/Envelope.js"
import { keyedData } from "../http/IdempotentWrites.js"
import { onlyServices } from "../http/OnlyServices.js"
import { Authentication } from "../http/Security.js"
import { Idempotency } from "../pipeline/Idempotency.js"

export const TasksHttpLive = HttpApiBuilder.group(Api, "tasks", (handlers) =>
  Effect.gen(function*() {
    const tasks = yield* Tasks
    const queries = yield* TaskQueries

    return handlers
      .handle("list", ({ urlParams }) => answerJsonText(TaskList)((user) => queries.listJson(user, urlParams)), whole)
      .handle("create", ({ payload }) =>
        keyedData(Task, 201)(
          (user) => tasks.create(user, payload),
          (user, keyed) => tasks.createKeyed(user, payload, keyed)
        ), whole)
      .handle("counts", () => answerData(TaskCounts)(queries.counts), whole)
      .handle("trash", ({ urlParams }) => answerJsonText(TaskList)((user) => queries.trashJson(user, pageOf(urlParams))), whole)
      .handle("get", ({ path }) => answerJsonText(Task)((user) => queries.getJson(user, path.id)), whole)
      .handle("update", ({ path, payload }) =>
        keyedData(TaskWithChanges)(
          (user) => tasks.update(user, path.id, payload),
          (user, keyed) => tasks.updateKeyed(user, path.id, payload, keyed)
        ), whole)
      .handle("delete", ({ path }) => answerData(TaskWithMessage)((user) => tasks.trash(user, path.id)), whole)
      .handle("restore", ({ path }) => answerData(Task)((user) => tasks.restore(user, path.id)), whole)
      .handle("reprocess", ({ path }) => answerData(Task)((user) => tasks.reprocess(user, path.id)), whole)
  })).pipe(onlyServices(Tasks, TaskQueries, Authentication, Idempotency))
