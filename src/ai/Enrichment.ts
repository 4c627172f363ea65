import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Either } from "effect"
import {
  ENRICHED_FIELDS,
  type EnrichedField,
  EnrichmentAnswer,
  planEnrichment,
  userChanged
} from "./AiEnrichment.js"
import type { JsonValue } from "../kernel/Json.js"
import type { TaskPatch } from "../tasks/Task.js"
import { isQuota, patchTaskRow, visibleFields } from "../tasks/TaskRules.js"
import { localNow } from "./AiAssist.js"
import { AiGateway } from "./AiGateway.js"
import { fill } from "./AiPrompts.js"
import { AppConfig } from "../kernel/AppConfig.js"
import { userFromRow } from "../kernel/CurrentUser.js"
import { type ClaimedEnrichment, EnrichmentQueue } from "./EnrichmentQueue.js"
import { Mutations } from "../pipeline/Mutations.js"
import type { Tx } from "../pipeline/Tx.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { TasksTable } from "../pipeline/Tables.js"
import { TaskQueries } from "../tasks/TaskQueries.js"
import { userWithAiContext } from "../accounts/UsersTable.js"
import { privateProjectNames, projectAccess } from "../projects/ProjectsTable.js"
import { inSharedProjectNow } from "./TaskEnrichmentSql.js"
import type { UserId } from "../kernel/Ids.js"

/** Fields a quota keeps out of enrichment: its rule names its period and it has no date. */
const QUOTA_KEEPS: ReadonlySet<EnrichedField> = new Set(["due_at", "rrule", "recurrence_mode"])

const weekday = (date: Date, zone: string) => new Intl.DateTimeFormat("en-US", { weekday: "long", timeZone: zone }).format(date)

/**
 * One enrichment request: asks the model about the raw title, then applies what is valid
 * as one undoable `enrich` step. Outcome for the worker: applied, or the provider's failure.
 */
export class Enrichment extends Effect.Service<Enrichment>()("steady/Enrichment", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const gateway = yield* AiGateway
    const queue = yield* EnrichmentQueue
    const mutations = yield* Mutations
    const queries = yield* TaskQueries
    const tuning = (yield* AppConfig).aiTuning

    const ownerOf = (userId: UserId) => userWithAiContext(sql, userId)

    const projectsOf = (userId: UserId) => privateProjectNames(sql, userId, 200)

    /**
     * Asks the model; fails with the provider's failure (the worker retries). A task in a
     * shared project is read by other users, and so is what enrichment writes on it: its
     * prompt carries neither the owner's `ai_context` nor their project names, and its
     * answer moves it nowhere (`projects` empty). A private task's prompt has the owner's
     * context and private projects, for the owner's eyes only.
     */
    const ask = Effect.fnUntraced(function*(claimed: ClaimedEnrichment) {
      const owner = yield* ownerOf(claimed.user_id)
      if (owner === undefined) return undefined
      const shared = yield* inSharedProjectNow(sql, claimed.task_id)
      const projects = shared ? [] : yield* projectsOf(owner.id)
      const now = yield* clockNow
      const prompt = fill(gateway.promptText("enrichment"), {
        zone: owner.timezone,
        local_now: localNow(now, owner.timezone),
        weekday: weekday(now, owner.timezone),
        projects: shared
          ? "(none: the task stays in its shared project; answer null)"
          : projects.length === 0
          ? "(none)"
          : projects.map((p) => p.name).join(", "),
        ai_context: shared ? "(nothing given)" : Array.from((owner.context ?? "").trim()).slice(0, 1000).join("") || "(nothing given)",
        title: claimed.source_title
      })
      const answer = yield* gateway.object(
        "enrichment",
        owner.id,
        prompt,
        EnrichmentAnswer,
        "task_enrichment",
        tuning.enrichmentTimeout
      )
      return { owner, projects, shared, answer }
    })

    /** The project is the owner's and private, held so until the transaction ends. */
    const stillPrivateOf = (projectId: unknown, ownerId: UserId) =>
      typeof projectId !== "number"
        ? Effect.succeed(false)
        : Effect.map(projectAccess(sql, projectId), (p) => p !== undefined && !p.shared && p.owner_id === ownerId)

    /**
     * Applies the answer in one transaction: fields the user changed since the request are
     * kept, each remaining field is tried with the API's own rules and dropped alone if
     * refused, the rest is one undo step with a task.updated event.
     */
    const apply = (claimed: ClaimedEnrichment, asked: NonNullable<Effect.Effect.Success<ReturnType<typeof ask>>>) =>
      mutations.run({ user: userFromRow(asked.owner), action: "enrich" }, (tx) => applyBody(tx, claimed, asked))
    const applyBody = Effect.fnUntraced(function*(tx: Tx, claimed: ClaimedEnrichment, asked: NonNullable<Effect.Effect.Success<ReturnType<typeof ask>>>) {
      // Task row first, then the queue row: the order create and reprocess lock them in.
      const current = yield* tx.lock(TasksTable, claimed.task_id)
      if (!(yield* queue.stillCurrent(claimed))) return { applied: [] as ReadonlyArray<string>, dropped: {} }
      if (current === undefined || current.deleted_at !== null) {
        yield* queue.finish(claimed, "done", current === undefined ? "task gone" : "task in the trash", tx.now)
        return { applied: [], dropped: {} }
      }
      // Read with a share lock: the project cannot become shared before this commits.
      const sharedNow = (yield* projectAccess(sql, current.project_id))?.shared ?? false
      if (!asked.shared && sharedNow) {
        // Moved into a shared project while the model answered a prompt with the owner's
        // private context: none of that answer is written where others read it. Asked
        // again, the task gets a prompt without it.
        yield* queue.requeue(current.id, claimed.source_title, tx.now)
        return { applied: [], dropped: { all: "moved into a shared project while asked; asked again" } }
      }
      const plan = planEnrichment(asked.answer, { zone: asked.owner.timezone, projects: asked.projects })
      const dropped: Record<string, string> = { ...plan.dropped }
      const quota = isQuota(current)
      let accepted: Record<string, unknown> = {}
      for (const field of ENRICHED_FIELDS) {
        if (!(field in plan.patch)) continue
        if (userChanged(claimed.baseline, current, field)) {
          dropped[field] = "changed by the user"
          continue
        }
        if (quota && QUOTA_KEEPS.has(field)) {
          dropped[field] = "not set on a quota"
          continue
        }
        if (field === "project_id" && !(yield* stillPrivateOf(plan.patch.project_id, asked.owner.id))) {
          // Shared (or gone) since the prompt listed it: the task stays where it is.
          dropped[field] = "no longer one of the owner's private projects"
          continue
        }
        const trial = { ...accepted, [field]: plan.patch[field] }
        const checked = patchTaskRow(current, trial as TaskPatch, { now: tx.now, zone: asked.owner.timezone })
        if (Either.isRight(checked)) accepted = trial
        else dropped[field] = checked.left.message
      }
      const writes = Either.getOrThrow(patchTaskRow(current, accepted as TaskPatch, { now: tx.now, zone: asked.owner.timezone }))
      const fields = visibleFields(yield* tx.update(TasksTable, claimed.task_id, writes))
      // Bookkeeping outside the undo entry: undoing the edit does not make it pending again.
      yield* queue.finish(claimed, "done", null, tx.now)
      const task = yield* queries.wire(claimed.task_id)
      if (fields.length > 0) {
        tx.emit({
          event: "task.updated",
          taskId: claimed.task_id,
          data: { task: task as JsonValue, fields_changed: [...fields] }
        })
      }
      tx.describe(`Enriched '${task.title}' (${fields.length === 0 ? "no changes" : fields.join(", ")})`)
      return { applied: fields, dropped }
    })

    /** Runs one claimed request to its outcome; `AiFailure` when the model could not answer. */
    const run = (claimed: ClaimedEnrichment) =>
      Effect.gen(function*() {
        const asked = yield* ask(claimed)
        if (asked === undefined) {
          yield* queue.finish(claimed, "failed", "owner gone", yield* clockNow)
          return
        }
        const outcome = yield* apply(claimed, asked)
        if (Object.keys(outcome.dropped).length > 0) {
          yield* Effect.logDebug(`Enrichment of task ${claimed.task_id} dropped fields`, outcome.dropped)
        }
      }).pipe(Effect.withSpan("Enrichment.run", { attributes: { task: claimed.task_id } }))

    return { run } as const
  })
}) {}
