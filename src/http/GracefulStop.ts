import type { IncomingMessage, Server, ServerResponse } from "node:http"
import { Server as NetServer } from "node:net"

/**
 * Draining the HTTP servers before the program is interrupted. Interrupting first would stop
 * the request handler while Node still holds keep-alive connections open: a request sent on
 * one would never be answered and `server.close()` would wait for the client to give up.
 * Draining instead stops accepting, answers every request that still arrives or is in flight
 * with `Connection: close` (the client learns the socket is done before it sends another
 * request on it), and closes the connections that stay idle only once requests have stopped
 * coming, cutting whatever is left when the grace period is over.
 */
interface Tracked {
  readonly server: Server
  readonly inFlight: Set<ServerResponse>
}

const tracked = new Set<Tracked>()
let draining = false
let lastRequestAt = 0
let announceDrain: () => void = () => {}
const drainStarted = new Promise<void>((resolve) => (announceDrain = resolve))

/** Settles when a stop signal begins draining: long-lived responses (event streams) end on it. */
export const whenDraining = (): Promise<void> => drainStarted

export const isDraining = () => draining

/** Counts the server's requests in flight so a stop can wait for them; see `drainServers`. */
export const trackForGracefulStop = (server: Server) => {
  const entry: Tracked = { server, inFlight: new Set() }
  tracked.add(entry)
  server.on("request", (_request: IncomingMessage, response: ServerResponse) => {
    entry.inFlight.add(response)
    if (draining) {
      lastRequestAt = performance.now()
      response.setHeader("Connection", "close")
    }
    response.once("close", () => entry.inFlight.delete(response))
  })
  server.once("close", () => tracked.delete(entry))
  return server
}

const pending = () => {
  let n = 0
  for (const entry of tracked) n += entry.inFlight.size
  return n
}

/** How long requests must have stopped arriving before a phase of the drain is over. */
const QUIET_MS = 300
/**
 * How long the listener keeps accepting after the signal. Connections a busy event loop has
 * not accepted yet sit in the kernel's backlog, and closing the listener resets them: their
 * requests, sent before the signal, would fail instead of being answered (with
 * `Connection: close`, like every answer from here on).
 */
const ACCEPT_WINDOW_MS = 1_500

const settle = async (until: number) => {
  const settled = () => pending() === 0 && performance.now() - lastRequestAt >= QUIET_MS
  while (!settled() && performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

/**
 * Stops accepting connections, lets requests in flight (and requests still arriving on open
 * connections) finish for up to `graceMs`, then closes every connection still open. Resolves
 * once nothing is in flight and no request came for a moment, or when the grace period is over.
 */
export const drainServers = async (graceMs: number): Promise<void> => {
  const start = performance.now()
  draining = true
  lastRequestAt = start
  announceDrain()
  for (const { inFlight } of tracked) {
    for (const response of inFlight) {
      if (!response.headersSent) response.setHeader("Connection", "close")
    }
  }
  await settle(start + Math.min(ACCEPT_WINDOW_MS, graceMs))
  for (const { server } of tracked) {
    // net's close, not http's: http's also drops idle keep-alive sockets at once, racing the
    // requests clients are writing on them (they would see ECONNRESET instead of an answer).
    if (server.listening) NetServer.prototype.close.call(server)
  }
  await settle(start + graceMs)
  for (const { server } of tracked) {
    server.closeIdleConnections()
    server.closeAllConnections()
  }
}
