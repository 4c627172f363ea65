import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CurrentUser } from "../services/CurrentUser.js"
import { TimeSlots } from "../services/TimeSlots.js"
import { Api } from "./Api.js"
import { sendData, whole } from "./Envelope.js"

export const TimeSlotsHttpLive = HttpApiBuilder.group(Api, "timeSlots", (handlers) =>
  Effect.gen(function*() {
    const slots = yield* TimeSlots
    return handlers
      .handle("list", () => Effect.flatMap(CurrentUser, slots.list).pipe(Effect.map((r) => sendData(r))), whole)
      .handle("create", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => slots.create(user, payload.label, payload.start_time)).pipe(
          Effect.map((r) => sendData(r, 201))
        ), whole)
      .handle("update", ({ path, payload }) =>
        Effect.flatMap(CurrentUser, (user) => slots.update(user, path.id, payload)).pipe(Effect.map((r) => sendData(r))), whole)
      .handle("delete", ({ path }) =>
        Effect.flatMap(CurrentUser, (user) => slots.remove(user, path.id)).pipe(Effect.map((r) => sendData(r))), whole)
  }))
