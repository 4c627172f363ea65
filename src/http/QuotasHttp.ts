import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Quotas } from "../services/Quotas.js"
import { answerData, answerJsonText } from "./Answer.js"
import { Api } from "./Api.js"
import { whole } from "./Envelope.js"
import { ProgressResult, QuotaList } from "./QuotasApi.js"

export const QuotasHttpLive = HttpApiBuilder.group(Api, "quotas", (handlers) =>
  Effect.gen(function*() {
    const quotas = yield* Quotas
    return handlers
      .handle("progress", ({ path, payload }) =>
        answerData(ProgressResult)((user) => quotas.progress(user, path.id, payload?.delta ?? 1)), whole)
      .handle("list", () => answerJsonText(QuotaList)(quotas.listJson), whole)
  }))
