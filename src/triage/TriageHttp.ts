import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, type Stream } from "effect"
import { CurrentUser } from "../kernel/CurrentUser.js"
import { Exporter } from "../history/Exporter.js"
import { Review } from "./Review.js"
import { Triage } from "./TriageService.js"
import { answerData, answerJsonText } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { whole } from "../http/Envelope.js"
import { ProcessLists, ReviewExecuted, ReviewSession } from "./TriageApi.js"
import { onlyServices } from "../http/OnlyServices.js"
import { Authentication } from "../http/Security.js"
import { Idempotency } from "../pipeline/Idempotency.js"

/** A streamed file the browser saves under its name. */
const download = (contentType: string) => ({ body, filename }: { readonly body: Stream.Stream<Uint8Array>; readonly filename: string }) =>
  HttpServerResponse.stream(body, { contentType, headers: { "content-disposition": `attachment; filename="${filename}"` } })

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
        Effect.flatMap(CurrentUser, (user) =>
          urlParams.format === "csv"
            ? Effect.map(exporter.csv(user, urlParams.type!), download("text/csv; charset=utf-8"))
            : Effect.map(exporter.json(user), download("application/json"))), whole)
  })).pipe(onlyServices(Triage, Review, Exporter, Authentication, Idempotency))
