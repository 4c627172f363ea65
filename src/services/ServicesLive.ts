import { Layer } from "effect"
import { Authenticator } from "./Authenticator.js"
import { BulkActions } from "./BulkActions.js"
import { Credentials } from "./Credentials.js"
import { Exporter } from "./Exporter.js"
import { History } from "./History.js"
import { Mutations } from "./Mutations.js"
import { Notifications } from "./Notifications.js"
import { PreferencesService } from "./PreferencesService.js"
import { Projects } from "./Projects.js"
import { PushKeys } from "./PushKeys.js"
import { Quotas } from "./Quotas.js"
import { Reminders } from "./Reminders.js"
import { Review } from "./Review.js"
import { TaskLifecycle } from "./TaskLifecycle.js"
import { TaskQueries } from "./TaskQueries.js"
import { Tasks } from "./Tasks.js"
import { TimeSlots } from "./TimeSlots.js"
import { Triage } from "./Triage.js"
import { UndoService } from "./UndoService.js"
import { Users } from "./Users.js"
import { Webhooks } from "./Webhooks.js"
import { WebhookWakeup } from "./WebhookWakeup.js"

/** The pipeline and plain reads: everything else writes through these. */
const Core = Layer.mergeAll(Users.Default, Credentials.Default, Mutations.Default, TaskQueries.Default).pipe(
  Layer.provideMerge(WebhookWakeup.Default)
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

/** Every service the API uses. Needs an `SqlClient` and `AppConfig`, nothing else. */
export const ServicesLive = Layer.mergeAll(
  History.Default,
  Reminders.Default,
  TimeSlots.Default,
  UndoService.Default,
  Webhooks.Default,
  Triage.Default,
  Exporter.Default,
  PushKeys.Default,
  Notifications.Default,
  Review.Default
).pipe(Layer.provideMerge(Actions))
