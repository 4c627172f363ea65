import { type HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option, type Schema } from "effect"
import * as Crypto from "node:crypto"
import { Conflict, envelopeOf, ValidationError } from "../kernel/Errors.js"
import { serves } from "./Allowed.js"
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_REUSED,
  IDEMPOTENT_REPLAYED_HEADER,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  parseIdempotencyKey,
  takesIdempotencyKey
} from "../pipeline/IdempotencyKey.js"
import { Authenticator } from "../accounts/Authenticator.js"
import { CurrentUser, type CurrentUserShape } from "../kernel/CurrentUser.js"
import { Idempotency, type KeyedRequest, type Outcome, type StoredAnswer } from "../pipeline/Idempotency.js"
import { dataAnswer, type KeyedAnswer, type KeyRefused } from "../pipeline/IdempotencyRecord.js"
import { preAuthenticated } from "./Security.js"
import { dataResponse } from "./Answer.js"

/**
 * Idempotency-Key on writes (IETF httpapi idempotency-key draft): a retry gets the first
 * answer back (`Idempotent-Replayed: true`), the key on another request is a 422, a key still
 * running a 409. Two ways in:
 *
 * - The writes that record their own answer (`keyedData`, below): the handler hands the key to
 *   its service, whose mutation stores the answer in its own commit statement
 *   (`Mutations.runKeyed`, `Idempotency.keyed`). Nothing wraps the router for them.
 * - Every other keyed write runs, router and handler included, inside one transaction that
 *   also records its answer (`Idempotency.run`).
 */

const pathOf = (url: string) => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

const fingerprintOf = (method: string, url: string, body: string) =>
  Crypto.createHash("sha256").update(`${method} ${url}\n`).update(body).digest("hex")

/**
 * The routes whose handlers record their own key (`keyedData`): the task writes a client
 * retries most. Ids are digits: `/api/tasks/bulk/done` is another route.
 */
const RECORDING_ROUTES: ReadonlyArray<readonly [string, RegExp]> = [
  ["POST", /^\/api\/tasks$/],
  ["PATCH", /^\/api\/tasks\/\d+$/],
  ["POST", /^\/api\/tasks\/\d+\/done$/],
  ["POST", /^\/api\/tasks\/\d+\/progress$/]
]

const recordsItsKey = (method: string, path: string) =>
  RECORDING_ROUTES.some(([m, pattern]) => m === method && pattern.test(path))

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

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/**
 * A kept answer as a response: bytes with their length (a string body would go out
 * chunked), or nothing for an empty one.
 */
const answerWith = (answer: StoredAnswer, headers: Record<string, string>) =>
  answer.body === "" && answer.contentType === null
    ? HttpServerResponse.empty({ status: answer.status, headers })
    : HttpServerResponse.uint8Array(encoder.encode(answer.body), {
      status: answer.status,
      headers,
      ...(answer.contentType === null ? {} : { contentType: answer.contentType })
    })

const replay = (answer: StoredAnswer) => answerWith(answer, { [IDEMPOTENT_REPLAYED_HEADER]: "true" })

/** What a keyed request answers, from how its key's write went. */
const responseFor = <A>(outcome: Outcome<A>, ran: (value: A) => HttpServerResponse.HttpServerResponse) => {
  switch (outcome._tag) {
    case "Ran":
      return ran(outcome.value)
    case "Replay":
      return replay(outcome.answer)
    case "Busy":
      return busy()
    case "Mismatch":
      return reused()
  }
}

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

/** The keyed request a request makes for `user`, once the router-side wrapper has checked its key. */
const keyedRequestOf = (request: HttpServerRequest.HttpServerRequest, user: CurrentUserShape, key: string) =>
  Effect.map(Effect.orDie(request.text), (body): KeyedRequest => ({
    userId: user.id,
    key,
    fingerprint: fingerprintOf(request.method, request.url, body)
  }))

/**
 * `{data}` for a write that records its own Idempotency-Key: without a key, `plain` runs;
 * with one, `keyed` runs given the `KeyedAnswer` to hand to its mutation
 * (`Mutations.runKeyed`), which stores this very answer with the key in its commit statement.
 */
export const keyedData = <S extends Schema.Schema.Any>(schema: S, status = 200) =>
<E, R, EK, RK>(
  plain: (user: CurrentUserShape) => Effect.Effect<Schema.Schema.Encoded<S>, E, R>,
  keyed: (user: CurrentUserShape, answer: KeyedAnswer) => Effect.Effect<Schema.Schema.Encoded<S>, EK | KeyRefused, RK>
) =>
  Effect.gen(function*() {
    const user = yield* CurrentUser
    const request = yield* HttpServerRequest.HttpServerRequest
    const raw = request.headers[IDEMPOTENCY_KEY_HEADER]
    const key = raw === undefined ? undefined : parseIdempotencyKey(raw)
    if (key === undefined) return dataResponse(schema, yield* plain(user), status)
    const keyedRequest = yield* keyedRequestOf(request, user, key)
    const idempotency = yield* Idempotency
    const answer = dataAnswer(keyedRequest, status)
    const outcome = yield* idempotency.keyed(keyedRequest, keyed(user, answer))
    // The answer as recorded: the wire JSON text the statement rendered, which a retry replays byte for byte.
    return responseFor(outcome, (value) => {
      const recorded = answer.answer
      return recorded === undefined ? dataResponse(schema, value, status) : answerWith(recorded, {})
    })
  })

/**
 * The router-side part of Idempotency-Key. For a keyed write of an authenticated user: a
 * malformed key is a 400; a write that records its own key (`RECORDING_ROUTES`) runs as it
 * is, and only an error answer asks what the key holds (a retry of a request whose write now
 * fails, or the key on another request that fails before its handler, answers with that);
 * any other write runs inside `Idempotency.run`. Without the header, or for a caller that
 * does not authenticate, the request passes through untouched (the router answers the 401).
 * Runs inside the error envelope, which has already bounded the body this reads.
 */
export const makeIdempotentWrites = Effect.gen(function*() {
  const authenticator = yield* Authenticator
  const idempotency = yield* Idempotency
  return <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<unknown, R> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): HttpApp.Default<unknown, R> => {
      const raw = request.headers[IDEMPOTENCY_KEY_HEADER]
      const path = pathOf(request.url)
      // A method no route serves is the router's 404/405 to give, whatever the key says.
      if (raw === undefined || !takesIdempotencyKey(request.method, path) || !serves(request.method, request.url)) return app
      const key = parseIdempotencyKey(raw)
      if (key === undefined) {
        return Effect.fail(
          ValidationError.field("Idempotency-Key", `must be 1–${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters`)
        )
      }
      const authenticated = Effect.option(authenticator.authenticate(request))
      if (recordsItsKey(request.method, path)) {
        // What the key holds, for a request that did not get to record it.
        const settled = Effect.flatMap(authenticated, (user) =>
          Option.isNone(user)
            ? Effect.succeed(undefined)
            : Effect.flatMap(keyedRequestOf(request, user.value, key), (keyed) => idempotency.settledOutcome(keyed)))
        return Effect.matchCauseEffect(app, {
          onSuccess: (response) =>
            response.status < 400
              ? Effect.succeed(response)
              : Effect.map(settled, (found) => (found === undefined ? response : responseFor(found, () => response))),
          onFailure: (cause) =>
            Effect.flatMap(settled, (found) => (found === undefined ? Effect.failCause(cause) : Effect.succeed(responseFor(found, () => busy()))))
        })
      }
      const keyed = (user: CurrentUserShape) =>
        Effect.flatMap(keyedRequestOf(request, user, key), (keyedRequest) =>
          Effect.map(
            idempotency.run(keyedRequest, app, keep, [[preAuthenticated, user]]),
            (outcome) => responseFor(outcome, (response) => response)
          ))
      return Effect.flatMap(authenticated, (user) => Option.isNone(user) ? app : keyed(user.value)).pipe(
        // Like every route (`whole`): a client hanging up neither cuts the write short nor
        // cancels a statement of the transaction.
        Effect.uninterruptible
      )
    })
})
