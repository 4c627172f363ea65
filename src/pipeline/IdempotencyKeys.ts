import { Headers, type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import * as Crypto from "node:crypto"
import { Conflict, envelopeOf, ValidationError } from "../kernel/Errors.js"
import { serves } from "../http/Allowed.js"
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_REUSED,
  IDEMPOTENT_REPLAYED_HEADER,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  parseIdempotencyKey,
  takesIdempotencyKey
} from "./IdempotencyKey.js"
import { Authenticator } from "../accounts/Authenticator.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { Idempotency, type Outcome, type StoredAnswer } from "./Idempotency.js"
import { preAuthenticated } from "../http/Security.js"

const pathOf = (url: string) => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

const fingerprintOf = (method: string, url: string, body: string) =>
  Crypto.createHash("sha256").update(`${method} ${url}\n`).update(body).digest("hex")

// Built here, not with ErrorResponses' helper: that module wraps this one around the router.
const busy = () =>
  HttpServerResponse.unsafeJson(
    envelopeOf(new Conflict({ message: "A request with this Idempotency-Key is still being processed; retry later" })),
    { status: 409 }
  )

const reused = () =>
  HttpServerResponse.unsafeJson({
    error: "This Idempotency-Key was already used for a different request (method, path or body)",
    code: IDEMPOTENCY_KEY_REUSED,
    details: {}
  }, { status: 422 })

/**
 * A kept answer as a response: bytes with their length (a string body would go out
 * chunked), or nothing for an empty one.
 */
const responseOf = (answer: StoredAnswer, status: number, headers: Headers.Input) =>
  answer.body === "" && answer.contentType === null
    ? HttpServerResponse.empty({ status, headers })
    : HttpServerResponse.uint8Array(encoder.encode(answer.body), {
      status,
      headers,
      ...(answer.contentType === null ? {} : { contentType: answer.contentType })
    })

const replay = (answer: StoredAnswer) => responseOf(answer, answer.status, { [IDEMPOTENT_REPLAYED_HEADER]: "true" })

/** The response with the body the write's record holds (its wire JSON spliced in). */
const answered = (response: HttpServerResponse.HttpServerResponse, answer: StoredAnswer) =>
  // The length (and type) set for the body with the stand-in are not this body's.
  responseOf(answer, response.status, Headers.remove(response.headers, ["content-length", "content-type"]))

/** What a keyed request answers, from how its key's write went. */
const responseFor = (outcome: Outcome<HttpServerResponse.HttpServerResponse>) => {
  switch (outcome._tag) {
    case "Ran":
      return outcome.answer === undefined ? outcome.value : answered(outcome.value, outcome.answer)
    case "Replay":
      return replay(outcome.answer)
    case "Busy":
      return busy()
    case "Mismatch":
      return reused()
  }
}

const decoder = new TextDecoder()
const encoder = new TextEncoder()

/**
 * What is kept of an answer: nothing for an error (4xx/5xx: the key stays free and the
 * transaction rolls back), else status, content type and body text. Our write routes
 * answer with bytes or text; any other body cannot be replayed, so it fails the write.
 */
const keep = (response: HttpServerResponse.HttpServerResponse): Effect.Effect<StoredAnswer | undefined> => {
  if (response.status >= 400) return Effect.succeed(undefined)
  const body = response.body
  const contentType = "contentType" in body ? body.contentType ?? null : null
  if (body._tag === "Empty") return Effect.succeed({ status: response.status, contentType: null, body: "" })
  if (body._tag === "Uint8Array") return Effect.succeed({ status: response.status, contentType, body: decoder.decode(body.body) })
  if (body._tag === "Raw") {
    if (typeof body.body === "string") return Effect.succeed({ status: response.status, contentType, body: body.body })
    if (body.body instanceof Uint8Array) {
      return Effect.succeed({ status: response.status, contentType, body: decoder.decode(body.body) })
    }
  }
  return Effect.dieMessage(`A keyed write answered with a ${body._tag} body, which cannot be replayed`)
}

/**
 * Idempotency-Key on writes (IETF httpapi idempotency-key draft). A keyed write
 * of an authenticated user runs, router and handler included, inside one transaction that
 * also records its answer; a retry gets that answer back (`Idempotent-Replayed: true`).
 * Without the header, or for a caller that does not authenticate, the request passes
 * through untouched (the router answers the 401). Runs inside the error envelope, which
 * has already bounded the body this reads for the fingerprint.
 */
export const makeIdempotentWrites = Effect.gen(function*() {
  const authenticator = yield* Authenticator
  const idempotency = yield* Idempotency
  return <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<unknown, R> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): HttpApp.Default<unknown, R> => {
      const raw = request.headers[IDEMPOTENCY_KEY_HEADER]
      // A method no route serves is the router's 404/405 to give, whatever the key says.
      if (
        raw === undefined || !takesIdempotencyKey(request.method, pathOf(request.url)) ||
        !serves(request.method, request.url)
      ) return app
      const key = parseIdempotencyKey(raw)
      if (key === undefined) {
        return Effect.fail(
          ValidationError.field("Idempotency-Key", `must be 1–${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters`)
        )
      }
      const keyed = (user: CurrentUserShape) =>
        Effect.flatMap(request.text, (body) =>
          Effect.map(
            idempotency.run(
              { userId: user.id, key, fingerprint: fingerprintOf(request.method, request.url, body) },
              app,
              keep,
              [[preAuthenticated, user]]
            ),
            responseFor
          ))
      return Effect.flatMap(Effect.option(authenticator.authenticate(request)), (user) =>
        Option.isNone(user) ? app : keyed(user.value)).pipe(
          // Like every route (`whole`): a client hanging up neither cuts the write short nor
          // cancels a statement of the transaction.
          Effect.uninterruptible
        )
    })
})
