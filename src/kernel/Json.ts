export type JsonValue = null | boolean | number | string | ReadonlyArray<JsonValue> | { readonly [k: string]: JsonValue }
export type Row = Record<string, JsonValue>

const canonical = (v: JsonValue): JsonValue => {
  if (v === null || typeof v !== "object") return v
  if (Array.isArray(v)) return v.map(canonical)
  const obj = v as { readonly [k: string]: JsonValue }
  return Object.fromEntries(Object.keys(obj).sort().map((k) => [k, canonical(obj[k]!)]))
}

/** Structural equality of JSON values, ignoring object key order. */
export const sameValue = (a: JsonValue, b: JsonValue): boolean =>
  JSON.stringify(canonical(a)) === JSON.stringify(canonical(b))
