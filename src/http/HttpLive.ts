import { HttpApiBuilder, HttpMiddleware, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { createServer } from "node:http"
import { AppConfig } from "../services/AppConfig.js"
import { AccountHttpLive, SessionHttpLive } from "./AccountHttp.js"
import { Api } from "./Api.js"
import { ErrorEnvelopeLive } from "./ErrorResponses.js"
import { LifecycleHttpLive } from "./LifecycleHttp.js"
import { ProjectsHttpLive } from "./ProjectsHttp.js"
import { QuotasHttpLive } from "./QuotasHttp.js"
import { RemindersHttpLive } from "./RemindersHttp.js"
import { TimeSlotsHttpLive } from "./TimeSlotsHttp.js"
import { UndoHttpLive } from "./UndoHttp.js"
import { WebhooksHttpLive } from "./WebhooksHttp.js"
import { BulkHttpLive } from "./BulkHttp.js"
import { PublicHttpLive } from "./PublicHttp.js"
import { TriageHttpLive } from "./TriageHttp.js"
import { AuthenticationLive } from "./Security.js"
import { SystemHttpLive } from "./SystemHttp.js"
import { TasksHttpLive } from "./TasksHttp.js"

/**
 * The API with every group's handlers, auth and the error envelope. It needs the
 * services (see `ServicesLive`) but no server: a host program can mount it.
 */
export const GroupsLive = Layer.mergeAll(
  SystemHttpLive,
  SessionHttpLive,
  AccountHttpLive,
  TasksHttpLive,
  LifecycleHttpLive,
  QuotasHttpLive,
  RemindersHttpLive,
  TimeSlotsHttpLive,
  UndoHttpLive,
  WebhooksHttpLive,
  BulkHttpLive,
  TriageHttpLive,
  PublicHttpLive,
  ProjectsHttpLive
).pipe(Layer.provide(AuthenticationLive))

export const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide(GroupsLive),
  Layer.provideMerge(ErrorEnvelopeLive)
)

/** CONTRACT §6: headers within 10 s, the whole request within 30 s. */
export const makeNodeServer = () => {
  const server = createServer()
  server.headersTimeout = 10_000
  server.requestTimeout = 30_000
  server.keepAliveTimeout = 5_000
  return server
}

/** Listens on `HOST:PORT` from the configuration. */
export const NodeServerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => NodeHttpServer.layer(makeNodeServer, { port: config.port, host: config.host }))
)

/** Serves the API; spans only when a tracer is configured, so none per request by default. */
export const HttpServerLive = HttpApiBuilder.serve().pipe(
  HttpMiddleware.withTracerDisabledWhen(() => true),
  Layer.provide(ApiLive),
  HttpServer.withLogAddress
)
