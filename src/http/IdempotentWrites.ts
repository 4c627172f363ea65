import type * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { Effect, Option, type Schema } from "effect"
import { ValidationError } from "../kernel/Errors.js"
import { serves } from "./Allowed.js"
import {
  IDEMPOTENCY_KEY_HEADER,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  parseIdempotencyKey,
  takesIdempotencyKey
} from "../pipeline/IdempotencyKey.js"
import { Authenticator } from "../accounts/Authenticator.js"
import { CurrentUser, type CurrentUserShape } from "../kernel/CurrentUser.js"
import { Idempotency } from "../pipeline/Idempotency.js"
import { dataAnswer, type KeyedAnswer, type KeyRefused } from "../pipeline/IdempotencyRecord.js"
import { dataResponse } from "./Answer.js"
import type { Rendered } from "../pipeline/Pending.js"
import { answerWith, busy, keyedRequestOf, pathOf, responseFor } from "./KeyedAnswers.js"

/*
 * Idempotency-Key (see KeyedAnswers.ts for how each write records its key): the writes that
 * store the key in their own commit statement, and what stays around the router.
 */

/**
 * `{data}` for a write that records its own Idempotency-Key: without a key, `plain` runs;
 * with one, `keyed` runs given the `KeyedAnswer` to hand to its mutation
 * (`Mutations.runKeyed`), which stores this very answer with the key in its commit statement.
 */
export const keyedData = <S extends Schema.Schema.Any>(schema: S, status = 200) =>
<E, R, EK, RK>(plain: PlainWrite<S, E, R>, keyed: KeyedWrite<S, EK, RK>) => keyedDataOf(schema, status, plain, keyed)

/** A write's answer: a value of the endpoint's schema, or the text its commit statement rendered. */
type Answered<S extends Schema.Schema.Any> = Schema.Schema.Encoded<S> | Rendered<Schema.Schema.Encoded<S>>
type PlainWrite<S extends Schema.Schema.Any, E, R> = (user: CurrentUserShape) => Effect.Effect<Answered<S>, E, R>
type KeyedWrite<S extends Schema.Schema.Any, EK, RK> = (
  user: CurrentUserShape,
  answer: KeyedAnswer
) => Effect.Effect<Answered<S>, EK | KeyRefused, RK>

// Made once (see docs/architecture.md, "Generators on the request path").
const keyedDataOf = Effect.fnUntraced(function*<S extends Schema.Schema.Any, E, R, EK, RK>(
  schema: S,
  status: number,
  plain: PlainWrite<S, E, R>,
  keyed: KeyedWrite<S, EK, RK>
) {
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
 * The router-side part of Idempotency-Key, which only reads. For a keyed write: a malformed
 * key is a 400; the request then runs as it is (its handler records the key), and only an
 * error answer asks what the key holds, so a retry of a request whose write now fails, or the
 * key on another request that fails before its handler (a 400 payload), answers with that.
 * Without the header, or for a caller that does not authenticate, the request passes through
 * untouched (the router answers the 401). Runs inside the error envelope, which has already
 * bounded the body this reads.
 */
export const makeIdempotentWrites = Effect.gen(function*() {
  const authenticator = yield* Authenticator
  const idempotency = yield* Idempotency
  return <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<unknown, R> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): HttpApp.Default<unknown, R> => {
      const raw = request.headers[IDEMPOTENCY_KEY_HEADER]
      // A method no route serves is the router's 404/405 to give, whatever the key says.
      if (raw === undefined || !takesIdempotencyKey(request.method, pathOf(request.url)) || !serves(request.method, request.url)) {
        return app
      }
      const key = parseIdempotencyKey(raw)
      if (key === undefined) {
        return Effect.fail(
          ValidationError.field("Idempotency-Key", `must be 1–${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters`)
        )
      }
      // What the key holds, for a request that did not get to record it.
      const settled = Effect.flatMap(Effect.option(authenticator.authenticate(request)), (user) =>
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
    })
})
