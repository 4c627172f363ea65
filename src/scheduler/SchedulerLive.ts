import { Layer } from "effect"
import { EnrichmentWorkerLive } from "./EnrichmentWorker.js"
import { MaintenanceLive } from "./Maintenance.js"
import { PurgesLive } from "./Purges.js"
import { QuotaRolloverLive } from "./QuotaRollover.js"
import { ReminderRollForwardLive } from "./ReminderRollForward.js"
import { WebhookDispatcherLive } from "./WebhookDispatcher.js"

/** Every background fiber the service runs; each starts at once and then repeats. */
export const SchedulerLive = Layer.mergeAll(
  ReminderRollForwardLive,
  QuotaRolloverLive,
  PurgesLive,
  WebhookDispatcherLive,
  EnrichmentWorkerLive,
  MaintenanceLive
)
