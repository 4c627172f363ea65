import * as HttpApi from "@effect/platform/HttpApi"
import * as OpenApi from "@effect/platform/OpenApi"
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
} from "../kernel/Errors.js"
import { AccountApi, SessionApi } from "../accounts/AccountApi.js"
import { AiApi } from "../ai/AiApi.js"
import { ChangesApi } from "../changes/ChangesApi.js"
import { CalendarFeedApi, CalendarKeyApi } from "../changes/CalendarApi.js"
import { LifecycleApi } from "../lifecycle/LifecycleApi.js"
import { ProjectsApi } from "../projects/ProjectsApi.js"
import { QuotasApi } from "../quotas/QuotasApi.js"
import { RemindersApi } from "../quotas/RemindersApi.js"
import { TimeSlotsApi } from "../slots/TimeSlotsApi.js"
import { UndoApi } from "../undo/UndoApi.js"
import { WebhooksApi } from "../webhooks/WebhooksApi.js"
import { BulkApi } from "../triage/BulkApi.js"
import { PublicApi } from "../tasks/PublicApi.js"
import { TriageApi } from "../triage/TriageApi.js"
import { SystemApi } from "../system/SystemApi.js"
import { TasksApi } from "../tasks/TasksApi.js"

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
