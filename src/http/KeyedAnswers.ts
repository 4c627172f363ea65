import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { Conflict, envelopeOf } from "../kernel/Errors.js"
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_REUSED,
  IDEMPOTENT_REPLAYED_HEADER,
  parseIdempotencyKey,
  takesIdempotencyKey
} from "../pipeline/IdempotencyKey.js"
import { CurrentUser, type CurrentUserShape } from "../kernel/CurrentUser.js"
import { Idempotency, type KeyedRequest, type Outcome, type StoredAnswer } from "../pipeline/Idempotency.js"

/**
 * Idempotency-Key on writes (IETF httpapi idempotency-key draft): a retry gets the first
 * answer back (`Idempotent-Replayed: true`), the key on another request is a 422, a key still
 * running a 409. Every keyed write's handler records its key itself, in its own transaction:
 *
 * - the task writes a client retries most (`keyedData` in IdempotentWrites.ts) hand the key to
 *   their service, whose mutation stores the answer in its own commit statement
 *   (`Mutations.keyed`);
 * - every other write answers through the `Answer.ts` helpers, which run the handler's work
 *   and the record of its answer in one transaction (`onceByKey`, `Idempotency.run`); the
 *   service's own transaction nests in it as a savepoint.
 *
 * What stays around the router (IdempotentWrites.ts) only reads: a malformed key's 400, and
 * what the key holds when a request failed before its handler could record it.
 */

export const pathOf = (url: string) => {
  const query = url.indexOf("?")
  return query === -1 ? url : url.slice(0, query)
}

const fingerprintOf = (method: string, url: string, body: string) =>
  Crypto.createHash("sha256").update(`${method} ${url}\n`).update(body).digest("hex")

// Built here, not with ErrorResponses' helper: that module wraps the router in IdempotentWrites.
export const busy = () =>
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
export const answerWith = (answer: StoredAnswer, headers: Record<string, string>) =>
  answer.body === "" && answer.contentType === null
    ? HttpServerResponse.empty({ status: answer.status, headers })
    : HttpServerResponse.uint8Array(encoder.encode(answer.body), {
      status: answer.status,
      headers,
      ...(answer.contentType === null ? {} : { contentType: answer.contentType })
    })

const replay = (answer: StoredAnswer) => answerWith(answer, { [IDEMPOTENT_REPLAYED_HEADER]: "true" })

/** What a keyed request answers, from how its key's write went. */
export const responseFor = <A>(outcome: Outcome<A>, ran: (value: A) => HttpServerResponse.HttpServerResponse) => {
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
export const keyedRequestOf = (request: HttpServerRequest.HttpServerRequest, user: CurrentUserShape, key: string) =>
  Effect.map(Effect.orDie(request.text), (body): KeyedRequest => ({
    userId: user.id,
    key,
    fingerprint: fingerprintOf(request.method, request.url, body)
  }))

/**
 * A write handler's whole answer, once per Idempotency-Key: without a key (or on a route that
 * ignores it) `respond` runs as it is; with one, it runs in one transaction with the record of
 * its answer (`Idempotency.run`), and a retry replays that answer. The router has checked
 * the key's syntax and authenticated the caller before any handler runs.
 */
export const onceByKey = <E, R>(respond: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const raw = request.headers[IDEMPOTENCY_KEY_HEADER]
    if (raw === undefined || !takesIdempotencyKey(request.method, pathOf(request.url))) return respond
    const key = parseIdempotencyKey(raw)
    if (key === undefined) return respond
    return Effect.gen(function*() {
      const user = yield* CurrentUser
      const idempotency = yield* Idempotency
      const keyed = yield* keyedRequestOf(request, user, key)
      return responseFor(yield* idempotency.run(keyed, respond, keep), (response) => response)
    })
  })
