import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Effect, Fiber, Runtime, Schedule, Stream } from "effect"
import { Readable } from "node:stream"
import { compare, encodeCursor, max, type Position } from "../domain/ChangeCursor.js"
import { ChangeFeed, changeJson, concerns, type FeedRow, positionOfRow } from "./ChangeFeed.js"
import { CHANGES_CHANNEL } from "./ChangeLog.js"
import { ChangeWakeup, listenOf } from "./ChangeWakeup.js"
import { logFailure } from "./DatabaseFailures.js"
import type { UserId } from "../domain/Ids.js"

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
 * Text buffered for a client that does not read as fast as changes come (bytes); beyond
 * this the stream stops taking from the hub and catches up from the table, so 1,000 slow
 * clients hold at most ~256 MiB here.
 */
const MAX_QUEUED_BYTES = 256 * 1024

/**
 * One open event stream, written straight into a Node `Readable` that the HTTP layer pipes
 * to the socket. While attached, the hub pushes the events its user may see and moves `pos`
 * past every batch; detached (catching up, or its client not reading), the stream reads the
 * table itself from `pos` until it reaches the hub's position again. No fiber runs for an
 * attached stream: measured at 1,000 streams, an Effect `Stream` per client held 14 fibers
 * and 25 channel executors each (140 KiB), and its per-event work and garbage made GC a
 * quarter of the service's CPU.
 */
interface Subscriber {
  readonly userId: UserId
  readonly out: Readable
  pos: Position
  attached: boolean
  /** Its client stopped reading (the buffer is full): the next `read()` resumes it from the table. */
  behind: boolean
  ended: boolean
  /** When the stream last got something (Clock millis), for heartbeats. */
  lastSent: number
}

const eventText = (row: FeedRow, userId: UserId) =>
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

    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const open = new Set<Subscriber>()
    // Open streams end (cleanly, as a finished response) when the service shuts down; the
    // HTTP server's close would otherwise wait for clients that never hang up.
    yield* Effect.addFinalizer(() => Effect.sync(() => {
      for (const s of open) end(s)
    }))

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

    /** Hands `text` to the stream's socket; false when its client is not keeping up. */
    const send = (s: Subscriber, text: string): boolean => {
      s.lastSent = nowMillis
      if (s.out.push(text)) return true
      s.behind = true
      return false
    }

    /** The stream is over: the hub, its heartbeats and its catch-up leave it alone. */
    const forget = (s: Subscriber) => {
      s.ended = true
      detach(s)
      open.delete(s)
    }

    const end = (s: Subscriber) => {
      if (s.ended) return
      forget(s)
      s.out.push(null)
    }

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
        if (send(s, events.join(""))) continue
        // Everything up to `to` reached it; later batches wait until its client reads again.
        s.pos = max(s.pos, to)
        detach(s)
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
      for (const s of open) {
        if (s.behind || nowMillis - s.lastSent < HEARTBEAT_MS) continue
        send(s, ": heartbeat\n\n")
      }
    })
    yield* Effect.forkScoped(Effect.forever(streaming.await.pipe(Effect.zipRight(heartbeats), Effect.zipRight(Effect.sleep("1 second")))))

    // Other instances' commits arrive by NOTIFY on PostgreSQL; the embedded database has one process.
    const listen = listenOf(sql)
    if (listen !== undefined) {
      yield* Effect.forkScoped(
        listen(CHANGES_CHANNEL).pipe(
          Stream.runForEach(() => wakeup.heard),
          Effect.catchAllCause((cause) => logFailure("LISTEN for changes failed; polling", cause, "warning")),
          Effect.repeat(Schedule.spaced("5 seconds"))
        )
      )
    }

    /**
     * Reads the table from the stream's position until it has caught up with the hub and
     * joins it; stops early when its client stops reading (`read()` resumes it).
     */
    const catchUp = (s: Subscriber) =>
      Effect.gen(function*() {
        while (!s.ended) {
          // A client hanging up must not cancel a query mid-flight (see `whole` in Envelope).
          const page = yield* Effect.uninterruptible(Effect.flatMap(feed.bound, (b) => feed.page(s.userId, s.pos, BATCH, b)))
          if (s.ended) return
          s.pos = page.next
          if (page.rows.length > 0 && !send(s, page.rows.map((row) => eventText(row, s.userId)).join(""))) return
          if (!page.hasMore && tryAttach(s)) return
        }
      }).pipe(Effect.catchAllCause((cause) =>
        Effect.zipRight(logFailure("Change stream read failed", cause, "warning"), Effect.sync(() => end(s)))
      ))

    /**
     * The events after `from` for `userId`, then as they commit, with heartbeats, as a
     * Readable of text; it ends when `endAfter` completes or the service stops.
     */
    const stream = (userId: UserId, from: Position, endAfter: Effect.Effect<void>): Readable => {
      let reading: Fiber.RuntimeFiber<void> | undefined
      let ending: Fiber.RuntimeFiber<void> | undefined
      const resume = () => {
        reading = runFork(catchUp(s))
      }
      const out = new Readable({
        highWaterMark: MAX_QUEUED_BYTES,
        read() {
          if (!s.behind || s.ended) return
          s.behind = false
          resume()
        }
      })
      const s: Subscriber = { userId, out, pos: from, attached: false, behind: false, ended: false, lastSent: nowMillis }
      out.on("close", () => {
        forget(s)
        if (reading !== undefined) runFork(Fiber.interrupt(reading))
        if (ending !== undefined) runFork(Fiber.interrupt(ending))
      })
      open.add(s)
      send(s, ": stream open\n\n")
      resume()
      ending = runFork(Effect.zipRight(endAfter, Effect.sync(() => end(s))))
      return out
    }

    return { stream } as const
  })
}) {}
