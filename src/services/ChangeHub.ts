import * as SqlClient from "@effect/sql/SqlClient"
import { Chunk, Clock, Deferred, Effect, Queue, Schedule, Stream } from "effect"
import { compare, encodeCursor, max, type Position } from "../domain/ChangeCursor.js"
import { ChangeFeed, changeJson, concerns, type FeedRow, positionOfRow } from "./ChangeFeed.js"
import { CHANGES_CHANNEL } from "./ChangeLog.js"
import { ChangeWakeup } from "./ChangeWakeup.js"
import { logFailure } from "./DatabaseFailures.js"

/** Comment lines that keep proxies from closing an idle stream (issue 14: every 15 s). */
export const HEARTBEAT_MS = 15_000
/** Without any wake-up the hub still looks this often: a lost NOTIFY costs at most this much. */
export const HUB_POLL_MS = 1_000
/**
 * Rows committed above xmin wait for an older transaction still running. If it writes feed
 * rows its commit wakes the hub; if not (a webhook attempt, a lease), the hub looks again
 * after this long.
 */
const HELD_BACK_RETRY_MS = 25
/** Rows per read, by the hub and by a stream catching up. */
const BATCH = 500
/**
 * Text queued for a client that does not read as fast as changes come (characters, about
 * bytes); beyond this the stream stops taking from the hub and catches up from the table,
 * so 1,000 slow clients hold at most ~256 MiB here.
 */
const MAX_QUEUED_CHARS = 256 * 1024

/**
 * One open event stream. While attached, the hub appends the events its user may see and
 * moves `pos` past every batch; detached (catching up, or too far behind), the stream reads
 * the table itself from `pos` until it reaches the hub's position again.
 */
interface Subscriber {
  readonly userId: number
  readonly queue: Queue.Queue<string>
  pos: Position
  attached: boolean
  /** When the stream last got something (Clock millis), for heartbeats. */
  lastSent: number
  /** Characters in `queue` not yet taken by the stream. */
  queued: number
}

const eventText = (row: FeedRow, userId: number) =>
  `id: ${encodeCursor(positionOfRow(row))}\ndata: ${changeJson(row, userId)}\n\n`

/**
 * Fans the change feed out to this instance's event streams with one read per wake-up,
 * whatever the number of streams. Wake-ups come from this instance's commits and, on
 * PostgreSQL, from NOTIFY by every instance; the data always comes from the table.
 */
export class ChangeHub extends Effect.Service<ChangeHub>()("steady/ChangeHub", {
  scoped: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const feed = yield* ChangeFeed
    const wakeup = yield* ChangeWakeup

    // Open streams end (cleanly, as a finished response) when the service shuts down; the
    // HTTP server's close would otherwise wait for clients that never hang up.
    const closing = yield* Deferred.make<void>()
    yield* Effect.addFinalizer(() => Deferred.succeed(closing, undefined))

    const byUser = new Map<number, Set<Subscriber>>()
    const attached = new Set<Subscriber>()
    /** Everything up to here has been handed to every attached stream; undefined when none is. */
    let head: Position | undefined
    /**
     * Open while a stream is attached. Without streams the hub's loops wait on it rather than
     * on timers: an idle service runs no polls, and a test moving the TestClock by days does
     * not replay a poll for every second it skips.
     */
    const streaming = yield* Effect.makeLatch(false)

    const detach = (s: Subscriber) => {
      if (!s.attached) return
      s.attached = false
      attached.delete(s)
      const mine = byUser.get(s.userId)
      mine?.delete(s)
      if (mine?.size === 0) byUser.delete(s.userId)
      if (attached.size === 0) {
        head = undefined
        streaming.unsafeClose()
      }
    }

    /** Joins the hub if the stream has read as far as the hub; synchronous, so no batch slips between. */
    const tryAttach = (s: Subscriber): boolean => {
      if (head !== undefined && compare(s.pos, head) < 0) return false
      if (head === undefined) head = s.pos
      s.attached = true
      attached.add(s)
      streaming.unsafeOpen()
      const mine = byUser.get(s.userId) ?? new Set<Subscriber>()
      mine.add(s)
      byUser.set(s.userId, mine)
      return true
    }

    /** Refreshed by the heartbeat fiber; a second's precision is plenty for 15 s heartbeats. */
    let nowMillis = yield* Clock.currentTimeMillis

    const publish = (rows: ReadonlyArray<FeedRow>, to: Position) => {
      const out = new Map<Subscriber, Array<string>>()
      for (const row of rows) {
        const targets = row.shared ? attached : byUser.get(row.user_id)
        if (targets === undefined) continue
        const at = positionOfRow(row)
        // A user's streams share one rendering of the event.
        const texts = new Map<number, string>()
        for (const s of targets) {
          if (compare(at, s.pos) <= 0 || !concerns(row, s.userId)) continue
          let text = texts.get(s.userId)
          if (text === undefined) texts.set(s.userId, (text = eventText(row, s.userId)))
          let list = out.get(s)
          if (list === undefined) out.set(s, (list = []))
          list.push(text)
        }
      }
      for (const [s, events] of out) {
        // A client that stopped reading falls back to the table rather than growing memory.
        const text = events.join("")
        if (s.queued + text.length > MAX_QUEUED_CHARS) {
          detach(s)
          continue
        }
        s.queued += text.length
        s.queue.unsafeOffer(text)
        s.lastSent = nowMillis
      }
      for (const s of attached) s.pos = max(s.pos, to)
      head = to
    }

    /** One read from the hub's position; answers how long to wait for the next. */
    const step = Effect.gen(function*() {
      const from = head
      if (from === undefined) return HUB_POLL_MS
      const b = yield* feed.bound
      const page = yield* feed.all(from, BATCH, b)
      // Streams may have attached or left while the read ran: `head` only moves forward.
      if (head === undefined) return HUB_POLL_MS
      if (compare(head, from) !== 0) return 0
      publish(page.rows, page.next)
      return page.hasMore ? 0 : b.heldBack ? HELD_BACK_RETRY_MS : HUB_POLL_MS
    })

    const loop = Effect.gen(function*() {
      let wait = HUB_POLL_MS
      while (true) {
        yield* streaming.await
        if (wait > 0) yield* wakeup.wait(wait)
        wait = yield* step.pipe(
          Effect.catchAllCause((cause) => Effect.as(logFailure("Change hub read failed", cause, "warning"), HUB_POLL_MS))
        )
      }
    })
    yield* Effect.forkScoped(loop)

    // One timer for every stream, rather than one per stream racing each wait for events.
    const heartbeats = Effect.gen(function*() {
      nowMillis = yield* Clock.currentTimeMillis
      for (const s of attached) {
        if (nowMillis - s.lastSent < HEARTBEAT_MS) continue
        const beat = ": heartbeat\n\n"
        s.queued += beat.length
        s.queue.unsafeOffer(beat)
        s.lastSent = nowMillis
      }
    })
    yield* Effect.forkScoped(Effect.forever(streaming.await.pipe(Effect.zipRight(heartbeats), Effect.zipRight(Effect.sleep("1 second")))))

    // Other instances' commits arrive by NOTIFY on PostgreSQL; the embedded database has one process.
    const listen = (sql as SqlClient.SqlClient & { listen?: (channel: string) => Stream.Stream<string, unknown> }).listen
    if (typeof listen === "function") {
      yield* Effect.forkScoped(
        listen.call(sql, CHANGES_CHANNEL).pipe(
          Stream.runForEach(() => wakeup.wake),
          Effect.catchAllCause((cause) => logFailure("LISTEN for changes failed; polling", cause, "warning")),
          Effect.repeat(Schedule.spaced("5 seconds"))
        )
      )
    }

    /**
     * The events after `from` for `userId`, then as they commit, with heartbeats. Reads
     * the table until it has caught up with the hub, then takes what the hub hands it.
     */
    const stream = (userId: number, from: Position): Stream.Stream<string> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        const queue = yield* Queue.unbounded<string>()
        const s: Subscriber = { userId, queue, pos: from, attached: false, lastSent: nowMillis, queued: 0 }
        const taken = (chunk: Chunk.Chunk<string>) => {
          for (const text of chunk) s.queued -= text.length
          return chunk
        }
        yield* Effect.addFinalizer(() => Effect.sync(() => detach(s)))

        const next: Effect.Effect<Chunk.Chunk<string>> = Effect.gen(function*() {
          if (!s.attached) {
            const pending = taken(yield* Queue.takeAll(queue))
            if (Chunk.isNonEmpty(pending)) return pending
            // A client hanging up must not cancel a query mid-flight (see `whole` in Envelope).
            const page = yield* Effect.uninterruptible(Effect.flatMap(feed.bound, (b) => feed.page(userId, s.pos, BATCH, b)))
            s.pos = page.next
            if (!page.hasMore) tryAttach(s)
            if (page.rows.length > 0) return Chunk.of(page.rows.map((row) => eventText(row, userId)).join(""))
            return s.attached ? Chunk.empty() : yield* next
          }
          const ready = taken(yield* Queue.takeAll(queue))
          if (Chunk.isNonEmpty(ready)) return ready
          return taken(Chunk.of(yield* Queue.take(queue)))
        })
        return Stream.concat(Stream.make(": stream open\n\n"), Stream.repeatEffectChunk(next)).pipe(
          Stream.interruptWhen(Deferred.await(closing))
        )
      }))

    return { stream } as const
  })
}) {}
