import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Effect, type Schema } from "effect"
import { CurrentUser, type CurrentUserShape } from "../kernel/CurrentUser.js"
import { Rendered } from "../pipeline/Pending.js"
import { onceByKey } from "./KeyedAnswers.js"

/**
 * A handler's whole body, for the current user. What `body` yields must have the encoded type
 * of the endpoint's success schema (the schema the endpoint declares, given here), checked when
 * compiled. It goes out without running the schema: the value was read from our own database
 * or built by our own code, and schema work on every row costs more than the query (STYLE,
 * performance notes). The contract tests (`wire-schema`, `openapi-contract`) run the schemas
 * over real answers.
 *
 * A write answered through these helpers with an Idempotency-Key runs once per key
 * (`onceByKey`): its work and the record of its answer in one transaction.
 */
type Body<A, E, R> = (user: CurrentUserShape) => Effect.Effect<A, E, R>

const forUser = <A, E, R>(body: Body<A, E, R>) => Effect.flatMap(CurrentUser, body)

/**
 * `{data}` as a response, for a handler that adds to it (a cookie). A write's `Rendered`
 * answer goes out as the text the commit statement rendered, without parsing it.
 */
export const dataResponse = <S extends Schema.Schema.Any>(
  _schema: S,
  data: Schema.Schema.Encoded<S> | Rendered<Schema.Schema.Encoded<S>>,
  status = 200
) =>
  data instanceof Rendered
    ? jsonTextResponse(_schema, `{"data":${data.text}}`, status)
    : HttpServerResponse.unsafeJson({ data }, { status })

/** `{data}` for an endpoint whose success is `Data(schema)`. */
export const answerData = <S extends Schema.Schema.Any>(_schema: S, status = 200) =>
<E, R>(body: Body<Schema.Schema.Encoded<S> | Rendered<Schema.Schema.Encoded<S>>, E, R>) =>
  onceByKey(Effect.map(forUser(body), (data) => dataResponse(_schema, data, status)))

/**
 * `{data}` the database rendered as JSON text (`Data(schema)` in its shape), handed to the
 * socket as is: a raw body skips the encoding to bytes that a text body does first
 * (measured ~10% on lists).
 */
export const answerJsonText = <S extends Schema.Schema.Any>(_schema: S, status = 200) =>
<E, R>(body: Body<string, E, R>) =>
  onceByKey(Effect.map(forUser(body), (text) => jsonTextResponse(_schema, text, status)))

/** A bare body (no `{data}`) as a response: an endpoint whose success (or error) is `schema` itself. */
export const bareResponse = <S extends Schema.Schema.Any>(_schema: S, body: Schema.Schema.Encoded<S>, status = 200) =>
  HttpServerResponse.unsafeJson(body, { status })

/** `{data}` JSON text as a response. */
export const jsonTextResponse = <S extends Schema.Schema.Any>(_schema: S, text: string, status = 200) =>
  HttpServerResponse.raw(text, { status, contentType: "application/json" })

/** A bare body (no `{data}`): an endpoint whose success is `schema` itself, e.g. bulk counts. */
export const answerBare = <S extends Schema.Schema.Any>(_schema: S, status = 200) =>
<E, R>(body: Body<Schema.Schema.Encoded<S>, E, R>) =>
  onceByKey(Effect.map(forUser(body), (value) => bareResponse(_schema, value, status)))
