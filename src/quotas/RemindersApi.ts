import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import { Schema } from "effect"
import { Task } from "../tasks/Task.js"
import { QuotaPromptSchema, TimeSlot } from "../slots/TimeSlot.js"
import { StoredString } from "../kernel/Text.js"
import { Data } from "../http/Envelope.js"
import { Authentication } from "../http/Security.js"

export const PromptKeys = Schema.Struct({
  // The key format is documented; a key that parses but names no prompt of today is still a 400.
  keys: Schema.Array(
    StoredString.pipe(Schema.minLength(1), Schema.maxLength(100)).annotations({
      jsonSchema: { maxLength: 100, pattern: "^q:[0-9]{1,10}:[0-9]{1,4}:[0-9]{4}-[0-9]{2}-[0-9]{2}$" }
    })
  ).pipe(Schema.minItems(1), Schema.maxItems(500))
})

export const PromptResult = Schema.Struct({ considered: Schema.Int, did: Schema.Int, tasks: Schema.Array(Task) })
export const PromptsRestored = Schema.Struct({ restored: Schema.Int, tasks: Schema.Array(Task) })
export const TodaysReminders = Schema.Struct({
  date: Schema.String,
  groups: Schema.Array(Schema.Struct({
    slot: TimeSlot,
    reminders: Schema.Array(Task),
    prompts: Schema.Array(QuotaPromptSchema),
    count: Schema.Int,
    considered: Schema.Int
  })),
  total: Schema.Int,
  prompts_total: Schema.Int,
  has_any: Schema.Boolean
})

/** Today's reminders and quota prompts by time slot, and the prompt actions. */
export class RemindersApi extends HttpApiGroup.make("reminders")
  .add(
    HttpApiEndpoint.get("list", "/api/reminders").addSuccess(
      Data(TodaysReminders)
    )
  )
  .add(HttpApiEndpoint.post("did", "/api/quota-prompts/did").setPayload(PromptKeys).addSuccess(Data(PromptResult)))
  .add(HttpApiEndpoint.post("consider", "/api/quota-prompts/consider").setPayload(PromptKeys).addSuccess(Data(PromptResult)))
  .add(
    HttpApiEndpoint.post("restore", "/api/quota-prompts/restore").setPayload(PromptKeys).addSuccess(
      Data(PromptsRestored)
    )
  )
  .middleware(Authentication)
{}
