import * as SqlClient from "@effect/sql/SqlClient"
import { Duration, Effect } from "effect"
import {
  NOTHING_NEXT_SUMMARY,
  oneLine,
  pickWhatsNext,
  WHATS_NEXT_MAX_CANDIDATES,
  WhatsNextAnswer
} from "./AiAnswers.js"
import { ServiceUnavailable } from "../kernel/Errors.js"
import { localDate, localTimeOfDay } from "../kernel/LocalTime.js"
import { type AiFailure, AiGateway, type AiOff } from "./AiGateway.js"
import { fill } from "./AiPrompts.js"
import { AiRateLimits } from "./AiRateLimits.js"
import { AI_FEATURES, type AiFeature, AppConfig } from "../kernel/AppConfig.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { TaskQueries } from "../tasks/TaskQueries.js"
import { openTaskLines, type TaskLine, whatsNextCandidates } from "../tasks/TaskListSql.js"
import { pendingOf } from "./TaskEnrichmentSql.js"
import { recentActivity, storedWhatsNext, storeWhatsNext, type WhatsNextResult } from "./AiTables.js"
import { aiContextOf } from "../accounts/UsersTable.js"
import type { UserId } from "../kernel/Ids.js"

/** CONTRACT §8: 503 when AI is off; a provider failure is a 503 with the reason in `details`. */
export const unavailable = (error: AiOff | AiFailure) =>
  error._tag === "AiOff"
    ? new ServiceUnavailable({ message: error.message, details: { reason: "ai_off" } })
    : new ServiceUnavailable({ message: "The AI provider failed", details: { reason: error.reason } })

export const requireAi = (enabled: boolean) =>
  enabled ? Effect.void : Effect.fail(new ServiceUnavailable({
    message: "AI features are switched off (SERVICE_AI_PROVIDER=off)",
    details: { reason: "ai_off" }
  }))

export type { TaskLine }

const lineOf = (t: TaskLine, zone: string) =>
  `${t.id} | P${t.priority} | ${t.due_at === null ? "no date" : `${localDate(new Date(t.due_at), zone)} ${localTimeOfDay(new Date(t.due_at), zone)}`} | ${
    t.title.replace(/\s+/g, " ").slice(0, 200)
  }`

export const localNow = (now: Date, zone: string) => `${localDate(now, zone)} ${localTimeOfDay(now, zone)}`

/** Quick take, what's next, the model test and the status page (spec §4.9). */
export class AiAssist extends Effect.Service<AiAssist>()("steady/AiAssist", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const gateway = yield* AiGateway
    const queries = yield* TaskQueries
    const config = yield* AppConfig
    const rateLimits = yield* AiRateLimits
    const tuning = config.aiTuning

    const aiContext = (userId: UserId) =>
      Effect.map(
        aiContextOf(sql, userId),
        (context) => Array.from((context ?? "").trim()).slice(0, 1000).join("") || "(nothing given)"
      )

    const openTasks = (userId: UserId, limit: number) => openTaskLines(sql, userId, limit)

    const quickTake = (user: CurrentUserShape, input: { readonly title: string; readonly has_due_date?: boolean | undefined }) =>
      Effect.gen(function*() {
        yield* requireAi(gateway.enabled)
        // Each call waits on the model: a per-user limit keeps one user's loop from holding
        // the provider (and its bill) for everyone.
        yield* rateLimits.take("quick_take", user.id)
        const now = yield* clockNow
        const counts = yield* queries.countsAt(user, now)
        const tasks = yield* openTasks(user.id, 60)
        const prompt = fill(gateway.promptText("quick_take"), {
          title: input.title.trim(),
          has_due_date: input.has_due_date === true ? "yes" : "no",
          total: counts.total,
          overdue: counts.overdue,
          today: counts.today,
          tasks: tasks.length === 0 ? "(none)" : tasks.map((t) => lineOf(t, user.timezone)).join("\n")
        })
        const answer = yield* gateway.text("quick_take", user.id, prompt, tuning.quickTakeTimeout).pipe(Effect.mapError(unavailable))
        const text = oneLine(answer)
        if (text === "") return yield* new ServiceUnavailable({ message: "The AI provider failed", details: { reason: "empty answer" } })
        return { text }
      }).pipe(Effect.withSpan("AiAssist.quickTake"))

    /** A minimal prompt through the feature's provider and model: never an HTTP error. */
    const modelTest = (user: CurrentUserShape, feature: AiFeature) =>
      Effect.gen(function*() {
        const picked = gateway.choice(feature)
        const base = {
          provider: picked.provider,
          provider_display: picked.providerDisplay,
          model: picked.model,
          model_display: picked.model === "" ? "None" : picked.model
        }
        if (!gateway.enabled) {
          return { success: false, duration_ms: 0, ...base, error: "AI features are switched off (SERVICE_AI_PROVIDER=off)" }
        }
        const [elapsed, result] = yield* Effect.timed(
          Effect.either(gateway.text(feature, user.id, gateway.promptText("model_test"), tuning.testTimeout))
        )
        const duration_ms = Math.round(Duration.toMillis(elapsed))
        return result._tag === "Right"
          ? { success: true, duration_ms, ...base, error: null }
          : { success: false, duration_ms, ...base, error: result.left._tag === "AiOff" ? result.left.message : result.left.reason }
      }).pipe(Effect.withSpan("AiAssist.modelTest"))

    const status = (user: CurrentUserShape) =>
      Effect.gen(function*() {
        yield* requireAi(gateway.enabled)
        const pending = yield* pendingOf(sql, user.id)
        const calls = yield* recentActivity(sql, user.id, 20)
        const picked = gateway.choice("enrichment")
        return {
          enabled: true,
          provider: picked.provider,
          provider_display: picked.providerDisplay,
          models: Object.fromEntries(AI_FEATURES.map((f) => [f, gateway.choice(f).model])) as Record<AiFeature, string>,
          pending_enrichments: pending,
          recent_calls: calls
        }
      }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("AiAssist.status"))

    // ---- what's next ----

    const storedToday = (userId: UserId, day: string) => storedWhatsNext(sql, userId, day)

    /** Open, not quotas: undated, overdue or due within 7 days (spec §4.9). */
    const candidates = (userId: UserId, now: Date) => {
      const weekAhead = new Date(now.getTime() + 7 * 86_400_000).toISOString()
      return whatsNextCandidates(sql, userId, weekAhead, WHATS_NEXT_MAX_CANDIDATES)
    }

    const store = (userId: UserId, day: string, result: WhatsNextResult) => storeWhatsNext(sql, userId, day, result)

    const whatsNext = (user: CurrentUserShape, refresh: boolean) =>
      Effect.gen(function*() {
        yield* requireAi(gateway.enabled)
        const started = yield* clockNow
        const day = started.toISOString().slice(0, 10)
        if (!refresh) return yield* storedToday(user.id, day)
        const tasks = yield* candidates(user.id, started)
        if (tasks.length === 0) {
          const fixed = { tasks: [], summary: NOTHING_NEXT_SUMMARY, generated_at: started.toISOString(), duration_ms: 0 }
          yield* store(user.id, day, fixed)
          return fixed
        }
        const prompt = fill(gateway.promptText("whats_next"), {
          local_now: localNow(started, user.timezone),
          zone: user.timezone,
          ai_context: yield* aiContext(user.id),
          tasks: tasks.map((t) => lineOf(t, user.timezone)).join("\n")
        })
        const answer = yield* gateway.object("whats_next", user.id, prompt, WhatsNextAnswer, "whats_next", tuning.whatsNextTimeout)
          .pipe(Effect.mapError(unavailable))
        const picked = pickWhatsNext(answer, new Set(tasks.map((t) => t.id)))
        const finished = yield* clockNow
        const result = {
          ...picked,
          generated_at: finished.toISOString(),
          duration_ms: Math.max(0, finished.getTime() - started.getTime())
        }
        yield* store(user.id, day, result)
        return result
      }).pipe(Effect.withSpan("AiAssist.whatsNext"))

    return { quickTake, modelTest, status, whatsNext, aiContext, openTasks } as const
  })
}) {}
