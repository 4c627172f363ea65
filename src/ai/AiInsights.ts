import * as SqlClient from "@effect/sql/SqlClient"
import { Duration, Effect, FiberSet } from "effect"
import * as Crypto from "node:crypto"
import {
  checkInsights,
  chunksOf,
  INSIGHTS_CHUNK,
  INSIGHTS_MAX_TASKS,
  InsightsAnswer
} from "./AiAnswers.js"
import { Conflict, NotFound } from "../kernel/Errors.js"
import { localDate } from "../kernel/LocalTime.js"
import { AiAssist, localNow, requireAi } from "./AiAssist.js"
import { AiGateway } from "./AiGateway.js"
import { fill } from "./AiPrompts.js"
import { AppConfig } from "../kernel/AppConfig.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { type InsightCandidate, insightCandidates, insightResults } from "../tasks/TaskListSql.js"
import { failStaleSessions, finishSession, insertSession, latestCompleteSession, recordChunk, sessionOf } from "./AiTables.js"

/**
 * Insights (spec §4.9/§4.10): a session scores the user's open tasks chunk by chunk in the
 * background. Sessions and results are stored; the signal rules live in `checkInsights`.
 */
export class AiInsights extends Effect.Service<AiInsights>()("steady/AiInsights", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const gateway = yield* AiGateway
    const assist = yield* AiAssist
    const tuning = (yield* AppConfig).aiTuning
    const running = yield* FiberSet.make()
    /** A running session silent for longer than one chunk can take was left by a crash. */
    const staleAfter = Duration.sum(tuning.insightsTimeout, Duration.seconds(30))

    const failStale = Effect.flatMap(clockNow, (now) => {
      const cutoff = new Date(now.getTime() - Duration.toMillis(staleAfter)).toISOString()
      return failStaleSessions(sql, now.toISOString(), cutoff)
    })

    const candidates = (user: CurrentUserShape, now: Date) => insightCandidates(sql, user.id, now, INSIGHTS_MAX_TASKS)

    const runChunk = Effect.fnUntraced(function*(user: CurrentUserShape, sessionId: string, chunk: ReadonlyArray<InsightCandidate>, context: string) {
      const now = yield* clockNow
      const prompt = fill(gateway.promptText("insights"), {
        local_now: localNow(now, user.timezone),
        zone: user.timezone,
        ai_context: context,
        tasks: chunk.map((t) =>
          `${t.id} | P${t.priority} | ${t.ageDays} | ${t.due_at === null ? "no date" : localDate(new Date(t.due_at), user.timezone)} | ${
            t.title.replace(/\s+/g, " ").slice(0, 200)
          }`
        ).join("\n")
      })
      const answer = yield* gateway.object("insights", user.id, prompt, InsightsAnswer, "insights", tuning.insightsTimeout)
      const results = checkInsights(answer, chunk)
      yield* recordChunk(sql, sessionId, results, chunk.length, (yield* clockNow).toISOString())
    })

    const finish = (sessionId: string, error: string | null) =>
      Effect.flatMap(clockNow, (now) => finishSession(sql, sessionId, error, now.toISOString()))

    const runSession = (user: CurrentUserShape, sessionId: string, tasks: ReadonlyArray<InsightCandidate>) =>
      Effect.gen(function*() {
        const context = yield* assist.aiContext(user.id)
        for (const chunk of chunksOf(tasks, INSIGHTS_CHUNK)) yield* runChunk(user, sessionId, chunk, context)
        yield* finish(sessionId, null)
      }).pipe(
        Effect.catchTags({
          AiOff: (e) => finish(sessionId, e.message),
          AiFailure: (e) => finish(sessionId, e.reason)
        }),
        Effect.catchAllCause((cause) =>
          Effect.zipRight(Effect.logError("Insights session failed", cause), finish(sessionId, "internal error"))
        ),
        Effect.withSpan("AiInsights.run")
      )

    const generate = (user: CurrentUserShape) =>
      Effect.gen(function*() {
        yield* requireAi(gateway.enabled)
        yield* failStale
        const now = yield* clockNow
        const tasks = yield* candidates(user, now)
        const id = Crypto.randomUUID()
        const at = now.toISOString()
        if (!(yield* insertSession(sql, { id, userId: user.id, totalTasks: tasks.length, at }))) {
          return yield* new Conflict({ message: "An insights session is already running" })
        }
        yield* FiberSet.run(running, runSession(user, id, tasks))
        return { session_id: id, total_tasks: tasks.length, started_at: at }
      }).pipe(Effect.withSpan("AiInsights.generate"))

    const status = (user: CurrentUserShape, sessionId: string) =>
      Effect.gen(function*() {
        yield* failStale
        const row = yield* sessionOf(sql, user.id, sessionId)
        if (row === undefined) return yield* Effect.fail(NotFound.of("Insights session"))
        const progress_pct = row.total_tasks === 0
          ? (row.status === "running" ? 0 : 100)
          : Math.floor((row.completed * 100) / row.total_tasks)
        return { ...row, progress_pct }
      }).pipe(Effect.withSpan("AiInsights.status"))

    /** The latest complete session's results, highest score first. */
    const results = (user: CurrentUserShape) =>
      Effect.gen(function*() {
        yield* requireAi(gateway.enabled)
        const session = yield* latestCompleteSession(sql, user.id)
        if (session === undefined) return { session_id: null, generated_at: null, results: [], count: 0 }
        const rows = yield* insightResults(sql, session.id)
        return { session_id: session.id, generated_at: session.finished_at, results: rows, count: rows.length }
      }).pipe(Effect.withSpan("AiInsights.results"))

    return { generate, status, results, failStale } as const
  })
}) {}
