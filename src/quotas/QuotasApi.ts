import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import { Schema } from "effect"
import { TaskIdParam } from "../kernel/Ids.js"
import { Task } from "../tasks/Task.js"
import { Data } from "../http/Envelope.js"
import { Authentication } from "../http/Security.js"

export const ProgressPayload = Schema.NullOr(
  Schema.Struct({
    delta: Schema.optional(
      Schema.Int.pipe(Schema.between(-100, 100, { message: () => "must be an integer from -100 to 100" }))
    )
  })
)

export const ProgressResult = Schema.extend(Task, Schema.Struct({ met: Schema.Boolean, description: Schema.String }))

export const QuotaList = Schema.Struct({ quotas: Schema.Array(Task), total: Schema.Int, has_any: Schema.Boolean })

/** Quota progress and the quota list (spec §4.2, §4.4). */
export class QuotasApi extends HttpApiGroup.make("quotas")
  .add(
    HttpApiEndpoint.post("progress", "/api/tasks/:id/progress").setPath(TaskIdParam).setPayload(ProgressPayload).addSuccess(
      Data(ProgressResult)
    )
  )
  .add(
    HttpApiEndpoint.get("list", "/api/quotas").addSuccess(
      Data(QuotaList)
    )
  )
  .middleware(Authentication)
{}
