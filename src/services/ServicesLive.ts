import { Layer } from "effect"
import { AiAssist } from "./AiAssist.js"
import { AiGateway } from "./AiGateway.js"
import { AiInsights } from "./AiInsights.js"
import { AiRateLimits } from "./AiRateLimits.js"
import { Authenticator } from "./Authenticator.js"
import { Enrichment } from "./Enrichment.js"
import { EnrichmentQueue } from "./EnrichmentQueue.js"
import { BulkActions } from "./BulkActions.js"
import { ChangeFeed } from "./ChangeFeed.js"
import { ChangeHub } from "./ChangeHub.js"
import { ChangeWakeup } from "./ChangeWakeup.js"
import { CalendarFeeds } from "./CalendarFeeds.js"
import { Credentials } from "./Credentials.js"
import { DatabaseMaintenance } from "./DatabaseMaintenance.js"
import { Exporter } from "./Exporter.js"
import { History } from "./History.js"
import { Idempotency } from "./Idempotency.js"
import { Liveness } from "./Liveness.js"
import { MissedReminders } from "./MissedReminders.js"
import { Mutations } from "./Mutations.js"
import { Notifications } from "./Notifications.js"
import { PreferencesService } from "./PreferencesService.js"
import { Projects } from "./Projects.js"
import { PushKeys } from "./PushKeys.js"
import { Quotas } from "./Quotas.js"
import { Reminders } from "./Reminders.js"
import { RequestMetrics } from "./RequestMetrics.js"
import { Review } from "./Review.js"
import { TaskLifecycle } from "./TaskLifecycle.js"
import { TaskQueries } from "./TaskQueries.js"
import { Tasks } from "./Tasks.js"
import { TimeSlots } from "./TimeSlots.js"
import { Triage } from "./Triage.js"
import { UndoService } from "./UndoService.js"
import { UserCalendar } from "./UserCalendar.js"
import { Users } from "./Users.js"
import { Webhooks } from "./Webhooks.js"
import { WebhookDeliveries } from "./WebhookDeliveries.js"
import { WebhookSender } from "./WebhookSender.js"
import { WebhookWakeup } from "./WebhookWakeup.js"

/** The pipeline and plain reads: everything else writes through these. */
const Core = Layer.mergeAll(
  Users.Default,
  Credentials.Default,
  Mutations.Default,
  TaskQueries.Default,
  EnrichmentQueue.Default,
  UserCalendar.Default,
  // One per user across instances (a table): reprocess and quick take both take from it.
  AiRateLimits.Default
).pipe(
  Layer.provideMerge(WebhookWakeup.Default),
  Layer.provideMerge(ChangeWakeup.Default)
)

const Periods = Quotas.Default.pipe(Layer.provideMerge(Core))

const Features = Layer.mergeAll(
  Tasks.Default,
  TaskLifecycle.Default,
  Projects.Default,
  PreferencesService.Default,
  Authenticator.Default
).pipe(Layer.provideMerge(Periods))

const Actions = BulkActions.Default.pipe(Layer.provideMerge(Features))

/** The AI helpers: one gateway to the model, and the features on top of it. */
const Ai = Layer.merge(AiInsights.Default, Enrichment.Default).pipe(
  Layer.provideMerge(AiAssist.Default),
  Layer.provideMerge(AiGateway.Default)
)

/** Every service the API uses. Needs an `SqlClient` and `AppConfig`, nothing else. */
export const ServicesLive = Layer.mergeAll(
  History.Default,
  Reminders.Default,
  TimeSlots.Default,
  UndoService.Default,
  Webhooks.Default,
  WebhookSender.Default,
  WebhookDeliveries.Default,
  MissedReminders.Default,
  Triage.Default,
  Exporter.Default,
  PushKeys.Default,
  Notifications.Default,
  Review.Default,
  ChangeHub.Default.pipe(Layer.provideMerge(ChangeFeed.Default)),
  Idempotency.Default,
  CalendarFeeds.Default,
  Ai,
  // Operations: request metrics and the background fibers readiness reports on.
  RequestMetrics.Live,
  Liveness.Live,
  // The same instance the maintenance fiber and bulk actions use (layers are shared by reference).
  DatabaseMaintenance.Default
).pipe(Layer.provideMerge(Actions))
