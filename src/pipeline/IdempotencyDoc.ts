import {
  IDEMPOTENCY_KEY_REUSED,
  IDEMPOTENCY_TTL_MS,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  takesIdempotencyKey
} from "./IdempotencyKey.js"

type JsonObject = { [k: string]: unknown }

const HOURS = IDEMPOTENCY_TTL_MS / 3_600_000

const keyParameter = {
  name: "Idempotency-Key",
  in: "header",
  required: false,
  description: `Makes a retry of this write safe (IETF httpapi idempotency-key draft). The first answer is kept ` +
    `for ${HOURS} hours per user, in the same transaction as the write; a retry with the same key, method, path and ` +
    `body gets that answer again with \`Idempotent-Replayed: true\` and changes nothing. The same key on another ` +
    `request is a 422, and while the first is still running a 409. Error answers are not kept. A quoted value ` +
    `(Structured Field string) and the bare value are the same key.`,
  schema: { type: "string", minLength: 1, maxLength: MAX_IDEMPOTENCY_KEY_LENGTH, pattern: "^[\\x20-\\x7E]+$" }
}

const replayedHeader = {
  "Idempotent-Replayed": {
    description: "Present (`true`) when this is the kept answer to an earlier request with the same Idempotency-Key",
    schema: { type: "string", enum: ["true"] }
  }
}

const envelopeSchema = {
  type: "object",
  required: ["error", "code", "details"],
  properties: {
    error: { type: "string" },
    code: { type: "string", enum: [IDEMPOTENCY_KEY_REUSED] },
    details: { type: "object" }
  },
  additionalProperties: false,
  description: "The Idempotency-Key was first used for a different request (method, path or body)"
}

/**
 * Declares the Idempotency-Key header on every write that honours it, the 422 for a key
 * reused on another request, and the `Idempotent-Replayed` header on its success answers
 * (the 409 for a key still running is the API-wide CONFLICT answer).
 */
export const declareIdempotencyKey = (doc: JsonObject): JsonObject => {
  const paths = Object.fromEntries(Object.entries(doc.paths as JsonObject).map(([path, ops]) => [
    path,
    Object.fromEntries(Object.entries(ops as JsonObject).map(([method, op]) => {
      const operation = op as JsonObject
      if (!takesIdempotencyKey(method.toUpperCase(), path)) return [method, operation]
      const responses = Object.fromEntries(Object.entries(operation.responses as JsonObject).map(([status, response]) => [
        status,
        status.startsWith("2") ? { ...(response as JsonObject), headers: replayedHeader } : response
      ]))
      return [method, {
        ...operation,
        parameters: [...((operation.parameters as Array<unknown> | undefined) ?? []), keyParameter],
        responses: {
          ...responses,
          "422": {
            description: IDEMPOTENCY_KEY_REUSED,
            content: { "application/json": { schema: { $ref: "#/components/schemas/IdempotencyKeyReused" } } }
          }
        }
      }]
    }))
  ]))
  const components = doc.components as JsonObject
  return {
    ...doc,
    paths,
    components: { ...components, schemas: { ...(components.schemas as JsonObject), IdempotencyKeyReused: envelopeSchema } }
  }
}
