import type Pg from "pg"

export interface PoolStats {
  readonly max: number
  readonly inUse: number
  readonly idle: number
  readonly waiting: number
}

/** pg pools by the SqlClient built over them, so `/metrics` finds the pool of its own client. */
const pools = new WeakMap<object, Pg.Pool>()

/** Called where a server `SqlClient` is built over a `pg` pool (see `Database.ts`). */
export const registerPool = (client: object, pool: Pg.Pool): void => {
  pools.set(client, pool)
}

/** The pool behind a client: undefined for the embedded database (one connection, no pool). */
export const poolStatsOf = (client: object): PoolStats | undefined => {
  const pool = pools.get(client)
  if (pool === undefined) return undefined
  return {
    max: pool.options.max ?? 10,
    inUse: pool.totalCount - pool.idleCount,
    idle: pool.idleCount,
    waiting: pool.waitingCount
  }
}

/** The pg pool behind a server `SqlClient`; undefined for the embedded database. */
export const poolOf = (client: object): Pg.Pool | undefined => pools.get(client)
