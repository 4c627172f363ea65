import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import { Schema } from "effect"
import { SlotIds } from "../kernel/Ids.js"
import { TimeSlot } from "./TimeSlot.js"
import { nonBlank, StoredString } from "../kernel/Text.js"
import { Data } from "../http/Envelope.js"
import { Authentication } from "../http/Security.js"

const Clock = Schema.String.pipe(
  Schema.pattern(/^([01]\d|2[0-3]):[0-5]\d$/, { message: () => "must be a time HH:MM (00:00-23:59)" })
)
const Label = StoredString.pipe(
  nonBlank(),
  Schema.maxLength(100, { message: () => "must be at most 100 characters" })
)

export const SlotChange = Schema.Struct({
  slot: TimeSlot,
  reminders_moved: Schema.Int,
  quotas_moved: Schema.Int,
  undo_id: Schema.NullOr(Schema.Int)
})

const SlotIdParam = Schema.Struct({ id: SlotIds.FromString })

export const SlotList = Schema.Struct({ time_slots: Schema.Array(TimeSlot), count: Schema.Int })

/** Reminder time slots (spec §4.4, CONTRACT §8). */
export class TimeSlotsApi extends HttpApiGroup.make("timeSlots")
  .add(
    HttpApiEndpoint.get("list", "/api/time-slots").addSuccess(
      Data(SlotList)
    )
  )
  .add(
    HttpApiEndpoint.post("create", "/api/time-slots").setPayload(Schema.Struct({ label: Label, start_time: Clock }))
      .addSuccess(Data(TimeSlot), { status: 201 })
  )
  .add(
    HttpApiEndpoint.patch("update", "/api/time-slots/:id").setPath(SlotIdParam).setPayload(
      Schema.Struct({ label: Schema.optional(Label), start_time: Schema.optional(Clock) })
    ).addSuccess(Data(SlotChange))
  )
  .add(HttpApiEndpoint.del("delete", "/api/time-slots/:id").setPath(SlotIdParam).addSuccess(Data(SlotChange)))
  .middleware(Authentication)
{}
