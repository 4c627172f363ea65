/**
 * Named prepared statements per connection (a server's, and the embedded database's one).
 * @effect/sql-pg and PGlite send every statement unnamed, so
 * PostgreSQL parses and plans it afresh on each call: for our hot statements the planning cost
 * more than the execution (the commit statement of a write ~1.6 ms of ~2.8 ms, the token lookup
 * 0.15 of 0.17 ms). A connection now prepares each parameterized statement text the first time
 * it runs it and executes the prepared one after that; PostgreSQL then reuses the plan.
 *
 * Bounded: at most `capacity` statements per connection, the least recently used one
 * deallocated to make room (its DEALLOCATE rides in the connection's queue before the next
 * statement). Names are never reused, so a DEALLOCATE that fails (inside an aborted
 * transaction) leaves a stray statement on the server until the connection closes, never a
 * name clash.
 *
 * Renewed: a statement is prepared anew after `maxUses` runs. After five runs PostgreSQL may
 * keep one generic plan for it, costed with the table sizes of that moment and never
 * revisited while nobody runs ANALYZE; made on a fresh install, such a plan can scan a table
 * that has since grown a thousandfold. Renewing bounds how long a plan outlives the sizes it
 * was made for, for the price of a few plannings per thousand runs.
 */

/** What the pg connection knows of named statements (pg/lib/connection.js). */
interface ParsedStatements {
  readonly parsedStatements: Record<string, string | undefined>
}

export interface NamedQuery {
  readonly name: string
  readonly text: string
  readonly values: ReadonlyArray<unknown>
}

/** Statements longer than this (bulk writes with many rows) are not worth a slot. */
const MAX_TEXT_LENGTH = 16_384

export const DEFAULT_CAPACITY = 200
export const DEFAULT_MAX_USES = 1_000

interface Entry {
  readonly name: string
  uses: number
  /** The cache's use count at this statement's last use: the smallest is the least recent. */
  lastUse: number
}

/**
 * PostgreSQL refused to run a prepared statement whose tables changed shape since it was
 * prepared (feature_not_supported, "cached plan must not change result type").
 */
const isStalePlan = (error: unknown) =>
  typeof error === "object" && error !== null && (error as { code?: unknown }).code === "0A000" &&
  /cached plan/.test(String((error as { message?: unknown }).message))

export class StatementCache {
  private readonly names = new Map<string, Entry>()
  private next = 0
  private useCount = 0

  constructor(private readonly capacity: number = DEFAULT_CAPACITY, private readonly maxUses: number = DEFAULT_MAX_USES) {}

  /**
   * The named form of `text`, or undefined when it should go unnamed. `deallocate` is called
   * with a statement to drop before this one is sent.
   *
   * A hit only stamps its entry. Keeping use order in the Map's insertion order instead
   * (delete and set again on every hit) made V8 rebuild the Map's table every few requests,
   * and those tables lived long enough to be copied by young collections. The scan for the
   * least recent entry runs only when a new statement finds the cache full.
   */
  name(text: string, deallocate: (name: string) => void): string | undefined {
    if (this.capacity <= 0 || text.length > MAX_TEXT_LENGTH) return undefined
    const known = this.names.get(text)
    if (known !== undefined) {
      if (++known.uses <= this.maxUses) {
        known.lastUse = ++this.useCount
        return known.name
      }
      this.names.delete(text)
      deallocate(known.name)
    } else if (this.names.size >= this.capacity) {
      let oldestText: string | undefined
      let oldest: Entry | undefined
      for (const [candidateText, candidate] of this.names) {
        if (oldest === undefined || candidate.lastUse < oldest.lastUse) {
          oldestText = candidateText
          oldest = candidate
        }
      }
      this.names.delete(oldestText!)
      deallocate(oldest!.name)
    }
    const name = `steady_${(this.next++).toString(36)}`
    this.names.set(text, { name, uses: 1, lastUse: ++this.useCount })
    return name
  }

  /** Forgets `text` after a failure, so its next use prepares it anew under a new name. */
  forget(text: string, connection: ParsedStatements | undefined, deallocate: (name: string) => void): void {
    const name = this.names.get(text)?.name
    if (name === undefined) return
    this.names.delete(text)
    if (connection !== undefined) delete connection.parsedStatements[name]
    deallocate(name)
  }

  get size(): number {
    return this.names.size
  }
}

/**
 * The query to send for `text` and `values` on a connection with `cache`: named when it has
 * parameters (a statement without any goes by the simple protocol, which cannot prepare).
 */
export const namedQuery = (
  cache: StatementCache,
  text: unknown,
  values: unknown,
  deallocate: (name: string) => void
): NamedQuery | undefined => {
  if (typeof text !== "string" || !Array.isArray(values) || values.length === 0) return undefined
  const name = cache.name(text, deallocate)
  return name === undefined ? undefined : { name, text, values }
}

/** After a statement failed: a stale plan is dropped so the next call prepares again. */
export const afterFailure = (
  cache: StatementCache,
  query: NamedQuery,
  error: unknown,
  connection: ParsedStatements | undefined,
  deallocate: (name: string) => void
) => {
  if (isStalePlan(error)) cache.forget(query.text, connection, deallocate)
}
