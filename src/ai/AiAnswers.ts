import { Schema } from "effect"

/** Quick take: the first non-empty line, unquoted, at most 200 characters (code points). */
export const QUICK_TAKE_MAX = 200
export const oneLine = (text: string): string => {
  const line = text.split(/\r?\n/).map((l) => l.trim()).find((l) => l.length > 0) ?? ""
  const unquoted = line.replace(/^["'“”]+|["'“”]+$/g, "").trim()
  const chars = Array.from(unquoted)
  return chars.length <= QUICK_TAKE_MAX ? unquoted : chars.slice(0, QUICK_TAKE_MAX - 1).join("").trimEnd() + "…"
}

/** What's next: at most this many picks, from at most this many candidates. */
export const WHATS_NEXT_MAX_PICKS = 8
export const WHATS_NEXT_MAX_CANDIDATES = 200

export const WhatsNextAnswer = Schema.Struct({
  tasks: Schema.Array(Schema.Struct({ task_id: Schema.Unknown, reason: Schema.optional(Schema.Unknown) })),
  summary: Schema.optional(Schema.Unknown)
}).annotations({ identifier: "WhatsNext", description: "The tasks to do next, most important first" })
export type WhatsNextAnswer = typeof WhatsNextAnswer.Type

const text = (value: unknown, max: number) =>
  typeof value === "string" ? Array.from(value.trim()).slice(0, max).join("") : ""

/** Ids the model invented are dropped, repeats removed, at most eight kept, in its order. */
export const pickWhatsNext = (answer: WhatsNextAnswer, candidates: ReadonlySet<number>) => {
  const seen = new Set<number>()
  const tasks: Array<{ task_id: number; reason: string }> = []
  for (const pick of answer.tasks) {
    const id = typeof pick.task_id === "string" && /^\d+$/.test(pick.task_id) ? Number(pick.task_id) : pick.task_id
    if (typeof id !== "number" || !candidates.has(id) || seen.has(id)) continue
    seen.add(id)
    tasks.push({ task_id: id, reason: text(pick.reason, 500) })
    if (tasks.length === WHATS_NEXT_MAX_PICKS) break
  }
  return { tasks, summary: text(answer.summary, 1000) }
}

export const NOTHING_NEXT_SUMMARY = "Nothing is overdue, due within a week or undated: there is nothing to pick from."

// ---- insights ----

export const INSIGHT_SIGNALS = ["review", "stale", "act_soon", "quick_win", "vague", "misprioritized"] as const
export type InsightSignal = typeof INSIGHT_SIGNALS[number]
/** `stale` needs a task at least this old. */
export const STALE_AFTER_DAYS = 21
export const INSIGHTS_CHUNK = 20
/** Insights look at this many open tasks at most (the oldest-created first are kept). */
export const INSIGHTS_MAX_TASKS = 500

export const InsightsAnswer = Schema.Struct({
  results: Schema.Array(Schema.Struct({
    task_id: Schema.Unknown,
    score: Schema.optional(Schema.Unknown),
    commentary: Schema.optional(Schema.Unknown),
    signals: Schema.optional(Schema.Unknown)
  }))
}).annotations({ identifier: "Insights", description: "One assessment per task" })
export type InsightsAnswer = typeof InsightsAnswer.Type

export interface InsightTask {
  readonly id: number
  readonly priority: number
  readonly ageDays: number
}

export interface InsightResult {
  readonly task_id: number
  readonly score: number
  readonly commentary: string
  readonly signals: ReadonlyArray<InsightSignal>
}

/**
 * The rules, enforced here rather than trusted to the model: ids outside the chunk dropped
 * (and repeats), score an integer 0–100, `stale` only at 21+ days, `act_soon` only on P3–P4,
 * unknown signals dropped, at most two kept.
 */
export const checkInsights = (answer: InsightsAnswer, chunk: ReadonlyArray<InsightTask>): Array<InsightResult> => {
  const byId = new Map(chunk.map((t) => [t.id, t]))
  const out = new Map<number, InsightResult>()
  for (const r of answer.results) {
    const id = typeof r.task_id === "string" && /^\d+$/.test(r.task_id) ? Number(r.task_id) : r.task_id
    const task = typeof id === "number" ? byId.get(id) : undefined
    if (task === undefined || out.has(task.id)) continue
    const raw = typeof r.score === "number" ? r.score : typeof r.score === "string" ? Number(r.score) : NaN
    const score = Number.isFinite(raw) ? Math.min(100, Math.max(0, Math.round(raw))) : 0
    const signals = (Array.isArray(r.signals) ? r.signals : [])
      .filter((s): s is InsightSignal => typeof s === "string" && (INSIGHT_SIGNALS as ReadonlyArray<string>).includes(s))
      .filter((s) => (s === "stale" ? task.ageDays >= STALE_AFTER_DAYS : s === "act_soon" ? task.priority >= 3 : true))
    out.set(task.id, { task_id: task.id, score, commentary: text(r.commentary, 500), signals: [...new Set(signals)].slice(0, 2) })
  }
  return [...out.values()]
}

/** Splits work into chunks of `size` (the last may be shorter). */
export const chunksOf = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}
