import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import { Schema } from "effect"
import { Timestamp } from "../tasks/Task.js"
import { Data } from "../http/Envelope.js"
import { Authentication } from "../http/Security.js"

const SessionStart = Schema.NullOr(
  Schema.Struct({ session_start_id: Schema.optional(Schema.Int.pipe(Schema.between(0, 2_147_483_647))) })
)

const Counts = { tasks_affected: Schema.Int, undoable_count: Schema.Int, redoable_count: Schema.Int }

const LimitParam = Schema.String.pipe(
  Schema.pattern(/^\d{1,4}$/, { message: () => "must be an integer from 1 to 1000" }),
  Schema.compose(Schema.NumberFromString),
  Schema.compose(Schema.Int.pipe(Schema.between(1, 1000, { message: () => "must be an integer from 1 to 1000" })))
).annotations({ jsonSchema: { type: "integer", minimum: 1, maximum: 1000, description: "default 50" } })

export const Undone = Schema.Struct({ undone_action: Schema.String, description: Schema.String, ...Counts })
export const Redone = Schema.Struct({ redone_action: Schema.String, description: Schema.String, ...Counts })
export const UndoStatus = Schema.Struct({ latest_id: Schema.NullOr(Schema.Int), undoable_count: Schema.Int, redoable_count: Schema.Int })
export const UndoHistory = Schema.Struct({
  history: Schema.Array(Schema.Struct({
    id: Schema.Int,
    action: Schema.String,
    description: Schema.String,
    created_at: Timestamp,
    undone: Schema.Boolean
  })),
  count: Schema.Int
})

/** Undo and redo (spec §4.6) and the log behind them (CONTRACT §8). */
export class UndoApi extends HttpApiGroup.make("undo")
  .add(
    HttpApiEndpoint.post("undo", "/api/undo").setPayload(SessionStart).addSuccess(
      Data(Undone)
    )
  )
  .add(
    HttpApiEndpoint.post("redo", "/api/redo").setPayload(SessionStart).addSuccess(
      Data(Redone)
    )
  )
  .add(
    HttpApiEndpoint.get("status", "/api/undo/status").addSuccess(
      Data(UndoStatus)
    )
  )
  .add(
    HttpApiEndpoint.get("history", "/api/undo/history").setUrlParams(Schema.Struct({ limit: Schema.optional(LimitParam) }))
      .addSuccess(
        Data(UndoHistory)
      )
  )
  .middleware(Authentication)
{}
