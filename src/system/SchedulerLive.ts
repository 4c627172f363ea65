import { Layer } from "effect"
import { EnrichmentWorkerLive } from "../ai/EnrichmentWorker.js"
import { MaintenanceLive } from "./Maintenance.js"
import { PurgesLive } from "./Purges.js"
import { QuotaRolloverLive } from "../quotas/QuotaRollover.js"
import { ReminderRollForwardLive } from "../quotas/ReminderRollForward.js"
import { WebhookDispatcherLive } from "../webhooks/WebhookDispatcher.js"

/** Every background fiber the service runs; each starts at once and then repeats. */
export const SchedulerLive = Layer.mergeAll(
  ReminderRollForwardLive,
  QuotaRolloverLive,
  PurgesLive,
  WebhookDispatcherLive,
  EnrichmentWorkerLive,
  MaintenanceLive
)
