import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import {
  BulkCountsSchema,
  BulkDoneCountsSchema,
  BulkDonePayload,
  BulkEditPayload,
  BulkSnoozePayload,
  SnoozeOverduePayload
} from "./Bulk.js"
import { Authentication } from "../http/Security.js"

/** Bulk operations answer the bare counts object, not wrapped in data (spec §1, §4.3). */
export class BulkApi extends HttpApiGroup.make("bulk")
  .add(HttpApiEndpoint.post("done", "/api/tasks/bulk/done").setPayload(BulkDonePayload).addSuccess(BulkDoneCountsSchema))
  .add(HttpApiEndpoint.post("snooze", "/api/tasks/bulk/snooze").setPayload(BulkSnoozePayload).addSuccess(BulkCountsSchema))
  .add(
    HttpApiEndpoint.post("snoozeOverdue", "/api/tasks/bulk/snooze-overdue").setPayload(SnoozeOverduePayload).addSuccess(
      BulkCountsSchema
    )
  )
  .add(HttpApiEndpoint.post("edit", "/api/tasks/bulk/edit").setPayload(BulkEditPayload).addSuccess(BulkCountsSchema))
  .middleware(Authentication)
{}
