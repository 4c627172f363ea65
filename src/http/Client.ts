import * as HttpApiClient from "@effect/platform/HttpApiClient"
import * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type { Effect, Redacted } from "effect"
import { Api } from "./Api.js"

export interface ClientOptions {
  /** Where the service listens, e.g. `http://127.0.0.1:3000` (the paths carry `/api`). */
  readonly baseUrl: string | URL
  /** An API token (`npm run db:create-token`), sent as `Authorization: Bearer …`. */
  readonly token?: string | Redacted.Redacted | undefined
}

/**
 * A typed client for TypeScript callers, derived from the same `Api` the server serves: one
 * method per endpoint, grouped as in the document (`client.tasks.create({ payload })`),
 * bodies encoded and answers decoded with the server's own schemas, error answers failing
 * with the typed errors. It needs an `HttpClient` (`FetchHttpClient.layer`, or
 * `NodeHttpClient.layer` from `@effect/platform-node`).
 */
export const makeClient = (options: ClientOptions) => {
  const token = options.token
  return HttpApiClient.make(Api, {
    baseUrl: options.baseUrl,
    transformClient: token === undefined ? undefined : HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
  })
}

export type SteadyClient = Effect.Effect.Success<ReturnType<typeof makeClient>>
