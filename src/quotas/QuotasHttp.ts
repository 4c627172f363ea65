import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { Effect } from "effect"
import { Quotas } from "./Quotas.js"
import { answerJsonText } from "../http/Answer.js"
import { Api } from "../http/Api.js"
import { whole } from "../http/Envelope.js"
import { keyedData } from "../http/IdempotentWrites.js"
import { ProgressResult, QuotaList } from "./QuotasApi.js"
import { onlyServices } from "../http/OnlyServices.js"
import { Authentication } from "../http/Security.js"
import { Idempotency } from "../pipeline/Idempotency.js"

export const QuotasHttpLive = HttpApiBuilder.group(Api, "quotas", (handlers) =>
  Effect.gen(function*() {
    const quotas = yield* Quotas
    return handlers
      .handle("progress", ({ path, payload }) =>
        keyedData(ProgressResult)(
          (user) => quotas.progress(user, path.id, payload?.delta ?? 1),
          (user, keyed) => quotas.progressKeyed(user, path.id, payload?.delta ?? 1, keyed)
        ), whole)
      .handle("list", () => answerJsonText(QuotaList)(quotas.listJson), whole)
  })).pipe(onlyServices(Quotas, Authentication, Idempotency))
