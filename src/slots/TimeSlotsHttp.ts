import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { TimeSlot } from "./TimeSlot.js"
import { TimeSlots } from "./TimeSlots.js"
import { answerData } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { whole } from "../http/Envelope.js"
import { SlotChange, SlotList } from "./TimeSlotsApi.js"
import { onlyServices } from "../http/OnlyServices.js"
import { Authentication } from "../http/Security.js"
import { Idempotency } from "../pipeline/Idempotency.js"

export const TimeSlotsHttpLive = HttpApiBuilder.group(Api, "timeSlots", (handlers) =>
  Effect.gen(function*() {
    const slots = yield* TimeSlots
    return handlers
      .handle("list", () => answerData(SlotList)(slots.list), whole)
      .handle("create", ({ payload }) => answerData(TimeSlot, 201)((user) => slots.create(user, payload.label, payload.start_time)), whole)
      .handle("update", ({ path, payload }) => answerData(SlotChange)((user) => slots.update(user, path.id, payload)), whole)
      .handle("delete", ({ path }) => answerData(SlotChange)((user) => slots.remove(user, path.id)), whole)
  })).pipe(onlyServices(TimeSlots, Authentication, Idempotency))
