import { Effect, FiberRef } from "effect"
import { type Local, locallyAll } from "../kernel/FiberLocals.js"

/**
 * Effects held back until an enclosing transaction commits. A service's own transaction
 * nests as a savepoint when the HTTP layer wraps the whole request in one (Idempotency-Key),
 * so "after my transaction" is not "after commit" there: a wake-up sent at that moment
 * would look for rows nobody else can see yet.
 */
// A plain value, not an Option: setting a FiberRef compares the old value with the new one,
// and an Option is compared by hashing what it holds (a keyed write sets three of these).
const held = FiberRef.unsafeMake<Array<Effect.Effect<void>> | undefined>(undefined)

/** Runs `effect` now, or after the enclosing `holdingAfterCommit` transaction succeeds. */
export const afterCommit = (effect: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.flatMap(FiberRef.get(held), (list) =>
    list === undefined
      ? effect
      : Effect.sync(() => {
        list.push(effect)
      }))

/**
 * The FiberRef setting (for `locallyAll`) under which `afterCommit` effects are pushed onto
 * `list` instead of run: its owner runs them once its transaction has committed, and drops
 * them when it rolled back.
 */
export const holdingIn = (list: Array<Effect.Effect<void>>): Local => [held, list]

/** Runs the effects `holdingIn` gathered, in order. */
export const runHeld = (list: ReadonlyArray<Effect.Effect<void>>): Effect.Effect<void> =>
  list.length === 0 ? Effect.void : Effect.forEach(list, (effect) => effect, { discard: true })

/**
 * Runs `transaction` holding every `afterCommit` effect inside it, then runs them once it
 * has succeeded (committed). A failed transaction rolled back, so they are dropped.
 */
export const holdingAfterCommit = <A, E, R>(transaction: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const list: Array<Effect.Effect<void>> = []
    return Effect.tap(locallyAll(transaction, () => [holdingIn(list)]), () => runHeld(list))
  })
