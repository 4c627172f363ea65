import { Either, Schema } from "effect"
import { type Row, sameValue } from "../kernel/Json.js"
import { instantOf } from "../kernel/LocalTime.js"
import type { TaskRow } from "../pipeline/Rows.js"
import { Labels, Notes, Priority, RecurrenceMode, type TaskCreate, Title } from "../tasks/Task.js"

/**
 * Spec §4.2: a create that gives only a title is enriched; any structured field bypasses
 * it. `enrich` decides alone when sent.
 */
export const shouldEnrich = (input: TaskCreate): boolean => {
  if (input.enrich !== undefined) return input.enrich
  return (input.due_at === undefined || input.due_at === null) &&
    (input.priority === undefined || input.priority === 0) &&
    (input.labels === undefined || input.labels.length === 0) &&
    (input.rrule === undefined || input.rrule === null)
}

/** The fields enrichment may write, and the order they are tried in. */
export const ENRICHED_FIELDS = ["project_id", "title", "priority", "labels", "notes", "due_at", "rrule", "recurrence_mode"] as const
export type EnrichedField = typeof ENRICHED_FIELDS[number]

/** A field whose value moved since the request was changed by the user: enrichment leaves it. */
export const userChanged = (baseline: Row, current: Pick<TaskRow, EnrichedField>, field: EnrichedField) =>
  !sameValue(baseline[field] ?? null, current[field])

const typed = (jsonSchema: object, description: string) =>
  Schema.optional(Schema.Unknown.annotations({ jsonSchema: { ...jsonSchema, description } }))

/**
 * What the model is asked for. Decoding takes any value per field (the JSON schema sent
 * to the provider still names the types): a bad field is dropped on its own by
 * `planEnrichment`, instead of one bad value losing the whole answer.
 */
export const EnrichmentAnswer = Schema.Struct({
  title: typed({ type: "string" }, "a clear, short task title"),
  due_at: typed({ type: ["string", "null"] }, "local wall time YYYY-MM-DDTHH:MM in the user's zone, or null"),
  priority: typed({ type: "integer", minimum: 0, maximum: 4 }, "0 (none) to 4 (urgent)"),
  labels: typed({ type: "array", items: { type: "string" } }, "short label names"),
  project: typed({ type: ["string", "null"] }, "one of the user's project names, or null"),
  rrule: typed({ type: ["string", "null"] }, "RFC 5545 RRULE without COUNT or UNTIL, or null"),
  recurrence_mode: typed({ type: "string", enum: ["from_due", "from_completion"] }, "how a recurring task repeats"),
  notes: typed({ type: "string" }, "extra detail from the title, or empty")
}).annotations({ identifier: "TaskEnrichment", description: "Structured fields read from a raw task title" })
export type EnrichmentAnswer = typeof EnrichmentAnswer.Type

export interface EnrichmentContext {
  readonly zone: string
  readonly projects: ReadonlyArray<{ readonly id: number; readonly name: string }>
}

export interface EnrichmentPlan {
  /** Candidate edits, each valid on its own; the service still checks them against the task. */
  readonly patch: { readonly [F in EnrichedField]?: unknown }
  /** Field → why it was dropped. */
  readonly dropped: Readonly<Record<string, string>>
}

const decodeWith = <A, I>(schema: Schema.Schema<A, I>, value: unknown): Either.Either<A, string> =>
  Either.mapLeft(Schema.decodeUnknownEither(schema as Schema.Schema<A, unknown>)(value), () => "invalid value")

/** `YYYY-MM-DDTHH:MM[:SS]` read in `zone`; an offset or Z is taken as given. */
export const wallTimeIn = (text: string, zone: string): Either.Either<Date, string> => {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2}))?(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i.exec(text.trim())
  if (m === null) return Either.left("not a date-time")
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])]
  const [hour, minute, second] = [Number(m[4] ?? 9), Number(m[5] ?? 0), Number(m[6] ?? 0)]
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) {
    return Either.left("not a calendar date")
  }
  if (hour > 23 || minute > 59 || second > 59 || year < 1970 || year > 9999) return Either.left("out of range")
  if (m[7] !== undefined) {
    const date = new Date(text.trim())
    return Number.isNaN(date.getTime()) ? Either.left("not a date-time") : Either.right(date)
  }
  return Either.right(instantOf(zone, year, month, day, hour, minute, second))
}

/** Enrichment never limits a series: a rule with COUNT or UNTIL is refused. */
export const boundedRule = (rule: string) => /(^|;)\s*(COUNT|UNTIL)\s*=/i.test(rule)

/**
 * Turns the model's answer into candidate edits. Each field is checked on its own with the
 * API's input schemas; absent and null fields are no edit; unknown project names are ignored.
 */
export const planEnrichment = (answer: EnrichmentAnswer, context: EnrichmentContext): EnrichmentPlan => {
  const patch: Record<string, unknown> = {}
  const dropped: Record<string, string> = {}
  const take = <A>(field: EnrichedField, result: Either.Either<A, string>) =>
    Either.match(result, {
      onLeft: (why) => {
        dropped[field] = why
      },
      onRight: (value) => {
        patch[field] = value
      }
    })
  if (answer.title !== undefined && answer.title !== null) {
    take("title", decodeWith(Title.pipe(Schema.maxLength(500)), typeof answer.title === "string" ? answer.title.trim() : answer.title))
  }
  if (answer.priority !== undefined && answer.priority !== null) take("priority", decodeWith(Priority, answer.priority))
  if (answer.labels !== undefined && answer.labels !== null) take("labels", decodeWith(Labels, answer.labels))
  if (answer.notes !== undefined && answer.notes !== null && answer.notes !== "") take("notes", decodeWith(Notes, answer.notes))
  if (answer.recurrence_mode !== undefined && answer.recurrence_mode !== null) {
    take("recurrence_mode", decodeWith(RecurrenceMode, answer.recurrence_mode))
  }
  if (typeof answer.project === "string" && answer.project.trim() !== "") {
    const wanted = answer.project.trim().toLowerCase()
    const found = context.projects.find((p) => p.name.trim().toLowerCase() === wanted)
    if (found === undefined) dropped.project_id = "unknown project"
    else patch.project_id = found.id
  } else if (answer.project !== undefined && answer.project !== null) {
    dropped.project_id = "invalid value"
  }
  if (answer.due_at !== undefined && answer.due_at !== null) {
    take("due_at", typeof answer.due_at === "string" ? wallTimeIn(answer.due_at, context.zone) : Either.left("invalid value"))
  }
  if (answer.rrule !== undefined && answer.rrule !== null && answer.rrule !== "") {
    const rule = typeof answer.rrule === "string" ? answer.rrule.trim().replace(/^RRULE:/i, "") : undefined
    take(
      "rrule",
      rule === undefined || rule.length === 0 || rule.length > 1000
        ? Either.left("invalid value")
        : boundedRule(rule)
        ? Either.left("COUNT and UNTIL are not accepted from enrichment")
        : Either.right(rule)
    )
  }
  return { patch, dropped }
}
