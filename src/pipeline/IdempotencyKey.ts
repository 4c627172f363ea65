/**
 * Idempotency-Key (IETF httpapi idempotency-key draft): which requests take a key
 * and what a valid key is. The draft makes the header a Structured Field string (quoted);
 * many clients send the bare value (Stripe's style), so both are accepted and mean the same.
 */

export const IDEMPOTENCY_KEY_HEADER = "idempotency-key"
export const IDEMPOTENT_REPLAYED_HEADER = "idempotent-replayed"
/** The 422's code: the contract's list has none for a key reused on another request (README). */
export const IDEMPOTENCY_KEY_REUSED = "IDEMPOTENCY_KEY_REUSED"

/** How long the first answer is kept and replayed. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255
/** Live records one user may hold; the purge drops the oldest beyond it. */
export const MAX_IDEMPOTENCY_KEYS_PER_USER = 10_000

const KEYED_METHODS = new Set(["POST", "PATCH", "DELETE"])

/**
 * Writes that ignore the key, so the header passes through as if absent:
 * - `/api/auth/session` answers with a cookie, and a replay cannot carry it;
 * - `POST /api/tokens` answers with the raw token, which is stored nowhere in clear text;
 *   `POST /api/calendar/key` likewise with the calendar feed's key;
 * - `/api/notifications/actions` is not a user's request (its token is in the body);
 * - `/api/ai/…` waits on a remote model (a transaction must not), and the insights run it
 *   starts keeps working after the answer.
 */
const ignored = (method: string, path: string) =>
  path === "/api/auth/session" ||
  (method === "POST" && path === "/api/tokens") ||
  (method === "POST" && path === "/api/calendar/key") ||
  path === "/api/notifications/actions" ||
  path.startsWith("/api/ai/")

/** Whether a request with this method and path (no query) honours an Idempotency-Key. */
export const takesIdempotencyKey = (method: string, path: string): boolean =>
  KEYED_METHODS.has(method) && path.startsWith("/api/") && !ignored(method, path)

const PRINTABLE = /^[\x20-\x7e]+$/

const unquote = (quoted: string): string | undefined => {
  let out = ""
  for (let i = 1; i < quoted.length - 1; i++) {
    const c = quoted[i]!
    if (c === "\"") return undefined
    if (c === "\\") {
      const next = i + 1 < quoted.length - 1 ? quoted[++i] : undefined
      if (next !== "\"" && next !== "\\") return undefined
      out += next
    } else out += c
  }
  return out
}

/**
 * The key a header value names, or undefined when it is not 1–255 printable ASCII
 * characters. A quoted value is a Structured Field string: `\"` and `\\` are its only escapes.
 */
export const parseIdempotencyKey = (raw: string): string | undefined => {
  const quoted = raw.length >= 2 && raw.startsWith("\"") && raw.endsWith("\"")
  const value = quoted ? unquote(raw) : raw
  if (value === undefined || value.length === 0 || value.length > MAX_IDEMPOTENCY_KEY_LENGTH) return undefined
  return PRINTABLE.test(value) ? value : undefined
}
