import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import { Schema } from "effect"
import { TaskId } from "../kernel/Ids.js"
import { Task, Timestamp } from "./Task.js"
import { StoredString } from "../kernel/Text.js"
import { Data } from "../http/Envelope.js"

export const NotificationActionPayload = Schema.Struct({
  token: StoredString.pipe(Schema.minLength(1), Schema.maxLength(200)),
  action: Schema.Literal("done", "snooze", "snooze30", "snooze2h", "delete").annotations({
    message: () => ({ message: "must be done, snooze, snooze30, snooze2h or delete", override: true })
  }),
  task_id: TaskId
})

export const VapidKey = Schema.Struct({ public_key: Schema.String, configured: Schema.Boolean })
export const NotificationActed = Schema.Struct({
  action: Schema.String,
  task_id: Schema.Int,
  until: Schema.optional(Timestamp),
  task: Task
})

/** Endpoints without header authentication (spec §5). */
export class PublicApi extends HttpApiGroup.make("public")
  .add(
    HttpApiEndpoint.get("vapidKey", "/api/push/vapid-key").addSuccess(
      Data(VapidKey)
    )
  )
  .add(
    HttpApiEndpoint.post("notificationAction", "/api/notifications/actions").setPayload(NotificationActionPayload).addSuccess(
      Data(NotificationActed)
    )
  )
{}
