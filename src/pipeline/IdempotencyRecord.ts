import { Data } from "effect"
import { type SqlText, sqlText } from "../sql/SqlText.js"
import type { UserId } from "../kernel/Ids.js"
import { IDEMPOTENCY_TTL_MS } from "./IdempotencyKey.js"
import { pgFieldsOf } from "../sql/DatabaseFailures.js"

/** A keyed request: whose key, and what the request was (method, path, body hashed). */
export interface KeyedRequest {
  readonly userId: UserId
  readonly key: string
  readonly fingerprint: string
}

/** The answer kept for a key and replayed to its retries. */
export interface StoredAnswer {
  readonly status: number
  readonly contentType: string | null
  readonly body: string
}

/**
 * What a keyed mutation records with its commit statement (`Mutations.runKeyed`): the key,
 * and the answer its result makes, as JSON text. A `Pending` in the result renders as the
 * statement's wire JSON text, spliced in by the statement; the pipeline hands the text it
 * recorded back (`recorded`), and the request answers with exactly that text, which a retry
 * replays.
 */
export class KeyedAnswer {
  private text: string | undefined

  constructor(
    readonly request: KeyedRequest,
    readonly status: number,
    readonly render: (result: unknown) => string
  ) {}

  /** Called by the pipeline once the record is written: the body as recorded. */
  recorded(body: string): void {
    this.text = body
  }

  /** The answer as recorded, once the write has committed. */
  get answer(): StoredAnswer | undefined {
    return this.text === undefined ? undefined : { status: this.status, contentType: KEYED_CONTENT_TYPE, body: this.text }
  }
}

/** The content type of the answers keyed mutations record: JSON, as `HttpServerResponse.unsafeJson` sends it. */
export const KEYED_CONTENT_TYPE = "application/json"

/** A keyed write's answer as `{data}` JSON with `status`. */
export const dataAnswer = (request: KeyedRequest, status = 200): KeyedAnswer =>
  new KeyedAnswer(request, status, (result) => JSON.stringify({ data: result }))

/** The key already has a record, or another transaction holds it: the keyed write rolled back. */
export class KeyRefused extends Data.TaggedError("KeyRefused")<{}> {}

/**
 * How the record refuses (steady_idempotency_busy): SK409 when another transaction holds the key; a
 * unique violation of the records' primary key when the key has a record already (live, or
 * expired and not purged yet).
 */
const KEY_BUSY = "SK409"
const UNIQUE_VIOLATION = "23505"
const RECORDS_KEY = "idempotency_keys_pkey"

export const isRefusal = (error: unknown): boolean => {
  const fields = pgFieldsOf(error)
  if (fields === undefined) return false
  return fields.code === KEY_BUSY || (fields.code === UNIQUE_VIOLATION && fields.constraint === RECORDS_KEY)
}

/** The name of a key's advisory lock. */
export const lockName = (request: KeyedRequest) => `${request.userId}:${request.key}`

/**
 * The record (migrations 0017, 0029): it takes the key's advisory lock and stores the answer,
 * or refuses (`isRefusal`): SK409 from the CASE's ELSE branch, evaluated only when the lock is
 * refused, or the primary key's 23505 for a recorded key. `body` is the SQL of the answer's
 * text. Sent with COMMIT behind it: a refusal means the COMMIT never runs.
 */
export const recordSql = (
  request: KeyedRequest,
  answer: { readonly status: number; readonly contentType: string | null; readonly body: SqlText },
  now: Date
): SqlText =>
  sqlText`INSERT INTO idempotency_keys (user_id, key, fingerprint, status, content_type, body, created_at, expires_at)
    SELECT ${request.userId}, ${request.key}, ${request.fingerprint}, ${answer.status}::integer, ${answer.contentType}::text,
      ${answer.body},
      CASE WHEN pg_try_advisory_xact_lock(hashtextextended(${lockName(request)}, 0)) THEN ${now.toISOString()}::timestamptz
        ELSE steady_idempotency_busy() END,
      ${new Date(now.getTime() + IDEMPOTENCY_TTL_MS).toISOString()}::timestamptz`
