import { Layer } from "effect"
import { Authenticator } from "./Authenticator.js"
import { Credentials } from "./Credentials.js"
import { Mutations } from "./Mutations.js"
import { PreferencesService } from "./PreferencesService.js"
import { Projects } from "./Projects.js"
import { TaskQueries } from "./TaskQueries.js"
import { Tasks } from "./Tasks.js"
import { Users } from "./Users.js"

const Core = Layer.mergeAll(Users.Default, Credentials.Default, Mutations.Default, TaskQueries.Default)

/** Every service the API uses. Needs an `SqlClient` and `AppConfig`, nothing else. */
export const ServicesLive = Layer.mergeAll(
  Tasks.Default,
  Projects.Default,
  PreferencesService.Default,
  Authenticator.Default
).pipe(Layer.provideMerge(Core))
