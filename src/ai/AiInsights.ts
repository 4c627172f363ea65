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

interface SessionRow {
  readonly session_id: string
  readonly status: "running" | "complete" | "failed"
  readonly total_tasks: number
  readonly completed: number
  readonly started_at: string
  readonly finished_at: string | null
  readonly error: string | null
}

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
      return sql`UPDATE ai_insight_sessions SET status = 'failed', finished_at = ${now.toISOString()}::timestamptz,
          error = 'interrupted: the service stopped while this session ran'
        WHERE status = 'running' AND heartbeat_at < ${cutoff}::timestamptz`
    }).pipe(Effect.orDie)

    const candidates = (user: CurrentUserShape, now: Date) => insightCandidates(sql, user.id, now, INSIGHTS_MAX_TASKS)

    const runChunk = (user: CurrentUserShape, sessionId: string, chunk: ReadonlyArray<InsightCandidate>, context: string) =>
      Effect.gen(function*() {
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
        yield* sql.withTransaction(Effect.gen(function*() {
          for (const r of results) {
            yield* sql`INSERT INTO ai_insight_results (session_id, task_id, score, commentary, signals)
              VALUES (${sessionId}, ${r.task_id}, ${r.score}, ${r.commentary}, ${JSON.stringify(r.signals)}::jsonb)
              ON CONFLICT DO NOTHING`
          }
          const at = (yield* clockNow).toISOString()
          yield* sql`UPDATE ai_insight_sessions SET completed = completed + ${chunk.length}, heartbeat_at = ${at}::timestamptz
            WHERE id = ${sessionId}`
        })).pipe(Effect.orDie)
      })

    const finish = (sessionId: string, error: string | null) =>
      Effect.flatMap(clockNow, (now) =>
        sql`UPDATE ai_insight_sessions SET status = ${error === null ? "complete" : "failed"},
            finished_at = ${now.toISOString()}::timestamptz, error = ${error}
          WHERE id = ${sessionId} AND status = 'running'`).pipe(Effect.orDie)

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
        // The partial unique index allows one running session per user, across instances.
        const inserted = yield* sql<{ id: string }>`
          INSERT INTO ai_insight_sessions (id, user_id, status, total_tasks, completed, started_at, heartbeat_at)
          VALUES (${id}, ${user.id}, 'running', ${tasks.length}, 0, ${at}::timestamptz, ${at}::timestamptz)
          ON CONFLICT (user_id) WHERE status = 'running' DO NOTHING RETURNING id`.pipe(Effect.orDie)
        if (inserted.length === 0) return yield* new Conflict({ message: "An insights session is already running" })
        yield* FiberSet.run(running, runSession(user, id, tasks))
        return { session_id: id, total_tasks: tasks.length, started_at: at }
      }).pipe(Effect.withSpan("AiInsights.generate"))

    const status = (user: CurrentUserShape, sessionId: string) =>
      Effect.gen(function*() {
        yield* failStale
        const [row] = yield* sql<SessionRow>`
          SELECT id AS session_id, status, total_tasks, completed, steady_iso(started_at) AS started_at,
                 steady_iso(finished_at) AS finished_at, error
          FROM ai_insight_sessions WHERE id = ${sessionId} AND user_id = ${user.id}`.pipe(Effect.orDie)
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
        const [session] = yield* sql<{ id: string; finished_at: string }>`
          SELECT id, steady_iso(finished_at) AS finished_at FROM ai_insight_sessions
          WHERE user_id = ${user.id} AND status = 'complete' ORDER BY finished_at DESC, started_at DESC LIMIT 1`.pipe(Effect.orDie)
        if (session === undefined) return { session_id: null, generated_at: null, results: [], count: 0 }
        const rows = yield* insightResults(sql, session.id)
        return { session_id: session.id, generated_at: session.finished_at, results: rows, count: rows.length }
      }).pipe(Effect.withSpan("AiInsights.results"))

    return { generate, status, results, failStale } as const
  })
}) {}
