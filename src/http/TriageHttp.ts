import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { CurrentUser } from "../services/CurrentUser.js"
import { Exporter } from "../services/Exporter.js"
import { Review } from "../services/Review.js"
import { now } from "../services/ServiceClock.js"
import { Triage } from "../services/Triage.js"
import { answerData, answerJsonText } from "./Answer.js"
import { Api } from "./Api.js"
import { whole } from "./Envelope.js"
import { ProcessLists, ReviewExecuted, ReviewSession } from "./TriageApi.js"

export const TriageHttpLive = HttpApiBuilder.group(Api, "triage", (handlers) =>
  Effect.gen(function*() {
    const triage = yield* Triage
    const review = yield* Review
    const exporter = yield* Exporter
    return handlers
      .handle("process", () => answerJsonText(ProcessLists)(triage.process), whole)
      .handle("review", () => answerData(ReviewSession)(review.start), whole)
      .handle("executeReview", ({ payload }) =>
        answerData(ReviewExecuted)((user) => review.execute(user, payload.session_id, payload.actions)), whole)
      .handle("export", ({ urlParams }) =>
        Effect.gen(function*() {
          const user = yield* CurrentUser
          const day = (yield* now).toISOString().slice(0, 10)
          if (urlParams.format === "csv") {
            const type = urlParams.type!
            const body = yield* exporter.csv(user, type)
            return HttpServerResponse.stream(body, {
              contentType: "text/csv; charset=utf-8",
              headers: { "content-disposition": `attachment; filename="steady-${type}-${day}.csv"` }
            })
          }
          const body = yield* exporter.json(user)
          return HttpServerResponse.stream(body, {
            contentType: "application/json",
            headers: { "content-disposition": `attachment; filename="steady-export-${day}.json"` }
          })
        }), whole)
  }))
