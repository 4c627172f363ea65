/**
 * Steady as a library: the API definition, its handlers and services as layers that take
 * an `SqlClient` (and `AppConfig`) from the host, and a typed client of a running service.
 * Nothing here starts a server or opens a database by itself.
 */
export { Api } from "./http/Api.js"
export { type ClientOptions, makeClient, type SteadyClient } from "./http/Client.js"
// Ids are branded: a caller of the client brands the numbers it got back (`TaskId.make(id)`).
export { ProjectId, TaskId, TimeSlotId, TokenId, UserId, WebhookId } from "./kernel/Ids.js"
export { ApiLive, GroupsLive, HttpServerLive, makeNodeServer } from "./http/HttpLive.js"
export { errorResponse, ErrorEnvelopeLive, MAX_BODY_BYTES, withErrorEnvelope } from "./http/ErrorResponses.js"
export { withRequestId } from "./http/RequestId.js"
export { SchedulerLive } from "./system/SchedulerLive.js"
export { Authentication, AuthenticationLive } from "./http/Security.js"
export { AppConfig, appConfig, type AppConfigShape } from "./kernel/AppConfig.js"
export { DatabaseLive, layerEmbedded, layerPgServer } from "./sql/Database.js"
export { layerPglite, makePgliteClient } from "./sql/PgliteClient.js"
export { MIGRATIONS_TABLE, MigrationsLive, runMigrations } from "./sql/Migrations.js"
export { ServiceClockLive, makeShiftedClock } from "./kernel/ServiceClock.js"
export { ServicesLive } from "./system/ServicesLive.js"
export { Mutations } from "./pipeline/Mutations.js"
export { Users } from "./accounts/Users.js"
export { Credentials } from "./accounts/Credentials.js"
export { makeServiceLayer, MigratedDatabaseLive, ServiceLive } from "./Program.js"
