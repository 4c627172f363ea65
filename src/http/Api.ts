import { HttpApi, OpenApi } from "@effect/platform"
import {
  ConflictWire,
  ForbiddenWire,
  HeadersTooLargeWire,
  InternalErrorWire,
  NotFoundWire,
  PayloadTooLargeWire,
  ServiceUnavailableWire,
  UnauthorizedWire,
  ValidationErrorWire
} from "../domain/Errors.js"
import { AccountApi, SessionApi } from "./AccountApi.js"
import { AiApi } from "./AiApi.js"
import { ChangesApi } from "./ChangesApi.js"
import { CalendarFeedApi, CalendarKeyApi } from "./CalendarApi.js"
import { LifecycleApi } from "./LifecycleApi.js"
import { ProjectsApi } from "./ProjectsApi.js"
import { QuotasApi } from "./QuotasApi.js"
import { RemindersApi } from "./RemindersApi.js"
import { TimeSlotsApi } from "./TimeSlotsApi.js"
import { UndoApi } from "./UndoApi.js"
import { WebhooksApi } from "./WebhooksApi.js"
import { BulkApi } from "./BulkApi.js"
import { PublicApi } from "./PublicApi.js"
import { TriageApi } from "./TriageApi.js"
import { SystemApi } from "./SystemApi.js"
import { TasksApi } from "./TasksApi.js"

/** The whole interface, as served and as described at GET /api/openapi. */
export class Api extends HttpApi.make("steady")
  .add(SystemApi)
  .add(SessionApi)
  .add(AccountApi)
  .add(TasksApi)
  .add(LifecycleApi)
  .add(QuotasApi)
  .add(RemindersApi)
  .add(TimeSlotsApi)
  .add(UndoApi)
  .add(WebhooksApi)
  .add(BulkApi)
  .add(TriageApi)
  .add(PublicApi)
  .add(ProjectsApi)
  .add(AiApi)
  .add(ChangesApi)
  .add(CalendarKeyApi)
  .add(CalendarFeedApi)
  .addError(ValidationErrorWire)
  .addError(UnauthorizedWire)
  .addError(ForbiddenWire)
  .addError(NotFoundWire)
  .addError(ConflictWire)
  .addError(ServiceUnavailableWire)
  .addError(PayloadTooLargeWire)
  .addError(HeadersTooLargeWire)
  .addError(InternalErrorWire)
  .annotateContext(
    OpenApi.annotations({
      title: "Steady task service",
      version: "1.0.0",
      description: "Self-hosted task service: tasks, recurring tasks, reminders, quotas, projects, undo/redo, webhooks."
    })
  )
{}
