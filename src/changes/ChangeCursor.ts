/**
 * A position in the change feed: the writing transaction's id and the row id, in that
 * order. The feed only ever grows at the end of this order (see migration 0010), so a
 * cursor is "everything up to here". On the wire it is opaque: 16 bytes, base64url.
 */
export interface Position {
  readonly xid: bigint
  readonly id: bigint
}

export const ORIGIN: Position = { xid: 0n, id: 0n }

const MAX_U64 = (1n << 64n) - 1n

export const compare = (a: Position, b: Position): number =>
  a.xid < b.xid ? -1 : a.xid > b.xid ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0

export const max = (a: Position, b: Position): Position => (compare(a, b) >= 0 ? a : b)

export const encodeCursor = (p: Position): string => {
  const bytes = Buffer.alloc(16)
  bytes.writeBigUInt64BE(p.xid, 0)
  bytes.writeBigUInt64BE(p.id, 8)
  return bytes.toString("base64url")
}

/** Undefined for anything that is not a cursor this service could have issued. */
export const decodeCursor = (text: string): Position | undefined => {
  if (!/^[A-Za-z0-9_-]{22}$/.test(text)) return undefined
  const bytes = Buffer.from(text, "base64url")
  if (bytes.length !== 16 || bytes.toString("base64url") !== text) return undefined
  const xid = bytes.readBigUInt64BE(0)
  const id = bytes.readBigUInt64BE(8)
  // Row ids are bigserial: a set top bit is a forged cursor, not a position.
  if (id > MAX_U64 >> 1n) return undefined
  return { xid, id }
}

/** From the text columns the database returns (xid8 and bigint as text). */
export const positionOf = (xid: string, id: string): Position => ({ xid: BigInt(xid), id: BigInt(id) })
