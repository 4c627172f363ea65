import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as OpenApi from "@effect/platform/OpenApi"
import { TooManyRequestsWire } from "../kernel/Errors.js"
import { TaskIdParam } from "../kernel/Ids.js"
import {
  Task,
  TaskCounts,
  TaskCreate,
  TaskList,
  TaskListQuery,
  TaskPatch,
  TaskWithChanges,
  TaskWithMessage,
  TrashQuery
} from "./Task.js"
import { Data } from "../http/Envelope.js"
import { Authentication } from "../http/Security.js"

export class TasksApi extends HttpApiGroup.make("tasks")
  .add(HttpApiEndpoint.get("list", "/api/tasks").setUrlParams(TaskListQuery).addSuccess(Data(TaskList)))
  .add(HttpApiEndpoint.post("create", "/api/tasks").setPayload(TaskCreate).addSuccess(Data(Task), { status: 201 }))
  .add(HttpApiEndpoint.get("counts", "/api/tasks/counts").addSuccess(Data(TaskCounts)))
  .add(HttpApiEndpoint.get("trash", "/api/trash").setUrlParams(TrashQuery).addSuccess(Data(TaskList)))
  .add(HttpApiEndpoint.get("get", "/api/tasks/:id").setPath(TaskIdParam).addSuccess(Data(Task)))
  .add(
    HttpApiEndpoint.patch("update", "/api/tasks/:id").setPath(TaskIdParam).setPayload(TaskPatch).addSuccess(
      Data(TaskWithChanges)
    )
  )
  .add(HttpApiEndpoint.del("delete", "/api/tasks/:id").setPath(TaskIdParam).addSuccess(Data(TaskWithMessage)))
  .add(HttpApiEndpoint.post("restore", "/api/tasks/:id/restore").setPath(TaskIdParam).addSuccess(Data(Task)))
  .add(
    HttpApiEndpoint.post("reprocess", "/api/tasks/:id/reprocess").setPath(TaskIdParam).addSuccess(Data(Task))
      .addError(TooManyRequestsWire)
      .annotate(
        OpenApi.Description,
        "Re-queues AI enrichment from original_title. The task's owner only (404 for anyone else). 429 with Retry-After past 10 a minute per user."
      )
  )
  .middleware(Authentication)
{}
