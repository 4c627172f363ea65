import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import * as Tool from "@effect/ai/Tool"
// The module, not the package index (see AiGateway.ts).
import * as OpenAiClient from "@effect/ai-openai/OpenAiClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { Effect, Layer, Schema, Stream } from "effect"

/**
 * A `LanguageModel` over the OpenAI chat-completions endpoint. `@effect/ai-openai` 0.41
 * speaks only the newer Responses API, which most self-hosted servers (llama.cpp, LM
 * Studio, older Ollama) do not serve; `/chat/completions` is what every OpenAI-compatible
 * server has. The request goes through `OpenAiClient`'s HTTP client, so base URL and key
 * are configured the library's way.
 */

const ChatAnswer = Schema.Struct({
  model: Schema.optional(Schema.String),
  choices: Schema.Array(Schema.Struct({
    message: Schema.Struct({ content: Schema.optional(Schema.NullOr(Schema.String)) }),
    finish_reason: Schema.optional(Schema.NullOr(Schema.String))
  })).pipe(Schema.minItems(1)),
  usage: Schema.optional(Schema.NullOr(Schema.Struct({
    prompt_tokens: Schema.optional(Schema.Number),
    completion_tokens: Schema.optional(Schema.Number),
    total_tokens: Schema.optional(Schema.Number)
  })))
})

const textOf = (parts: ReadonlyArray<Prompt.UserMessagePart | Prompt.AssistantMessagePart>) =>
  parts.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("")

const messagesOf = (prompt: Prompt.Prompt) =>
  prompt.content.flatMap((message) => {
    switch (message.role) {
      case "system":
        return [{ role: "system", content: message.content }]
      case "user":
        return [{ role: "user", content: textOf(message.content) }]
      case "assistant":
        return [{ role: "assistant", content: textOf(message.content) }]
      default:
        return []
    }
  })

/** Local models often wrap JSON in a Markdown fence even when asked not to. */
export const stripFence = (text: string) => {
  const fenced = /^\s*```[a-zA-Z]*\s*\n([\s\S]*?)\n?```\s*$/.exec(text)
  return fenced === null ? text.trim() : fenced[1]!.trim()
}

const finishReason = (reason: string | null | undefined) =>
  reason === "length" ? "length" as const : reason === "content_filter" ? "content-filter" as const : "stop" as const

export const make = Effect.fnUntraced(function*(model: string) {
  const client = yield* OpenAiClient.OpenAiClient
  const http = client.client.httpClient
  return yield* LanguageModel.make({
    generateText: (options) =>
      Effect.gen(function*() {
        const format = options.responseFormat
        const body = {
          model,
          messages: messagesOf(options.prompt),
          ...(format.type === "json"
            ? {
              response_format: {
                type: "json_schema",
                json_schema: { name: format.objectName, schema: Tool.getJsonSchemaFromSchemaAst(format.schema.ast), strict: false }
              }
            }
            : {})
        }
        const response = yield* http.execute(HttpClientRequest.bodyUnsafeJson(HttpClientRequest.post("/chat/completions"), body)).pipe(
          Effect.flatMap(HttpClientResponse.filterStatusOk),
          Effect.flatMap(HttpClientResponse.schemaBodyJson(ChatAnswer)),
          Effect.scoped,
          Effect.catchTags({
            RequestError: (error) => AiError.HttpRequestError.fromRequestError({ module: "ChatCompletions", method: "generateText", error }),
            ResponseError: (error) => AiError.HttpResponseError.fromResponseError({ module: "ChatCompletions", method: "generateText", error }),
            ParseError: (error) => AiError.MalformedOutput.fromParseError({ module: "ChatCompletions", method: "generateText", error })
          })
        )
        const choice = response.choices[0]!
        const raw = choice.message.content ?? ""
        const parts: Array<any> = [{ type: "text", text: format.type === "json" ? stripFence(raw) : raw }]
        parts.push({
          type: "finish",
          reason: finishReason(choice.finish_reason),
          usage: {
            inputTokens: response.usage?.prompt_tokens,
            outputTokens: response.usage?.completion_tokens,
            totalTokens: response.usage?.total_tokens
          }
        })
        return parts
      }),
    streamText: () =>
      Stream.fail(new AiError.UnknownError({ module: "ChatCompletions", method: "streamText", description: "streaming is not used" }))
  })
})

/** The language model for `model`, given an `OpenAiClient`. */
export const layer = (model: string) => Layer.effect(LanguageModel.LanguageModel, make(model))
