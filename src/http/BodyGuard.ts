import * as HttpServerError from "@effect/platform/HttpServerError"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import { Deferred, Effect, FiberId } from "effect"
import { IncomingMessage } from "node:http"
import { ValidationError } from "../kernel/Errors.js"

/** Our bodies nest three or four levels; anything past this is refused before decoding. */
export const MAX_JSON_DEPTH = 32

/**
 * Whether arrays/objects nest deeper than `limit`, by one pass over the text. Decoding
 * such a body would overflow the stack while formatting its error.
 */
export const nestsDeeperThan = (text: string, limit: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) i++ // backslash: the next character is escaped
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 123 || c === 91) {
      if (++depth > limit) return true
    } else if (c === 125 || c === 93) depth--
  }
  return false
}

/**
 * The message a body over the size limit fails with: the wording of the platform's Node
 * reader (`@effect/platform-node-shared`'s stream reader, not a documented contract), which
 * `readCapped` uses too, so one check finds both.
 */
const MAX_BYTES_EXCEEDED = "maxBytes exceeded"

/** Whether reading a request's body failed for being over the size limit (a 413). */
export const isBodyTooLarge = (error: HttpServerError.RequestError): boolean =>
  String((error.cause as Error | undefined)?.message ?? "").includes(MAX_BYTES_EXCEEDED)

/**
 * Reads at most `maxBytes`. Past that the rest is still read and dropped, never cut off: the
 * platform's own limit destroys the socket, so a chunked upload would see a reset instead of
 * the 413; drained, the client gets the answer (the request timeout bounds the drain).
 */
const readCapped = (source: IncomingMessage, maxBytes: number) =>
  Effect.async<string, Error>((resume) => {
    const chunks: Array<Buffer> = []
    let bytes = 0
    let settled = false
    const settle = (result: Effect.Effect<string, Error>) => {
      if (settled) return
      settled = true
      resume(result)
    }
    source.on("data", (chunk: Buffer) => {
      if (settled) return
      bytes += chunk.length
      if (bytes > maxBytes) {
        chunks.length = 0
        // The platform's wording, so the 413 mapping applies to both readers.
        settle(Effect.fail(new Error(MAX_BYTES_EXCEEDED)))
      } else chunks.push(chunk)
    })
    source.once("end", () => settle(Effect.succeed(Buffer.concat(chunks).toString("utf8"))))
    source.once("error", (error) => settle(Effect.fail(error)))
    // "close" follows "end" on every request: the error (and its stack) only when it did not.
    source.once("close", () => settled || settle(Effect.fail(new Error("the request body was cut off"))))
  })

const isJson = (request: HttpServerRequest.HttpServerRequest) =>
  (request.headers["content-type"] ?? "application/json").toLowerCase().includes("application/json")

/**
 * `read` run by its first caller, its outcome handed to every caller: what `Effect.cached`
 * does, without the fiber `Effect.runSync` would start for it on every request.
 */
const readOnce = <A, E>(read: Effect.Effect<A, E>): Effect.Effect<A, E> => {
  const outcome = Deferred.unsafeMake<A, E>(FiberId.none)
  let started = false
  return Effect.suspend(() => {
    if (started) return Deferred.await(outcome)
    started = true
    return Effect.zipRight(Effect.intoDeferred(read, outcome), Deferred.await(outcome))
  })
}

/**
 * Whether `guardBody` has anything to guard. A Node request without `Content-Length` (or with
 * 0) and without `Transfer-Encoding` has no body (RFC 9112 §6.3); any other request may have
 * one (a web `Request` an embedding host hands over need not say its length in a header).
 */
export const mayCarryBody = (request: HttpServerRequest.HttpServerRequest): boolean =>
  !(request.source instanceof IncomingMessage) ||
  request.headers["transfer-encoding"] !== undefined ||
  (request.headers["content-length"] ?? "0") !== "0"

/**
 * Replaces how a request reads its body as text (which `json` and form bodies use too): a
 * JSON body nested deeper than `maxDepth` is refused before anything parses it, and a Node
 * request is read by `readCapped`. Still lazy and cached like the platform's own reader, so
 * nothing is read before authentication and the router decodes as usual. A request of
 * another platform (an embedding host's) keeps the platform's reader under the depth check.
 *
 * `textEffect` is private: the field both request classes (`@effect/platform-node`'s for Node
 * requests, `@effect/platform`'s for web ones) cache their `text` in, and which `json` and
 * `urlParamsBody` read through. Pinned and canaried: see src/sql/README.md.
 */
export const guardBody = (request: HttpServerRequest.HttpServerRequest, maxBytes: number, maxDepth: number) =>
  Effect.sync(() => {
    if (!("textEffect" in request)) return
    const source: unknown = NodeHttpServerRequest.toIncomingMessage(request)
    const text: Effect.Effect<string, unknown> = source instanceof IncomingMessage && !source.readableDidRead
      ? readCapped(source, maxBytes).pipe(
        Effect.mapError((cause) => new HttpServerError.RequestError({ request, reason: "Decode", cause }))
      )
      : request.text
    const read = Effect.filterOrFail(
      text,
      (body) => !(isJson(request) && nestsDeeperThan(body, maxDepth)),
      () => ValidationError.of("Invalid request", { body: `JSON nested deeper than ${maxDepth} levels` })
    )
    // `"textEffect" in request` above narrowed the request to one with that (untyped) field.
    request.textEffect = readOnce(read)
  })
