import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as Etag from "@effect/platform/Etag"
import * as FileSystem from "@effect/platform/FileSystem"
import * as HttpPlatform from "@effect/platform/HttpPlatform"
import * as HttpServer from "@effect/platform/HttpServer"
import * as Path from "@effect/platform/Path"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { Effect, Layer, Option } from "effect"
import { createServer } from "node:http"
import { AppConfig } from "../kernel/AppConfig.js"
import { onlyServices } from "./OnlyServices.js"
import { RequestMetrics } from "./RequestMetrics.js"
import { answerClientErrorsWithEnvelope } from "./ClientErrors.js"
import { trackForGracefulStop } from "./GracefulStop.js"
import { AccountHttpLive, SessionHttpLive } from "../accounts/AccountHttp.js"
import { AiHttpLive } from "../ai/AiHttp.js"
import { ChangesHttpLive } from "../changes/ChangesHttp.js"
import { CalendarFeedHttpLive, CalendarKeyHttpLive } from "../changes/CalendarHttp.js"
import { Api } from "./Api.js"
import { BodyLimitLive, ErrorEnvelopeLive } from "./ErrorResponses.js"
import { LifecycleHttpLive } from "../lifecycle/LifecycleHttp.js"
import { measureRequests, requestSpanName } from "./Observability.js"
import { ProjectsHttpLive } from "../projects/ProjectsHttp.js"
import { QuotasHttpLive } from "../quotas/QuotasHttp.js"
import { RemindersHttpLive } from "../quotas/RemindersHttp.js"
import { TimeSlotsHttpLive } from "../slots/TimeSlotsHttp.js"
import { UndoHttpLive } from "../undo/UndoHttp.js"
import { WebhooksHttpLive } from "../webhooks/WebhooksHttp.js"
import { BulkHttpLive } from "../triage/BulkHttp.js"
import { PublicHttpLive } from "../tasks/PublicHttp.js"
import { TriageHttpLive } from "../triage/TriageHttp.js"
import { AuthenticationLive } from "./Security.js"
import { DoorLive, SystemHttpLive } from "../system/SystemHttp.js"
import { TasksHttpLive } from "../tasks/TasksHttp.js"

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
  ProjectsHttpLive,
  AiHttpLive,
  ChangesHttpLive,
  CalendarKeyHttpLive,
  CalendarFeedHttpLive
).pipe(Layer.provide(AuthenticationLive))

export const ApiLive = HttpApiBuilder.api(Api).pipe(
  Layer.provide(GroupsLive),
  Layer.provideMerge(ErrorEnvelopeLive)
)

/**
 * CONTRACT §6: headers within 10 s, the whole request within 30 s. Node enforces both only
 * when it sweeps its connections (every 30 s by default), which let a slow-header client hold
 * a socket for up to 40 s: sweep every second.
 */
export const makeNodeServer = () => {
  const server = createServer({ connectionsCheckingInterval: 1_000 })
  server.headersTimeout = 10_000
  server.requestTimeout = 30_000
  server.keepAliveTimeout = 5_000
  answerClientErrorsWithEnvelope(server)
  return trackForGracefulStop(server)
}

/** Listens on `HOST:PORT` from the configuration. */
export const NodeServerLive = Layer.unwrapEffect(
  Effect.map(AppConfig, (config) => NodeHttpServer.layer(makeNodeServer, { port: config.port, host: config.host }))
)

/**
 * Serves the API and the pages at its door (`/`, `/docs`), counting requests per route for
 * `/metrics`. A span per request only when an OTLP endpoint is configured: the tracing
 * middleware costs even with tracing off. The door pages are the server's, not `ApiLive`'s,
 * so a host that mounts the API keeps its own `/`.
 *
 * `HttpApiBuilder.serve` spelled out, so that the server runs requests with only the
 * platform's services in their context (`onlyServices`): it serves from the context it is
 * built in, and each request copies that context (the router, every `provideService`).
 * The handlers hold what they use from their groups' own contexts. The body limit is in that
 * context too, so the envelope need not set it around every request (`withErrorEnvelope`).
 */
export const HttpServerLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const tracing = Option.isSome((yield* AppConfig).otlp)
    const metrics = yield* RequestMetrics
    return HttpApiBuilder.httpApp.pipe(
      Effect.map((app) =>
        HttpServer.serve(app, measureRequests(metrics)).pipe(
          HttpMiddleware.withTracerDisabledWhen(() => !tracing),
          HttpMiddleware.withSpanNameGenerator(requestSpanName),
          onlyServices(
            HttpServer.HttpServer,
            HttpPlatform.HttpPlatform,
            Etag.Generator,
            FileSystem.FileSystem,
            Path.Path,
            HttpIncomingMessage.MaxBodySize
          )
        )
      ),
      Layer.unwrapEffect,
      Layer.provide([HttpApiBuilder.Router.Live, HttpApiBuilder.Middleware.layer, BodyLimitLive]),
      Layer.provide(DoorLive.pipe(Layer.provideMerge(ApiLive))),
      HttpServer.withLogAddress
    )
  })
)
