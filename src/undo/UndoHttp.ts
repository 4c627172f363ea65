import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { UndoService } from "./UndoService.js"
import { answerData } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { whole } from "../http/Envelope.js"
import { Redone, Undone, UndoHistory, UndoStatus } from "./UndoApi.js"
import { onlyServices } from "../http/OnlyServices.js"
import { Authentication } from "../http/Security.js"
import { Idempotency } from "../pipeline/Idempotency.js"

export const UndoHttpLive = HttpApiBuilder.group(Api, "undo", (handlers) =>
  Effect.gen(function*() {
    const undo = yield* UndoService
    return handlers
      .handle("undo", ({ payload }) => answerData(Undone)((user) => undo.undo(user, payload?.session_start_id)), whole)
      .handle("redo", ({ payload }) => answerData(Redone)((user) => undo.redo(user, payload?.session_start_id)), whole)
      .handle("status", () => answerData(UndoStatus)(undo.status), whole)
      .handle("history", ({ urlParams }) => answerData(UndoHistory)((user) => undo.history(user, urlParams.limit ?? 50)), whole)
  })).pipe(onlyServices(UndoService, Authentication, Idempotency))
