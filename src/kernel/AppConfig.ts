import { Config, ConfigError, Context, Duration, Either, Effect, Layer, Option, Redacted } from "effect"
import * as Net from "node:net"
import { isValidTimeZone } from "./TimeZone.js"
import { otlpConfig, type OtlpSettings } from "./OtlpConfig.js"

/** A parsed CIDR block, checked against a peer address with `node:net`'s BlockList. */
export interface Cidr {
  readonly address: string
  readonly prefix: number
  readonly family: "ipv4" | "ipv6"
}

export const parseCidrList = (raw: string): Either.Either<ReadonlyArray<Cidr>, string> => {
  const out: Array<Cidr> = []
  for (const part of raw.split(",").map((s) => s.trim()).filter((s) => s.length > 0)) {
    const [address, prefixText, extra] = part.split("/")
    const version = address === undefined ? 0 : Net.isIP(address)
    if (address === undefined || version === 0 || extra !== undefined) {
      return Either.left(`"${part}" is not a CIDR block`)
    }
    const family = version === 4 ? "ipv4" : "ipv6"
    const max = version === 4 ? 32 : 128
    const prefix = prefixText === undefined ? max : Number(prefixText)
    if (!/^\d+$/.test(prefixText ?? String(max)) || prefix > max) {
      return Either.left(`"${part}" has a bad prefix length`)
    }
    out.push({ address, prefix, family })
  }
  return Either.right(out)
}

export type AiProvider = "off" | "openai" | "anthropic"

/** The AI features (CONTRACT §8 `feature` names), each with an optional model of its own. */
export type AiFeature = "enrichment" | "quick_take" | "whats_next" | "insights"
export const AI_FEATURES: ReadonlyArray<AiFeature> = ["enrichment", "quick_take", "whats_next", "insights"]

/** Waits and limits of the AI helpers; fixed in production, shortened by tests. */
export interface AiTuning {
  /** Waits before the 2nd, 3rd, … enrichment attempt; once spent the task is marked failed. */
  readonly enrichmentRetryDelays: ReadonlyArray<Duration.Duration>
  readonly enrichmentTimeout: Duration.Duration
  /** How often the enrichment queue is polled when nothing wakes it. */
  readonly enrichmentPoll: Duration.Duration
  /** While tasks are being created (one within `enrichmentBusyWindow`), one enrichment per this much time. */
  readonly enrichmentBusyPace: Duration.Duration
  readonly enrichmentBusyWindow: Duration.Duration
  /** Consecutive provider failures that open the circuit breaker, and how long it stays open. */
  readonly breakerThreshold: number
  readonly breakerCooldown: Duration.Duration
  readonly quickTakeTimeout: Duration.Duration
  readonly whatsNextTimeout: Duration.Duration
  readonly insightsTimeout: Duration.Duration
  readonly testTimeout: Duration.Duration
}

export const DEFAULT_AI_TUNING: AiTuning = {
  enrichmentRetryDelays: [Duration.seconds(30), Duration.minutes(2), Duration.minutes(10)],
  enrichmentTimeout: Duration.seconds(60),
  enrichmentPoll: Duration.seconds(2),
  enrichmentBusyPace: Duration.seconds(2),
  enrichmentBusyWindow: Duration.seconds(1),
  breakerThreshold: 5,
  breakerCooldown: Duration.minutes(5),
  quickTakeTimeout: Duration.seconds(20),
  whatsNextTimeout: Duration.seconds(60),
  insightsTimeout: Duration.seconds(90),
  testTimeout: Duration.seconds(15)
}

/**
 * When the embedded database vacuums and analyzes a table. PGlite has no autovacuum, so
 * without this its tables are never analyzed and their dead rows never reclaimed.
 */
export interface MaintenanceTuning {
  /** false: the service never vacuums or analyzes by itself (tests that need an unanalyzed database). */
  readonly enabled: boolean
  /** How often the table statistics are looked at when nothing asks sooner. */
  readonly poll: Duration.Duration
  /** A table is due once its changed or dead rows reach `base + scale × live rows` (autovacuum's rule). */
  readonly base: number
  readonly scale: number
  /** Pause between two tables, so requests waiting for the one connection run in between. */
  readonly pause: Duration.Duration
}

export const DEFAULT_MAINTENANCE: MaintenanceTuning = {
  enabled: true,
  poll: Duration.seconds(10),
  base: 50,
  scale: 0.1,
  pause: Duration.millis(20)
}

export interface AppConfigShape {
  readonly port: number
  readonly host: string
  readonly databaseUrl: Option.Option<Redacted.Redacted>
  readonly dataDir: string
  /**
   * `EMBEDDED_SHARED_BUFFERS`: PostgreSQL's buffer pool in the embedded database (resident
   * from its start; unused with a PostgreSQL server). More keeps more pages of a large
   * database in PGlite's own memory instead of reading them from the OS's file cache.
   */
  readonly embeddedSharedBuffers: string
  readonly proxyAuthHeader: Option.Option<string>
  readonly proxyTrustedIps: ReadonlyArray<Cidr>
  /**
   * `SERVICE_PROXY_TRUSTED_IPS` was set: a proxy stands in front even without proxy auth, so
   * its `X-Forwarded-*` headers are believed (from `proxyTrustedIps` only).
   */
  readonly proxyTrustedIpsSet: boolean
  readonly defaultTimezone: string
  readonly serviceNow: Option.Option<Date>
  readonly webhookAllowPrivate: boolean
  /** false: this instance serves the API but leaves webhook delivery to other instances. */
  readonly webhookDispatch: boolean
  readonly aiProvider: AiProvider
  readonly aiBaseUrl: Option.Option<string>
  readonly aiApiKey: Option.Option<Redacted.Redacted>
  readonly aiModel: Option.Option<string>
  /** `SERVICE_AI_<FEATURE>_MODEL`: a feature's own model, else `aiModel`. */
  readonly aiFeatureModels: { readonly [F in AiFeature]: Option.Option<string> }
  /** `SERVICE_AI_LOG_PROMPTS`: keep prompt and answer text in the AI activity log. */
  readonly aiLogPrompts: boolean
  readonly aiTuning: AiTuning
  readonly logLevel: string
  /** `DATABASE_POOL_SIZE`: connections to a PostgreSQL server (unused by the embedded database). */
  readonly databasePoolSize: number
  /** `DATABASE_STATEMENT_TIMEOUT_MS`: the longest one statement may take before the request answers 503. */
  readonly databaseStatementTimeout: Duration.Duration
  /** How long the health check waits for the database before answering 503. */
  readonly healthTimeout: Duration.Duration
  /** Review sessions kept in the database at once, over all users and instances (the oldest go first). */
  readonly reviewSessionLimit: number
  /** `SERVICE_MAX_EVENT_STREAMS`: open `GET /api/events` streams this instance holds, over all users (429 past it). */
  readonly maxEventStreams: number
  /** `OTEL_EXPORTER_OTLP_*`: where spans go; none: no tracer is installed at all. */
  readonly otlp: Option.Option<OtlpSettings>
  /** `SERVICE_METRICS_TOKEN`: the Bearer token `GET /metrics` asks for; none: open. */
  readonly metricsToken: Option.Option<Redacted.Redacted>
  /** The embedded database's own vacuum and analyze (fixed in production, shortened or turned off by tests). */
  readonly maintenance: MaintenanceTuning
  /** How often the outbox and the undo log are compacted (fixed in production, stretched by tests that count their rows). */
  readonly compactionInterval: Duration.Duration
}


const fail = (name: string, message: string) => ConfigError.InvalidData([name], message)

const databaseUrl = Config.option(Config.string("DATABASE_URL")).pipe(
  Config.mapOrFail((value) => {
    if (Option.isNone(value) || value.value.trim() === "") return Either.right(Option.none())
    try {
      const url = new URL(value.value)
      if (url.protocol !== "postgres:" && url.protocol !== "postgresql:") {
        return Either.left(fail("DATABASE_URL", "must start with postgres:// or postgresql://"))
      }
      return Either.right(Option.some(Redacted.make(value.value)))
    } catch {
      return Either.left(fail("DATABASE_URL", "is not a valid URL"))
    }
  })
)

const serviceNow = Config.option(Config.string("SERVICE_NOW")).pipe(
  Config.mapOrFail((value) => {
    if (Option.isNone(value) || value.value.trim() === "") return Either.right(Option.none())
    const text = value.value.trim()
    const date = new Date(text)
    const parts = /^(\d{4})-(\d{2})-(\d{2})T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/i.exec(text)
    if (parts === null || Number.isNaN(date.getTime())) {
      return Either.left(fail("SERVICE_NOW", `"${text}" is not an ISO-8601 instant`))
    }
    // Date rolls 2030-02-30 over to March 2; a day the month does not have is a typo.
    const [year, month, day] = [Number(parts[1]), Number(parts[2]), Number(parts[3])]
    if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) {
      return Either.left(fail("SERVICE_NOW", `"${text}" is not a calendar date`))
    }
    // Without an offset, Date would read it in the host's zone.
    if (parts[4] === undefined) {
      return Either.left(fail("SERVICE_NOW", `"${text}" has no UTC offset; add Z or ±hh:mm`))
    }
    return Either.right(Option.some(date))
  })
)

export const DEFAULT_PROXY_TRUSTED_IPS = "127.0.0.1/8,::1/128"

const trustedIps = Config.string("SERVICE_PROXY_TRUSTED_IPS").pipe(
  Config.withDefault(DEFAULT_PROXY_TRUSTED_IPS),
  Config.mapOrFail((raw) =>
    Either.mapLeft(parseCidrList(raw), (message) => fail("SERVICE_PROXY_TRUSTED_IPS", message))
  )
)

const timezone = Config.string("SERVICE_DEFAULT_TIMEZONE").pipe(
  Config.withDefault("UTC"),
  Config.mapOrFail((zone) =>
    isValidTimeZone(zone) ? Either.right(zone) : Either.left(fail("SERVICE_DEFAULT_TIMEZONE", `unknown time zone "${zone}"`))
  )
)

const port = Config.integer("PORT").pipe(
  Config.withDefault(3000),
  Config.mapOrFail((n) => n >= 0 && n <= 65535 ? Either.right(n) : Either.left(fail("PORT", "must be 0-65535")))
)

const provider = Config.string("SERVICE_AI_PROVIDER").pipe(
  Config.withDefault("off"),
  Config.mapOrFail((p): Either.Either<AiProvider, ConfigError.ConfigError> =>
    p === "off" || p === "openai" || p === "anthropic"
      ? Either.right(p)
      : Either.left(fail("SERVICE_AI_PROVIDER", `unknown provider "${p}" (use off, openai or anthropic)`))
  )
)

const bool = (name: string, fallback: boolean) =>
  Config.string(name).pipe(
    Config.withDefault(String(fallback)),
    Config.mapOrFail((v) => {
      const t = v.trim().toLowerCase()
      if (["true", "1", "yes", "on"].includes(t)) return Either.right(true)
      if (["false", "0", "no", "off"].includes(t)) return Either.right(false)
      return Either.left(fail(name, `"${v}" is not a boolean`))
    })
  )

const optionalString = (name: string) =>
  Config.option(Config.string(name)).pipe(Config.map(Option.filter((s) => s.trim() !== "")))

const boundedInteger = (name: string, fallback: number, min: number, max: number) =>
  Config.string(name).pipe(
    Config.withDefault(String(fallback)),
    Config.mapOrFail((raw) => {
      const text = raw.trim()
      const n = Number(text)
      return /^\d+$/.test(text) && n >= min && n <= max
        ? Either.right(n)
        : Either.left(fail(name, `"${raw}" is not a whole number from ${min} to ${max}`))
    })
  )

/**
 * 24MB: the task table of a user with 10,000 tasks is ~20 MB of pages. Reads that walked all
 * of a user's rows were what a small pool slowed: GET /api/tasks/counts ran 2.5–4× slower at
 * 16MB than at PGlite's own 128MB, and 0.6–0.85× of 32MB's rate at 24MB, until it read an
 * index instead (migration 0037). Since then 24MB serves every endpoint as fast as 32MB and
 * keeps 20–25 MiB less (docs/performance.md, "Memory", eighth part); each 16MB more costs
 * ~25 MiB of RSS from the start.
 */
export const DEFAULT_SHARED_BUFFERS = "24MB"

/** PostgreSQL's memory units, from its 128kB minimum to 1GB: `16MB`, `8192kB`, `1GB`. */
const sharedBuffers = Config.string("EMBEDDED_SHARED_BUFFERS").pipe(
  Config.withDefault(DEFAULT_SHARED_BUFFERS),
  Config.mapOrFail((raw) => {
    const match = /^(\d+)\s*(kB|MB|GB)$/.exec(raw.trim())
    const kib = match === null ? Number.NaN : Number(match[1]) * (match[2] === "GB" ? 1024 * 1024 : match[2] === "MB" ? 1024 : 1)
    return kib >= 128 && kib <= 1024 * 1024
      ? Either.right(`${match![1]}${match![2]}`)
      : Either.left(fail("EMBEDDED_SHARED_BUFFERS", `"${raw}" is not a size from 128kB to 1GB (e.g. 16MB)`))
  })
)

/** An http(s) URL when set: a typo must stop start-up, not surface as failing AI calls. */
const aiBaseUrl = optionalString("SERVICE_AI_BASE_URL").pipe(
  Config.mapOrFail((value) => {
    if (Option.isNone(value)) return Either.right(value)
    try {
      const url = new URL(value.value.trim())
      return url.protocol === "http:" || url.protocol === "https:"
        ? Either.right(Option.some(value.value.trim()))
        : Either.left(fail("SERVICE_AI_BASE_URL", "must start with http:// or https://"))
    } catch {
      return Either.left(fail("SERVICE_AI_BASE_URL", `"${value.value}" is not a URL`))
    }
  })
)

/** Every variable of CONTRACT §2, validated together so each bad one is reported. */
export const appConfig: Config.Config<AppConfigShape> = Config.all({
  port,
  host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1")),
  databaseUrl,
  dataDir: Config.string("DATA_DIR").pipe(Config.withDefault("./data")),
  embeddedSharedBuffers: sharedBuffers,
  databasePoolSize: boundedInteger("DATABASE_POOL_SIZE", 10, 1, 1000),
  databaseStatementTimeout: boundedInteger("DATABASE_STATEMENT_TIMEOUT_MS", 5000, 100, 3_600_000).pipe(Config.map(Duration.millis)),
  proxyAuthHeader: optionalString("SERVICE_PROXY_AUTH_HEADER"),
  proxyTrustedIps: trustedIps,
  proxyTrustedIpsSet: Config.option(Config.string("SERVICE_PROXY_TRUSTED_IPS")).pipe(
    Config.map((value) => Option.isSome(value) && value.value.trim() !== "")
  ),
  defaultTimezone: timezone,
  serviceNow,
  // On by default as CONTRACT §2 decides (home-lab receivers on loopback and the LAN); the
  // delivery log then reports only coarse reasons, so it does not map the host's ports.
  webhookAllowPrivate: bool("SERVICE_WEBHOOK_ALLOW_PRIVATE", true),
  webhookDispatch: bool("SERVICE_WEBHOOK_DISPATCH", true),
  aiProvider: provider,
  aiBaseUrl,
  aiApiKey: Config.option(Config.redacted("SERVICE_AI_API_KEY")),
  aiModel: optionalString("SERVICE_AI_MODEL"),
  aiFeatureModels: Config.all({
    enrichment: optionalString("SERVICE_AI_ENRICHMENT_MODEL"),
    quick_take: optionalString("SERVICE_AI_QUICK_TAKE_MODEL"),
    whats_next: optionalString("SERVICE_AI_WHATS_NEXT_MODEL"),
    insights: optionalString("SERVICE_AI_INSIGHTS_MODEL")
  }),
  aiLogPrompts: bool("SERVICE_AI_LOG_PROMPTS", false),
  aiTuning: Config.succeed(DEFAULT_AI_TUNING),
  logLevel: Config.string("LOG_LEVEL").pipe(Config.withDefault("info")),
  healthTimeout: Config.succeed(Duration.seconds(2)),
  reviewSessionLimit: Config.succeed(10_000),
  maxEventStreams: boundedInteger("SERVICE_MAX_EVENT_STREAMS", 1000, 1, 100_000),
  otlp: otlpConfig,
  metricsToken: Config.option(Config.redacted("SERVICE_METRICS_TOKEN")).pipe(
    Config.map(Option.filter((token) => Redacted.value(token).trim() !== ""))
  ),
  maintenance: Config.succeed(DEFAULT_MAINTENANCE),
  compactionInterval: Config.succeed(Duration.minutes(1))
})

export class AppConfig extends Context.Tag("steady/AppConfig")<AppConfig, AppConfigShape>() {
  static readonly Live = Layer.effect(AppConfig, appConfig)
  /** For tests and embedding: the defaults with some fields replaced. */
  static readonly layerWith = (overrides: Partial<AppConfigShape>) =>
    Layer.effect(AppConfig, Effect.map(appConfig, (base) => ({ ...base, ...overrides })))
}

/** One line per bad variable, as CONTRACT §2 asks. */
export const formatConfigError = (error: ConfigError.ConfigError): ReadonlyArray<string> =>
  ConfigError.reduceWithContext(error, undefined, {
    andCase: (_, left: ReadonlyArray<string>, right: ReadonlyArray<string>) => [...left, ...right],
    orCase: (_, left: ReadonlyArray<string>, right: ReadonlyArray<string>) => [...left, ...right],
    invalidDataCase: (_, path, message) => [`${path.join(".")}: ${message}`],
    missingDataCase: (_, path, message) => [`${path.join(".")}: ${message}`],
    sourceUnavailableCase: (_, path, message) => [`${path.join(".")}: ${message}`],
    unsupportedCase: (_, path, message) => [`${path.join(".")}: ${message}`]
  })
