import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { ErrorEnvelope, TooManyRequestsWire } from "../kernel/Errors.js"
import { IntParam, MAX_LIMIT } from "../kernel/QueryParams.js"
import { Project } from "../projects/Project.js"
import { Task, Timestamp } from "../tasks/Task.js"
import { TimeSlot } from "../slots/TimeSlot.js"
import { Data } from "../http/Envelope.js"
import { Authentication } from "../http/Security.js"

export const DEFAULT_CHANGES_LIMIT = 100

const Cursor = Schema.String.annotations({
  description: "An opaque position in the change feed (22 characters, base64url)",
  examples: ["AAAAAAAAAvEAAAAAAAAAEg"]
})

export const Change = Schema.Struct({
  cursor: Cursor,
  at: Timestamp,
  kind: Schema.Literal("task", "project", "time_slot"),
  id: Schema.Int,
  op: Schema.Literal("upsert", "delete"),
  data: Schema.Union(Task, Project, TimeSlot, Schema.Null).annotations({
    description: "The object as its own GET renders it now; null for a delete (or an object the caller can no longer see)"
  })
}).annotations({ identifier: "Change" })

export const ChangePage = Schema.Struct({
  changes: Schema.Array(Change),
  next_cursor: Cursor,
  has_more: Schema.Boolean
}).annotations({ identifier: "ChangePage" })

export const ChangesQuery = Schema.Struct({
  since: Schema.optional(Cursor),
  limit: Schema.optional(IntParam(1, MAX_LIMIT, `page size, default ${DEFAULT_CHANGES_LIMIT}`))
})

export const EventsQuery = Schema.Struct({ since: Schema.optional(Cursor) })

export const EventsHeaders = Schema.Struct({
  "last-event-id": Schema.optional(Cursor.annotations({ description: "Resume after this cursor (sent by EventSource on reconnect); wins over `since`" }))
})

/** 410: the cursor is older than the retention; `details.oldest_cursor` is where to resume. */
export const CursorExpiredWire = ErrorEnvelope.annotations({
  identifier: "CursorExpired",
  ...HttpApiSchema.annotations({ status: 410, description: "GONE" })
})

export class ChangesApi extends HttpApiGroup.make("changes")
  .add(
    HttpApiEndpoint.get("list", "/api/changes").setUrlParams(ChangesQuery).addSuccess(Data(ChangePage)).addError(
      CursorExpiredWire
    )
  )
  .add(
    HttpApiEndpoint.get("events", "/api/events").setUrlParams(EventsQuery).setHeaders(EventsHeaders).addSuccess(
      HttpApiSchema.Text({ contentType: "text/event-stream" }).annotations({
        description: "Server-Sent Events: `id:` is the change's cursor, `data:` the Change as JSON; comment lines as heartbeats"
      })
    ).addError(CursorExpiredWire).addError(TooManyRequestsWire).annotate(
      OpenApi.Description,
      "The change feed as it commits. The stream ends when the token or session that opened it is revoked. " +
        "429 with Retry-After past 10 open streams per user or the instance's limit (SERVICE_MAX_EVENT_STREAMS, default 1000)."
    )
  )
  .middleware(Authentication)
{}
