import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { BulkCountsSchema, BulkDoneCountsSchema } from "./Bulk.js"
import { BulkActions } from "./BulkActions.js"
import { answerBare } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { whole } from "../http/Envelope.js"
import { onlyServices } from "../http/OnlyServices.js"
import { Authentication } from "../http/Security.js"
import { Idempotency } from "../pipeline/Idempotency.js"

/** Bulk operations answer the bare counts object, not wrapped in data (spec §1, §4.3). */
export const BulkHttpLive = HttpApiBuilder.group(Api, "bulk", (handlers) =>
  Effect.gen(function*() {
    const bulk = yield* BulkActions
    return handlers
      .handle("done", ({ payload }) =>
        answerBare(BulkDoneCountsSchema)((user) => bulk.done(user, payload.ids, payload.close_period === true)), whole)
      .handle("snooze", ({ payload }) =>
        answerBare(BulkCountsSchema)((user) => bulk.snooze(user, payload.task_ids ?? payload.ids ?? [], payload.until)), whole)
      .handle("snoozeOverdue", ({ payload }) => answerBare(BulkCountsSchema)((user) => bulk.snoozeOverdue(user, payload.until)), whole)
      .handle("edit", ({ payload }) => answerBare(BulkCountsSchema)((user) => bulk.edit(user, payload)), whole)
  })).pipe(onlyServices(BulkActions, Authentication, Idempotency))
