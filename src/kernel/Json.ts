import { Schema } from "effect"

export type JsonValue = null | boolean | number | string | ReadonlyArray<JsonValue> | { readonly [k: string]: JsonValue }
export type Row = Record<string, JsonValue>

const isJsonValue = (u: unknown): u is JsonValue => {
  if (u === null || typeof u === "boolean" || typeof u === "string") return true
  if (typeof u === "number") return Number.isFinite(u)
  if (Array.isArray(u)) return u.every(isJsonValue)
  if (typeof u !== "object") return false
  const proto: unknown = Object.getPrototypeOf(u)
  return (proto === Object.prototype || proto === null) && Object.values(u).every(isJsonValue)
}

/**
 * A `json`/`jsonb` column's value as both drivers give it (parsed with `JSON.parse`). Checked
 * by one walk rather than a union of suspended schemas: an undo entry or an enrichment
 * baseline holds whole rows, and this runs once per value read.
 */
export const JsonValue: Schema.Schema<JsonValue> = Schema.declare(isJsonValue, { identifier: "JsonValue" })

/** A JSON object: a stored row, a baseline. */
export const JsonRow: Schema.Schema<Row> = Schema.declare(
  (u): u is Row => typeof u === "object" && u !== null && !Array.isArray(u) && isJsonValue(u),
  { identifier: "JsonRow" }
)

const canonical = (v: JsonValue): JsonValue => {
  if (v === null || typeof v !== "object") return v
  if (Array.isArray(v)) return v.map(canonical)
  const obj = v as { readonly [k: string]: JsonValue }
  return Object.fromEntries(Object.keys(obj).sort().map((k) => [k, canonical(obj[k]!)]))
}

/** Structural equality of JSON values, ignoring object key order. */
export const sameValue = (a: JsonValue, b: JsonValue): boolean =>
  JSON.stringify(canonical(a)) === JSON.stringify(canonical(b))
