import type { Server } from "node:http"
import type { Duplex } from "node:stream"

const answers: Record<string, readonly [status: number, reason: string, code: string, error: string]> = {
  HPE_HEADER_OVERFLOW: [431, "Request Header Fields Too Large", "HEADERS_TOO_LARGE", "The request headers are too large"],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, "Payload Too Large", "PAYLOAD_TOO_LARGE", "The chunk extensions are too large"],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "Request Timeout", "REQUEST_TIMEOUT", "The request did not arrive in time"]
}
const malformed = [400, "Bad Request", "VALIDATION_ERROR", "Malformed HTTP request"] as const

/**
 * Requests Node refuses before any handler runs (headers over the limit, a malformed request
 * line, a request timeout) get the same `{error, code, details}` envelope as the rest, where
 * Node alone would answer a bare status line. The connection is closed after it, as Node does.
 */
export const answerClientErrorsWithEnvelope = (server: Server) =>
  server.on("clientError", (error: Error & { code?: string }, socket: Duplex) => {
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage
    if (error.code === "ECONNRESET" || !socket.writable || inFlight?.headersSent === true) {
      socket.destroy()
      return
    }
    const [status, reason, code, message] = answers[error.code ?? ""] ?? malformed
    const body = JSON.stringify({ error: message, code, details: {} })
    socket.once("finish", () => socket.destroy())
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Connection: close\r\n\r\n${body}`
    )
  })
