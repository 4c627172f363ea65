import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { Cause, Data, Duration, Effect, Layer, Option, type Schema } from "effect"
import { loadPrompts, type PromptName } from "./AiPrompts.js"
import { type AiFeature, type AiProvider, AppConfig } from "../kernel/AppConfig.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import { deleteActivityBefore, insertActivity } from "./AiTables.js"

export const AI_ACTIVITY_RETENTION_DAYS = 30

/** AI is switched off (`SERVICE_AI_PROVIDER=off`): no model is ever called. */
export class AiOff extends Data.TaggedError("AiOff")<{}> {
  override get message() {
    return "AI features are switched off (SERVICE_AI_PROVIDER=off)"
  }
}

/** The provider failed, timed out or answered something unusable. */
export class AiFailure extends Data.TaggedError("AiFailure")<{ readonly reason: string }> {}

export const DEFAULT_MODELS: Record<Exclude<AiProvider, "off">, string> = {
  openai: "gpt-4o-mini",
  anthropic: "claude-3-5-haiku-latest"
}
const DEFAULT_URLS: Record<Exclude<AiProvider, "off">, string> = {
  openai: "https://api.openai.com/v1",
  anthropic: "https://api.anthropic.com"
}
const PROVIDER_DISPLAY: Record<AiProvider, string> = {
  off: "Off",
  openai: "OpenAI-compatible",
  anthropic: "Anthropic"
}

export interface ModelChoice {
  readonly provider: AiProvider
  readonly providerDisplay: string
  readonly model: string
  readonly baseUrl: string | null
}

/** Provider failures as one line for `details` and the activity log; never the key. */
const reasonOf = (error: AiError.AiError): string => {
  switch (error._tag) {
    case "HttpResponseError":
      return `provider answered HTTP ${error.response.status}`
    case "HttpRequestError":
      return `provider unreachable (${error.reason})`
    case "MalformedOutput":
      return "provider answer did not match the expected shape"
    default:
      return error.message
  }
}

/**
 * The provider packages load only when AI is on (as the gateway is built), not at every
 * start: their modules (the OpenAI client's generated schemas above all) cost ~90 MB of RSS,
 * ~30 MB of heap and ~0.5 s of start-up, which a service with AI off, the default, paid for
 * nothing. Node caches a module once loaded, so the model layers' own imports cost nothing.
 * `OpenAiClient` by its module, not the package index: the index also loads OpenAiTokenizer
 * and gpt-tokenizer's ranks.
 */
const anthropicModules = Effect.promise(() =>
  Promise.all([import("@effect/ai-anthropic/AnthropicClient"), import("@effect/ai-anthropic/AnthropicLanguageModel")])
)
const openAiModules = Effect.promise(() => Promise.all([import("@effect/ai-openai/OpenAiClient"), import("./AiChatCompletions.js")]))

/**
 * The one way to call a model. Chooses provider and model per feature, applies the
 * timeout, and writes one activity row per call. With AI off every call fails with `AiOff`
 * before any client exists, so no network call can happen.
 */
export class AiGateway extends Effect.Service<AiGateway>()("steady/AiGateway", {
  effect: Effect.gen(function*() {
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const enabled = config.aiProvider !== "off"
    const prompts = enabled ? yield* loadPrompts : undefined
    // With AI on, its provider's modules load with the service, so a first call's timeout
    // never includes loading them.
    if (config.aiProvider === "anthropic") yield* anthropicModules
    else if (config.aiProvider !== "off") yield* openAiModules

    const choice = (feature: AiFeature): ModelChoice => {
      const provider = config.aiProvider
      if (provider === "off") return { provider, providerDisplay: PROVIDER_DISPLAY.off, model: "", baseUrl: null }
      const model = Option.getOrElse(
        Option.orElse(config.aiFeatureModels[feature], () => config.aiModel),
        () => DEFAULT_MODELS[provider]
      )
      const baseUrl = Option.getOrElse(config.aiBaseUrl, () => DEFAULT_URLS[provider]).replace(/\/+$/, "")
      return { provider, providerDisplay: PROVIDER_DISPLAY[provider], model, baseUrl }
    }

    const apiKey = Option.getOrUndefined(config.aiApiKey)
    const modelLayer = (picked: ModelChoice): Layer.Layer<LanguageModel.LanguageModel> =>
      picked.provider === "anthropic"
        ? Layer.unwrapEffect(Effect.map(anthropicModules, ([AnthropicClient, AnthropicLanguageModel]) =>
          AnthropicLanguageModel.layer({ model: picked.model, config: { max_tokens: 2048 } }).pipe(
            Layer.provide(AnthropicClient.layer({ apiKey, apiUrl: picked.baseUrl ?? undefined })),
            Layer.provide(FetchHttpClient.layer)
          )))
        : Layer.unwrapEffect(Effect.map(openAiModules, ([OpenAiClient, ChatCompletions]) =>
          ChatCompletions.layer(picked.model).pipe(
            Layer.provide(OpenAiClient.layer({ apiKey, apiUrl: picked.baseUrl ?? undefined })),
            Layer.provide(FetchHttpClient.layer)
          )))
    const layers = new Map<AiFeature, Layer.Layer<LanguageModel.LanguageModel>>()
    const layerFor = (feature: AiFeature) => {
      const found = layers.get(feature)
      if (found !== undefined) return found
      const made = modelLayer(choice(feature))
      layers.set(feature, made)
      return made
    }

    const record = (entry: {
      readonly feature: AiFeature
      readonly userId: number | null
      readonly ok: boolean
      readonly durationMs: number
      readonly model: string
      readonly error: string | null
      readonly prompt: string
      readonly answer: string | null
    }) =>
      Effect.flatMap(clockNow, (now) =>
        insertActivity(sql, {
          ...entry,
          provider: config.aiProvider,
          prompt: config.aiLogPrompts ? entry.prompt : null,
          answer: config.aiLogPrompts ? entry.answer : null,
          at: now.toISOString()
        })).pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("AI activity row not written", cause))
      )

    /** AI activity rows are kept for 30 days. */
    const purgeActivity = Effect.gen(function*() {
      const cutoff = new Date((yield* clockNow).getTime() - AI_ACTIVITY_RETENTION_DAYS * 86_400_000).toISOString()
      yield* deleteActivityBefore(sql, cutoff)
    })

    /** Runs one model call for `feature` under `timeout`, logged; the failure as `AiFailure`. */
    const call = <A>(
      feature: AiFeature,
      userId: number | null,
      prompt: string,
      timeout: Duration.Duration,
      run: Effect.Effect<A, AiError.AiError, LanguageModel.LanguageModel>,
      answerText: (a: A) => string
    ): Effect.Effect<A, AiOff | AiFailure> =>
      Effect.gen(function*() {
        if (!enabled) return yield* new AiOff()
        const picked = choice(feature)
        const [elapsed, exit] = yield* run.pipe(
          Effect.provide(layerFor(feature)),
          Effect.timeoutFail({
            duration: timeout,
            onTimeout: () => new AiFailure({ reason: `timed out after ${Duration.format(timeout)}` })
          }),
          Effect.mapError((e) => (e instanceof AiFailure ? e : new AiFailure({ reason: reasonOf(e) }))),
          Effect.exit,
          Effect.timed
        )
        const durationMs = Math.round(Duration.toMillis(elapsed))
        const failure = exit._tag === "Failure"
          ? Option.getOrElse(Cause.failureOption(exit.cause), () => new AiFailure({ reason: "provider call failed unexpectedly" }))
          : undefined
        yield* record({
          feature,
          userId,
          ok: failure === undefined,
          durationMs,
          model: picked.model,
          error: failure?.reason ?? null,
          prompt,
          answer: exit._tag === "Success" ? answerText(exit.value) : null
        })
        if (exit._tag === "Failure") {
          if (failure === undefined || !Cause.isFailure(exit.cause)) yield* Effect.logWarning(`AI ${feature} call failed`, exit.cause)
          return yield* failure!
        }
        return exit.value
      }).pipe(Effect.withSpan("AiGateway.call", { attributes: { feature } }))

    const promptText = (name: PromptName) => prompts?.[name] ?? ""

    /** Free text from the model. */
    const text = (feature: AiFeature, userId: number | null, prompt: string, timeout: Duration.Duration) =>
      call(feature, userId, prompt, timeout, Effect.map(LanguageModel.generateText({ prompt }), (r) => r.text), (t) => t)

    /** A JSON object decoded with `schema` (structured output where the provider has it). */
    const object = <A, I extends Record<string, unknown>>(
      feature: AiFeature,
      userId: number | null,
      prompt: string,
      schema: Schema.Schema<A, I>,
      objectName: string,
      timeout: Duration.Duration
    ) =>
      call(
        feature,
        userId,
        prompt,
        timeout,
        Effect.map(LanguageModel.generateObject({ prompt, schema, objectName }), (r) => r.value),
        (value) => JSON.stringify(value)
      )

    return { enabled, choice, text, object, promptText, purgeActivity } as const
  })
}) {}
