import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CurrentUser } from "../services/CurrentUser.js"
import { Quotas } from "../services/Quotas.js"
import { Api } from "./Api.js"
import { sendData, sendJsonText, whole } from "./Envelope.js"

export const QuotasHttpLive = HttpApiBuilder.group(Api, "quotas", (handlers) =>
  Effect.gen(function*() {
    const quotas = yield* Quotas
    return handlers
      .handle("progress", ({ path, payload }) =>
        Effect.flatMap(CurrentUser, (user) => quotas.progress(user, path.id, payload?.delta ?? 1)).pipe(
          Effect.map((t) => sendData(t))
        ), whole)
      .handle("list", () => Effect.flatMap(CurrentUser, quotas.listJson).pipe(Effect.map((body) => sendJsonText(body))), whole)
  }))
