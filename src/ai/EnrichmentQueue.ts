import * as SqlClient from "@effect/sql/SqlClient"
import * as SqlSchema from "@effect/sql/SqlSchema"
import { Clock, Duration, Effect, Queue, Ref, Schema } from "effect"
import { IsoText } from "../kernel/Columns.js"
import { JsonRow } from "../kernel/Json.js"
import { afterCommit } from "../pipeline/AfterCommit.js"
import { AppConfig } from "../kernel/AppConfig.js"
import { recordChanges, taskEntry } from "../changes/ChangeLog.js"
import { ChangeWakeup } from "../changes/ChangeWakeup.js"
import { endRequest, promotePending, requeueTask } from "./TaskEnrichmentSql.js"
import { TaskId, UserId } from "../kernel/Ids.js"

export const ClaimedEnrichment = Schema.Struct({
  task_id: TaskId,
  user_id: UserId,
  attempts: Schema.Int,
  source_title: Schema.String,
  /** The enriched fields as the request saw them (jsonb). */
  baseline: JsonRow,
  /** The request this claim is for: a reprocess while it runs starts a new one. */
  requested_at: IsoText
})
export type ClaimedEnrichment = typeof ClaimedEnrichment.Type

/**
 * The durable enrichment queue: one row per task, written in the same
 * transaction as the task, claimed under a lease with FOR UPDATE SKIP LOCKED so two
 * instances never enrich one task at once. The task row carries `enrichment_status`.
 */
export class EnrichmentQueue extends Effect.Service<EnrichmentQueue>()("steady/EnrichmentQueue", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* AppConfig
    const changeWakeup = yield* ChangeWakeup
    const enabled = config.aiProvider !== "off"
    const tuning = config.aiTuning
    /** Longer than one attempt can take, so no other instance takes a claim in flight. */
    const lease = Duration.sum(tuning.enrichmentTimeout, Duration.seconds(30))
    const wakeups = yield* Queue.sliding<void>(1)
    /** When this instance last queued a request: the worker holds back while creates stream in. */
    const lastQueued = yield* Ref.make(0)

    const busyWindowMs = Duration.toMillis(tuning.enrichmentBusyWindow)

    /**
     * Records a request queued now. True when none was queued within the busy window before
     * it: the worker may then be waiting out its poll, and the caller wakes it after the
     * commit. During a burst the worker paces itself (one request per pace, then a poll) and
     * finds the rest without a wake-up; waking it on every create cost each create a turn of
     * its loop and a timer.
     */
    const noteQueued = Effect.flatMap(
      Clock.currentTimeMillis,
      (now) => Ref.modify(lastQueued, (last): [boolean, number] => [now - last >= busyWindowMs, now])
    )

    /**
     * A create's request is the task row itself: `enrichment_status` 'pending' (migration
     * 0021). Its baseline, the enriched fields as created, is the row as it is until the
     * first update keeps it in `enrichment_baseline` (migration 0023). This moves up to `limit`
     * requests into the queue (`promotePending`), so `claim` can lease them.
     */
    const promote = (limit: number) => promotePending(sql, limit)

    /**
     * Re-queues enrichment of task `taskId` from `sourceTitle`, inside the caller's transaction;
     * its baseline is the row as it is now (`steady_enrichment_baseline`, as for a create).
     */
    const requeue = (taskId: number, sourceTitle: string, now: Date) => {
      const at = now.toISOString()
      return requeueTask(sql, taskId, sourceTitle, at).pipe(
        Effect.zipRight(noteQueued),
        Effect.orDie
      )
    }

    const claim = (limit: number, now: Date) => {
      const at = now.toISOString()
      const until = new Date(now.getTime() + Duration.toMillis(lease)).toISOString()
      return promote(limit).pipe(Effect.zipRight(SqlSchema.findAll({
        Request: Schema.Void,
        Result: ClaimedEnrichment,
        execute: () =>
          sql`
        UPDATE ai_enrichment_queue q SET lease_until = ${until}::timestamptz
        FROM (
          SELECT task_id FROM ai_enrichment_queue
          WHERE state = 'pending' AND next_attempt_at <= ${at}::timestamptz
            AND (lease_until IS NULL OR lease_until <= ${at}::timestamptz)
          ORDER BY next_attempt_at, task_id LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        ) due
        WHERE q.task_id = due.task_id
        RETURNING q.task_id, q.user_id, q.attempts, q.source_title, q.baseline, steady_iso(q.updated_at) AS requested_at`
      })(undefined)),
        Effect.orDie
      )
    }

    /** Still the request that was claimed (not re-queued by a reprocess meanwhile)? Locks it. */
    const stillCurrent = (claimed: ClaimedEnrichment) =>
      SqlSchema.findAll({
        Request: Schema.Void,
        Result: Schema.Struct({ ok: Schema.Boolean }),
        execute: () =>
          sql`SELECT true AS ok FROM ai_enrichment_queue
          WHERE task_id = ${claimed.task_id} AND state = 'pending' AND steady_iso(updated_at) = ${claimed.requested_at}
          FOR UPDATE`
      })(undefined).pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /** Ends a request: done or failed, on the queue row and the task. */
    const finish = (claimed: ClaimedEnrichment, state: "done" | "failed", error: string | null, now: Date) =>
      endRequest(sql, claimed.task_id, claimed.requested_at, state, error, now).pipe(
        // This write bypasses the mutation pipeline, so it reports to the change feed itself.
        Effect.tap((rows) => recordChanges(sql, now, rows.map((row) => taskEntry(row.id)))),
        sql.withTransaction,
        Effect.tap((rows) => (rows.length > 0 ? changeWakeup.wake : Effect.void)),
        Effect.orDie,
        Effect.asVoid)

    /** A failed attempt with attempts left: the next one waits `delay`. */
    const retryLater = (claimed: ClaimedEnrichment, delay: Duration.Duration, error: string, now: Date) =>
      sql`UPDATE ai_enrichment_queue SET attempts = attempts + 1, lease_until = NULL, last_error = ${error},
          next_attempt_at = ${new Date(now.getTime() + Duration.toMillis(delay)).toISOString()}::timestamptz
        WHERE task_id = ${claimed.task_id} AND steady_iso(updated_at) = ${claimed.requested_at}`.pipe(Effect.orDie, Effect.asVoid)

    /** Gives a claim back at once (this instance is stopping), instead of when its lease runs out. */
    const release = (claimed: ClaimedEnrichment) =>
      sql`UPDATE ai_enrichment_queue SET lease_until = NULL
        WHERE task_id = ${claimed.task_id} AND state = 'pending'`.pipe(Effect.orDie, Effect.asVoid)

    /** Whether a request was queued here within `window` (a burst of creates is going on). */
    const busy = (window: Duration.Duration) =>
      Effect.zipWith(Ref.get(lastQueued), Clock.currentTimeMillis, (last, now) => now - last < Duration.toMillis(window))

    return {
      enabled,
      busy,
      release,
      noteQueued,
      requeue,
      claim,
      stillCurrent,
      finish,
      retryLater,
      /** After a commit that queued work: the worker looks now, not at its next poll. */
      wake: afterCommit(Queue.offer(wakeups, undefined).pipe(Effect.asVoid)),
      wait: (timeout: Duration.DurationInput) => Queue.take(wakeups).pipe(Effect.timeoutOption(timeout), Effect.asVoid)
    } as const
  })
}) {}
