import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as OpenApi from "@effect/platform/OpenApi"
import { Schema } from "effect"
import { MAX_FEED_ITEMS } from "./CalendarFeed.js"
import { Timestamp } from "../tasks/Task.js"
import { Data } from "../http/Envelope.js"
import { Authentication } from "../http/Security.js"

export const CalendarKey = Schema.Struct({
  key: Schema.String,
  url: Schema.String,
  webcal_url: Schema.String,
  created_at: Timestamp
}).annotations({ identifier: "CalendarKey" })

/**
 * Missing is allowed here so that no key answers 401 like a wrong one, not a 400. A key
 * given twice is a 400 whose message does not repeat the keys.
 */
export const CalendarFeedQuery = Schema.Struct({
  key: Schema.optional(
    Schema.String.annotations({ message: () => ({ message: "must be given once", override: true }) })
  )
})

export const CalendarText = HttpApiSchema.Text({ contentType: "text/calendar" }).annotations({
  description: "RFC 5545 iCalendar, UTF-8, CRLF lines folded at 75 octets"
})

export const CalendarKeyDeleted = Schema.Struct({ deleted: Schema.Literal(true) })

/** Making and revoking the calendar feed's key. */
export class CalendarKeyApi extends HttpApiGroup.make("calendarKey")
  .add(
    HttpApiEndpoint.post("createCalendarKey", "/api/calendar/key")
      .addSuccess(Data(CalendarKey), { status: 201 })
      .annotate(
        OpenApi.Description,
        "A new secret key for GET /api/calendar.ics, shown this once; it replaces the previous key, which stops working"
      )
  )
  .add(
    HttpApiEndpoint.del("deleteCalendarKey", "/api/calendar/key")
      .addSuccess(Data(CalendarKeyDeleted))
      .annotate(OpenApi.Description, "Revokes the feed key; 404 when there is none")
  )
  .middleware(Authentication)
{}

/** The feed itself: the key in the URL is its only credential, so calendar apps can subscribe. */
export class CalendarFeedApi extends HttpApiGroup.make("calendarFeed")
  .add(
    HttpApiEndpoint.get("calendarFeed", "/api/calendar.ics")
      .setUrlParams(CalendarFeedQuery)
      .addSuccess(CalendarText)
      .annotate(
        OpenApi.Description,
        `The key owner's open tasks with a due date (own and shared projects; quotas left out) as VTODOs, ` +
          `soonest due first, at most ${MAX_FEED_ITEMS}. A missing, wrong or revoked key answers 401.`
      )
  )
{}
