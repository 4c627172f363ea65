import { Layer } from "effect"
import { Authenticator } from "./Authenticator.js"
import { Credentials } from "./Credentials.js"
import { History } from "./History.js"
import { Mutations } from "./Mutations.js"
import { PreferencesService } from "./PreferencesService.js"
import { Projects } from "./Projects.js"
import { Quotas } from "./Quotas.js"
import { Reminders } from "./Reminders.js"
import { TimeSlots } from "./TimeSlots.js"
import { UndoService } from "./UndoService.js"
import { TaskQueries } from "./TaskQueries.js"
import { TaskLifecycle } from "./TaskLifecycle.js"
import { Tasks } from "./Tasks.js"
import { Users } from "./Users.js"
import { Webhooks } from "./Webhooks.js"
import { WebhookWakeup } from "./WebhookWakeup.js"

const Core = Layer.mergeAll(Users.Default, Credentials.Default, Mutations.Default, TaskQueries.Default).pipe(
  Layer.provideMerge(WebhookWakeup.Default)
)
const Periods = Quotas.Default.pipe(Layer.provideMerge(Core))

/** Every service the API uses. Needs an `SqlClient` and `AppConfig`, nothing else. */
const Features = Layer.mergeAll(
  Tasks.Default,
  TaskLifecycle.Default,
  Projects.Default,
  PreferencesService.Default,
  Authenticator.Default
).pipe(Layer.provideMerge(Periods))

export const ServicesLive = Layer.mergeAll(History.Default, Reminders.Default, TimeSlots.Default, UndoService.Default, Webhooks.Default).pipe(
  Layer.provideMerge(Features)
)
