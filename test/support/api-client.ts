import {
  FetchHttpClient,
  type HttpApi,
  HttpApiClient,
  type HttpApiEndpoint,
  type HttpApiGroup,
  HttpClient,
  HttpClientRequest
} from "@effect/platform"
import { Cause, Effect, Exit, FiberRef, Schema } from "effect"
import type { Simplify } from "effect/Types"
import { Api } from "../../src/http/Api.js"

/*
 * Two ways for a test to talk HTTP to the service:
 *
 * - `ApiClient`: the typed client derived from `Api` (HttpApiClient, as src/http/Client.ts
 *   builds it, with the token set per call), one method per endpoint, with Promise results so a plain vitest test can
 *   await it. Payloads are encoded and answers decoded by the server's own schemas, and a
 *   status other than the endpoint's declared success status rejects: a happy path that
 *   awaits a call has checked its status. Decoding drops keys the schema does not declare,
 *   so a test about the exact bytes or keys of an answer uses the raw client.
 * - `RawClient`: fetch with the body parsed as `unknown`, for error answers and byte-level
 *   checks; read it with `decode(schema, body)` (or compare it whole with `toEqual`).
 */

type Groups = typeof Api extends HttpApi.HttpApi<infer _Id, infer G, infer _E, infer _R> ? G : never

/** One endpoint as a function: its client request, resolved with its decoded success value. */
type Call<Endpoint> = Endpoint extends HttpApiEndpoint.HttpApiEndpoint<
  infer _Name,
  infer _Method,
  infer Path,
  infer UrlParams,
  infer Payload,
  infer Headers,
  infer Success,
  infer _Error,
  infer _R,
  infer _RE
> ? (request: Simplify<HttpApiEndpoint.HttpApiEndpoint.ClientRequest<Path, UrlParams, Payload, Headers, false>>) => Promise<Success>
  : never

type GroupCalls<Group> = Group extends HttpApiGroup.HttpApiGroup<infer _Id, infer Endpoints, infer _E, infer _R, infer _Top> ? {
    readonly [Endpoint in Endpoints as HttpApiEndpoint.HttpApiEndpoint.Name<Endpoint>]: Call<Endpoint>
  }
  : never

/** The whole API, grouped as in the document: `client.tasks.create({ payload })`. */
export type ApiClient = { readonly [Group in Groups as HttpApiGroup.HttpApiGroup.Name<Group>]: GroupCalls<Group> }

/** Why a typed call failed, in the test's failure message: endpoint, error tag and body. */
const describeFailure = (name: string, cause: Cause.Cause<unknown>): Error => {
  const failure = Cause.failureOption(cause)
  const detail = failure._tag === "Some" ? JSON.stringify(failure.value) : Cause.pretty(cause)
  return new Error(`${name} failed: ${detail}`)
}

/** The bearer token of the call being made; each user's client sets it around its calls. */
const currentToken = FiberRef.unsafeMake<string | undefined>(undefined)

type EffectClient = Record<string, Record<string, (request: unknown) => Effect.Effect<unknown, unknown>>>

/**
 * One Effect client per service address: deriving it walks the whole API and builds every
 * endpoint's codecs (hundreds of milliseconds), so users share it and only their token differs.
 */
const effectClients = new Map<string, EffectClient>()
const effectClientFor = (baseUrl: string): EffectClient => {
  const cached = effectClients.get(baseUrl)
  if (cached !== undefined) return cached
  const made = Effect.runSync(Effect.provide(
    HttpApiClient.make(Api, {
      baseUrl,
      transformClient: HttpClient.mapRequestEffect((request) =>
        Effect.map(FiberRef.get(currentToken), (token) => token === undefined ? request : HttpClientRequest.bearerToken(request, token))
      )
    }),
    FetchHttpClient.layer
  )) as unknown as EffectClient
  effectClients.set(baseUrl, made)
  return made
}

/** The typed client for `baseUrl`, sending `Authorization: Bearer <token>` when given one. */
export const makeApiClient = (baseUrl: string, token?: string): ApiClient => {
  const promised: Record<string, Record<string, (request: unknown) => Promise<unknown>>> = {}
  for (const [group, endpoints] of Object.entries(effectClientFor(baseUrl))) {
    const calls: Record<string, (request: unknown) => Promise<unknown>> = {}
    for (const [name, call] of Object.entries(endpoints)) {
      calls[name] = async (request) => {
        const exit = await Effect.runPromiseExit(Effect.locally(call(request), currentToken, token))
        if (Exit.isSuccess(exit)) return exit.value
        throw describeFailure(`${group}.${name}`, exit.cause)
      }
    }
    promised[group] = calls
  }
  // The runtime shape is the one `ApiClient` describes: every group and endpoint of `Api`,
  // each call the Effect client's call run to a Promise.
  return promised as unknown as ApiClient
}

// ---- raw ----

export interface RawResponse {
  readonly status: number
  readonly headers: Headers
  /** The body parsed as JSON, or undefined when empty or not JSON. */
  readonly body: unknown
  readonly text: string
}

export interface RawClient {
  readonly request: (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<RawResponse>
  readonly get: (path: string) => Promise<RawResponse>
  readonly post: (path: string, body?: unknown) => Promise<RawResponse>
  readonly patch: (path: string, body?: unknown) => Promise<RawResponse>
  readonly delete: (path: string) => Promise<RawResponse>
}

/** fetch against `baseUrl`; an object body is sent as JSON, a string body as it is. */
export const makeRawClient = (baseUrl: string, baseHeaders: Record<string, string> = {}): RawClient => {
  const request = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const sent: Record<string, string> = { ...baseHeaders, ...headers }
    const init: RequestInit = { method, headers: sent }
    if (body !== undefined) {
      init.body = typeof body === "string" ? body : JSON.stringify(body)
      sent["content-type"] ??= "application/json"
    }
    const res = await fetch(`${baseUrl}${path}`, init)
    const text = await res.text()
    let parsed: unknown = undefined
    try {
      parsed = text === "" ? undefined : JSON.parse(text)
    } catch {
      parsed = undefined
    }
    return { status: res.status, headers: res.headers, body: parsed, text }
  }
  return {
    request,
    get: (path) => request("GET", path),
    post: (path, body) => request("POST", path, body),
    patch: (path, body) => request("PATCH", path, body),
    delete: (path) => request("DELETE", path)
  }
}

/** Reads a raw body with a schema; a body of another shape fails the test with the parse error. */
export const decode = <A, I>(schema: Schema.Schema<A, I>, value: unknown): A => Schema.decodeUnknownSync(schema)(value)

/** The error envelope every 4xx/5xx answer carries (spec §1). */
export const ErrorBody = Schema.Struct({
  error: Schema.String,
  code: Schema.String,
  details: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
export type ErrorBody = typeof ErrorBody.Type

/** `{data: A}` around a schema, for reading a raw success body. */
export const DataOf = <A, I>(schema: Schema.Schema<A, I>) => Schema.Struct({ data: schema })

/** The `data` of a raw success body, as sent (no schema drops or reorders anything). */
export const wireData = (body: unknown): unknown => decode(DataOf(Schema.Unknown), body).data

/** The error envelope of a raw answer (the test fails if the body is not one). */
export const errorOf = (res: RawResponse): ErrorBody => decode(ErrorBody, res.body)
