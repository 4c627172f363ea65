import { ConfigProvider, Effect, Either, Option } from "effect"
import { describe, expect, it } from "vitest"
import { appConfig, formatConfigError } from "../src/kernel/AppConfig.js"

/* The SERVICE_AI_* variables: which provider, which model, which key, and what is refused at start. */

const load = (vars: Record<string, string>) =>
  Effect.runSync(Effect.either(Effect.withConfigProvider(appConfig, ConfigProvider.fromMap(new Map(Object.entries(vars))))))

describe("SERVICE_AI_* configuration", () => {
  it("defaults to off, no per-feature models, no prompt logging", () => {
    const config = Either.getOrThrow(load({}))
    expect(config.aiProvider).toBe("off")
    expect(config.aiLogPrompts).toBe(false)
    expect(Object.values(config.aiFeatureModels).every(Option.isNone)).toBe(true)
  })

  it("reads the provider, endpoint, model and each feature's own model", () => {
    const config = Either.getOrThrow(load({
      SERVICE_AI_PROVIDER: "openai",
      SERVICE_AI_BASE_URL: "http://localhost:11434/v1",
      SERVICE_AI_MODEL: "llama3.1:8b",
      SERVICE_AI_ENRICHMENT_MODEL: "qwen2.5:3b",
      SERVICE_AI_INSIGHTS_MODEL: "llama3.1:70b",
      SERVICE_AI_LOG_PROMPTS: "true"
    }))
    expect(config.aiProvider).toBe("openai")
    expect(config.aiBaseUrl).toEqual(Option.some("http://localhost:11434/v1"))
    expect(config.aiModel).toEqual(Option.some("llama3.1:8b"))
    expect(config.aiFeatureModels.enrichment).toEqual(Option.some("qwen2.5:3b"))
    expect(config.aiFeatureModels.insights).toEqual(Option.some("llama3.1:70b"))
    expect(config.aiFeatureModels.quick_take).toEqual(Option.none())
    expect(config.aiLogPrompts).toBe(true)
  })

  it("a bad base URL or boolean stops start-up with one line each", () => {
    const result = load({ SERVICE_AI_BASE_URL: "localhost:11434", SERVICE_AI_LOG_PROMPTS: "perhaps" })
    expect(Either.isLeft(result)).toBe(true)
    if (Either.isRight(result)) return
    const lines = formatConfigError(result.left)
    expect(lines).toHaveLength(2)
    expect(lines.filter((l) => l.startsWith("SERVICE_AI_BASE_URL: "))).toHaveLength(1)
    expect(lines.filter((l) => l.startsWith("SERVICE_AI_LOG_PROMPTS: "))).toHaveLength(1)
  })
})
