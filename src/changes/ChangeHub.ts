import * as SqlClient from "@effect/sql/SqlClient"
import { Clock, Effect, Fiber, Runtime, Schedule, Stream } from "effect"
import { Readable } from "node:stream"
import { compare, encodeCursor, max, type Position } from "./ChangeCursor.js"
import { TooManyRequests } from "../kernel/Errors.js"
import { AppConfig } from "../kernel/AppConfig.js"
import { ChangeFeed, changeJson, concerns, type FeedRow, positionOfRow } from "./ChangeFeed.js"
import { CHANGES_CHANNEL } from "./ChangeLog.js"
import { ChangeWakeup, listenOf } from "./ChangeWakeup.js"
import { Credentials } from "../accounts/Credentials.js"
import type { CredentialRef, CurrentUserShape } from "../kernel/CurrentUser.js"
import { logFailure } from "../sql/DatabaseFailures.js"
import type { UserId } from "../kernel/Ids.js"

/** Comment lines that keep proxies from closing an idle stream (every 15 s). */
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
 * Open streams one user may hold on an instance (a few devices and tabs); the next is a 429.
 * Each holds a socket and up to MAX_QUEUED_BYTES, so one user could otherwise take them all.
 * The instance-wide bound is `SERVICE_MAX_EVENT_STREAMS`.
 */
export const MAX_STREAMS_PER_USER = 10
/** The 429's Retry-After: a place frees only when another stream ends, so a quick retry is pointless. */
export const STREAMS_FULL_RETRY_SECONDS = 10
/**
 * Every open stream's credential is looked up again at least this often, for what no
 * revocation notice reports: a session expiring, a session deleted by hand in SQL, a
 * revocation on another instance while this one's LISTEN connection is down.
 */
export const CREDENTIAL_RECHECK_MS = 5_000

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
  /** What authenticated the stream; undefined for a proxy-authenticated one (nothing revokes it). */
  readonly credential: CredentialRef | undefined
  /** `revocationMark` when the credential was last found standing. */
  checked: number | undefined
  readonly out: Readable
  pos: Position
  attached: boolean
  /** Its client stopped reading (the buffer is full): the next `read()` resumes it from the table. */
  behind: boolean
  ended: boolean
  /** When the stream last got something (Clock millis), for heartbeats. */
  lastSent: number
  /** Starts (or restarts) its catch-up from the table. */
  readonly resume: () => void
}

const noStreams: ReadonlySet<Subscriber> = new Set()

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
    const credentials = yield* Credentials
    const { maxEventStreams } = yield* AppConfig

    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const open = new Set<Subscriber>()
    // Open streams end (cleanly, as a finished response) when the service shuts down; the
    // HTTP server's close would otherwise wait for clients that never hang up.
    yield* Effect.addFinalizer(() => Effect.sync(() => {
      for (const s of open) end(s)
    }))

    const byUser = new Map<number, Set<Subscriber>>()
    /** Open streams per user, attached or not, for MAX_STREAMS_PER_USER. */
    const openOf = new Map<number, number>()
    const attached = new Set<Subscriber>()
    /** Everything up to here has been handed to every attached stream; undefined when none is. */
    let head: Position | undefined
    /**
     * Open while a stream is attached. Without streams the hub's loops wait on it rather than
     * on timers: an idle service runs no polls, and a test moving the TestClock by days does
     * not replay a poll for every second it skips.
     */
    const streaming = yield* Effect.makeLatch(false)
    /** Open while any stream is (attached or catching up): heartbeats and credential checks wait on it. */
    const anyOpen = yield* Effect.makeLatch(false)

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
      if (!open.delete(s)) return
      const left = (openOf.get(s.userId) ?? 1) - 1
      if (left === 0) openOf.delete(s.userId)
      else openOf.set(s.userId, left)
      if (open.size === 0) anyOpen.unsafeClose()
    }

    const end = (s: Subscriber) => {
      if (s.ended) return
      forget(s)
      s.out.push(null)
    }

    /** Its credential was found standing since the last revocation heard, or it has none to revoke. */
    const fresh = (s: Subscriber, mark: number | undefined) =>
      s.credential === undefined || (mark !== undefined && s.checked === mark)

    /**
     * Looks the streams' credentials up again; a stream whose token was deleted or whose
     * session was signed out (or expired) gets nothing more and ends. Begun after a read, the
     * lookup sees every revocation that committed before anything that read returned.
     */
    const recheck = Effect.fnUntraced(function*(streams: Iterable<Subscriber>) {
      const held = [...streams].filter((s) => !s.ended && s.credential !== undefined)
      if (held.length === 0) return
      const mark = credentials.revocationMark()
      const stands = yield* credentials.standing(held.map((s) => s.credential!))
      for (const s of held) {
        if (s.ended) continue
        if (stands(s.credential!)) {
          s.checked = mark
          continue
        }
        s.out.push(": credentials revoked\n\n")
        end(s)
      }
    })

    /**
     * Hands a batch to the attached streams. `rechecked`: streams whose credential was looked
     * up after the batch was read. Any other stream not checked since the last revocation
     * heard (it attached while that lookup ran) gets nothing from the hub: it catches up from
     * the table, which checks before it sends.
     */
    const publish = (rows: ReadonlyArray<FeedRow>, to: Position, rechecked: ReadonlySet<Subscriber>) => {
      const mark = credentials.revocationMark()
      for (const s of attached) {
        if (rechecked.has(s) || fresh(s, mark)) continue
        detach(s)
        s.resume()
      }
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
      // A revoked credential's stream gets nothing written after its revocation: streams not
      // checked since the last one heard are looked up now, after the read, before sending.
      let rechecked: ReadonlySet<Subscriber> = noStreams
      if (page.rows.length > 0) {
        const mark = credentials.revocationMark()
        const stale = [...attached].filter((s) => !fresh(s, mark))
        if (stale.length > 0) {
          yield* recheck(stale)
          rechecked = new Set(stale)
        }
      }
      // Streams may have attached or left while the read ran: `head` only moves forward.
      if (head === undefined) return HUB_POLL_MS
      if (compare(head, from) !== 0) return 0
      publish(page.rows, page.next, rechecked)
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

    let lastRecheck = nowMillis
    // One timer for every stream, rather than one per stream racing each wait for events.
    const heartbeats = Effect.gen(function*() {
      nowMillis = yield* Clock.currentTimeMillis
      for (const s of open) {
        if (s.behind || nowMillis - s.lastSent < HEARTBEAT_MS) continue
        send(s, ": heartbeat\n\n")
      }
      // Streams of a revoked credential end without waiting for an event: within a second of
      // the revocation heard, within CREDENTIAL_RECHECK_MS of one no notice reports.
      const due = nowMillis - lastRecheck >= CREDENTIAL_RECHECK_MS
      if (due) lastRecheck = nowMillis
      const mark = credentials.revocationMark()
      const stale = due ? open : [...open].filter((s) => !fresh(s, mark))
      yield* recheck(stale).pipe(
        Effect.catchAllCause((cause) => logFailure("Event stream credential check failed", cause, "warning"))
      )
    })
    yield* Effect.forkScoped(Effect.forever(anyOpen.await.pipe(Effect.zipRight(heartbeats), Effect.zipRight(Effect.sleep("1 second")))))

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
          // As in `step`: looked up after the read, before anything read is sent.
          if (page.rows.length > 0 && !fresh(s, credentials.revocationMark())) {
            yield* Effect.uninterruptible(recheck([s]))
            if (s.ended) return
          }
          s.pos = page.next
          if (page.rows.length > 0 && !send(s, page.rows.map((row) => eventText(row, s.userId)).join(""))) return
          if (!page.hasMore && tryAttach(s)) return
        }
      }).pipe(Effect.catchAllCause((cause) =>
        Effect.zipRight(logFailure("Change stream read failed", cause, "warning"), Effect.sync(() => end(s)))
      ))

    const refusal = (userId: UserId): TooManyRequests | undefined => {
      const retryAfterSeconds = STREAMS_FULL_RETRY_SECONDS
      if ((openOf.get(userId) ?? 0) >= MAX_STREAMS_PER_USER) {
        return new TooManyRequests({
          message: `At most ${MAX_STREAMS_PER_USER} open event streams per user; close one first`,
          retryAfterSeconds
        })
      }
      if (open.size >= maxEventStreams) {
        return new TooManyRequests({
          message: `This instance holds its limit of ${maxEventStreams} open event streams; try again later`,
          retryAfterSeconds
        })
      }
      return undefined
    }

    /**
     * The events after `from` for `user`, then as they commit, with heartbeats, as a
     * Readable of text; it ends when `endAfter` completes, the service stops or the
     * credential that authenticated it is revoked. A 429 past the per-user or the instance's
     * number of open streams, counted and taken in one synchronous step.
     */
    const stream = (user: CurrentUserShape, from: Position, endAfter: Effect.Effect<void>) =>
      Effect.suspend((): Effect.Effect<Readable, TooManyRequests> => {
        const refused = refusal(user.id)
        if (refused !== undefined) return Effect.fail(refused)
        let reading: Fiber.RuntimeFiber<void> | undefined
        let ending: Fiber.RuntimeFiber<void> | undefined
        const out = new Readable({
          highWaterMark: MAX_QUEUED_BYTES,
          read() {
            if (!s.behind || s.ended) return
            s.behind = false
            s.resume()
          }
        })
        const s: Subscriber = {
          userId: user.id,
          credential: user.credential,
          checked: user.credential?.mark,
          out,
          pos: from,
          attached: false,
          behind: false,
          ended: false,
          lastSent: nowMillis,
          resume: () => {
            reading = runFork(catchUp(s))
          }
        }
        out.on("close", () => {
          forget(s)
          if (reading !== undefined) runFork(Fiber.interrupt(reading))
          if (ending !== undefined) runFork(Fiber.interrupt(ending))
        })
        open.add(s)
        openOf.set(user.id, (openOf.get(user.id) ?? 0) + 1)
        anyOpen.unsafeOpen()
        send(s, ": stream open\n\n")
        s.resume()
        ending = runFork(Effect.zipRight(endAfter, Effect.sync(() => end(s))))
        return Effect.succeed(out)
      })

    return { stream } as const
  })
}) {}
