import * as Http from "node:http"
import type { AddressInfo } from "node:net"

/**
 * Fake model providers on 127.0.0.1: a real HTTP server speaking either the OpenAI
 * chat-completions shape or the Anthropic Messages shape. It records every request and
 * answers as scripted, so tests exercise the real client code and the wire format.
 */
export type FakeKind = "openai" | "anthropic"

export interface FakeRequest {
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  readonly body: any
  /** Every text the request carries (system and messages), joined. */
  readonly prompt: string
  /** True when the client asked for a JSON object (structured output). */
  readonly wantsObject: boolean
}

export type FakeReply =
  | { readonly text: string; readonly delayMs?: number }
  | { readonly json: unknown; readonly delayMs?: number }
  | { readonly status: number; readonly body?: unknown }
  | "hang"

export interface FakeAi {
  readonly kind: FakeKind
  /** The value for SERVICE_AI_BASE_URL. */
  readonly baseUrl: string
  readonly requests: Array<FakeRequest>
  script: (request: FakeRequest, index: number) => FakeReply
  readonly waitFor: (n: number, timeoutMs?: number) => Promise<Array<FakeRequest>>
  readonly close: () => Promise<void>
}

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
    ? content.map((part: any) => (typeof part?.text === "string" ? part.text : "")).join("")
    : ""

const promptOf = (kind: FakeKind, body: any): string =>
  kind === "openai"
    ? (body?.messages ?? []).map((m: any) => textOf(m.content)).join("\n")
    : [textOf(body?.system), ...(body?.messages ?? []).map((m: any) => textOf(m.content))].join("\n")

const answer = (kind: FakeKind, request: FakeRequest, text: string) => {
  if (kind === "openai") {
    return {
      id: "chatcmpl-fake",
      object: "chat.completion",
      created: 1_700_000_000,
      model: request.body?.model ?? "fake",
      choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 }
    }
  }
  const toolName = request.body?.tool_choice?.type === "tool" ? request.body.tool_choice.name : undefined
  return {
    id: "msg_fake",
    type: "message",
    role: "assistant",
    model: request.body?.model ?? "fake",
    content: toolName !== undefined
      ? [{ type: "tool_use", id: "toolu_fake", name: toolName, input: JSON.parse(text) }]
      : [{ type: "text", text }],
    stop_reason: toolName !== undefined ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 5 }
  }
}

export const startFakeAi = async (
  kind: FakeKind,
  script: (request: FakeRequest, index: number) => FakeReply = () => ({ text: "OK" })
): Promise<FakeAi> => {
  const requests: Array<FakeRequest> = []
  const waiters = new Set<() => void>()
  const open = new Set<Http.ServerResponse>()
  const server = Http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      let body: any = undefined
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
      } catch {
        body = undefined
      }
      const wantsObject = kind === "openai"
        ? body?.response_format?.type === "json_schema"
        : body?.tool_choice?.type === "tool"
      const entry: FakeRequest = { path: req.url ?? "", headers: req.headers, body, prompt: promptOf(kind, body), wantsObject }
      const index = requests.length
      requests.push(entry)
      for (const wake of [...waiters]) wake()
      const reply = fake.script(entry, index)
      if (reply === "hang") {
        open.add(res)
        return
      }
      const send = (status: number, payload: unknown) => {
        res.writeHead(status, { "content-type": "application/json" })
        res.end(JSON.stringify(payload))
      }
      if ("status" in reply) {
        // Each provider's own error shape (the Anthropic client decodes it).
        const failure = kind === "openai"
          ? { error: { message: "scripted failure", type: "server_error" } }
          : { type: "error", error: { type: "api_error", message: "scripted failure" } }
        return send(reply.status, reply.body ?? failure)
      }
      const text = "text" in reply ? reply.text : JSON.stringify(reply.json)
      const go = () => send(200, answer(kind, entry, text))
      if (reply.delayMs !== undefined) setTimeout(go, reply.delayMs)
      else go()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  const fake: FakeAi = {
    kind,
    baseUrl: kind === "openai" ? `http://127.0.0.1:${port}/v1` : `http://127.0.0.1:${port}`,
    requests,
    script,
    waitFor: (n, timeoutMs = 10_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (requests.length >= n) {
            waiters.delete(check)
            clearTimeout(timer)
            resolve(requests.slice())
          }
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`expected ${n} model requests, got ${requests.length}`))
        }, timeoutMs)
        waiters.add(check)
        check()
      }),
    close: async () => {
      for (const res of open) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
  return fake
}
