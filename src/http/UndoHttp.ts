import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CurrentUser } from "../services/CurrentUser.js"
import { UndoService } from "../services/UndoService.js"
import { Api } from "./Api.js"
import { sendData, whole } from "./Envelope.js"

export const UndoHttpLive = HttpApiBuilder.group(Api, "undo", (handlers) =>
  Effect.gen(function*() {
    const undo = yield* UndoService
    return handlers
      .handle("undo", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => undo.undo(user, payload?.session_start_id)).pipe(Effect.map((r) => sendData(r))), whole)
      .handle("redo", ({ payload }) =>
        Effect.flatMap(CurrentUser, (user) => undo.redo(user, payload?.session_start_id)).pipe(Effect.map((r) => sendData(r))), whole)
      .handle("status", () => Effect.flatMap(CurrentUser, undo.status).pipe(Effect.map((r) => sendData(r))), whole)
      .handle("history", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, (user) => undo.history(user, urlParams.limit ?? 50)).pipe(Effect.map((r) => sendData(r))), whole)
  }))
