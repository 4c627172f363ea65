import { Layer } from "effect"
import { AiAssist } from "../ai/AiAssist.js"
import { AiGateway } from "../ai/AiGateway.js"
import { AiInsights } from "../ai/AiInsights.js"
import { AiRateLimits } from "../ai/AiRateLimits.js"
import { Authenticator } from "../accounts/Authenticator.js"
import { Enrichment } from "../ai/Enrichment.js"
import { EnrichmentQueue } from "../ai/EnrichmentQueue.js"
import { BulkActions } from "../triage/BulkActions.js"
import { ChangeFeed } from "../changes/ChangeFeed.js"
import { ChangeHub } from "../changes/ChangeHub.js"
import { ChangeWakeup } from "../changes/ChangeWakeup.js"
import { CalendarFeeds } from "../changes/CalendarFeeds.js"
import { Credentials } from "../accounts/Credentials.js"
import { DatabaseMaintenance } from "./DatabaseMaintenance.js"
import { Exporter } from "../history/Exporter.js"
import { History } from "../history/HistoryService.js"
import { Idempotency } from "../pipeline/Idempotency.js"
import { Liveness } from "./Liveness.js"
import { MissedReminders } from "../quotas/MissedReminders.js"
import { Mutations } from "../pipeline/Mutations.js"
import { RecentRows } from "../pipeline/RecentRows.js"
import { Notifications } from "../quotas/Notifications.js"
import { PreferencesService } from "../accounts/PreferencesService.js"
import { Projects } from "../projects/Projects.js"
import { PushKeys } from "../quotas/PushKeys.js"
import { Quotas } from "../quotas/Quotas.js"
import { Reminders } from "../quotas/Reminders.js"
import { RequestMetrics } from "../http/RequestMetrics.js"
import { Review } from "../triage/Review.js"
import { TaskLifecycle } from "../lifecycle/TaskLifecycle.js"
import { TaskQueries } from "../tasks/TaskQueries.js"
import { Tasks } from "../tasks/Tasks.js"
import { TimeSlots } from "../slots/TimeSlots.js"
import { Triage } from "../triage/TriageService.js"
import { UndoService } from "../undo/UndoService.js"
import { UserCalendar } from "../accounts/UserCalendar.js"
import { Users } from "../accounts/Users.js"
import { Webhooks } from "../webhooks/Webhooks.js"
import { WebhookDeliveries } from "../webhooks/WebhookDeliveries.js"
import { WebhookSender } from "../webhooks/WebhookSender.js"
import { WebhookWakeup } from "../webhooks/WebhookWakeup.js"

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
  Layer.provideMerge(ChangeWakeup.Default),
  // One for the pipeline, which keeps rows, and the features that start edits from them.
  Layer.provideMerge(RecentRows.Default)
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
