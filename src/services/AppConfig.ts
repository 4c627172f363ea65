import { Config, ConfigError, Context, Duration, Either, Effect, Layer, Option, Redacted } from "effect"
import * as Net from "node:net"
import { isValidTimeZone } from "../domain/TimeZone.js"

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

export interface AppConfigShape {
  readonly port: number
  readonly host: string
  readonly databaseUrl: Option.Option<Redacted.Redacted>
  readonly dataDir: string
  readonly proxyAuthHeader: Option.Option<string>
  readonly proxyTrustedIps: ReadonlyArray<Cidr>
  readonly defaultTimezone: string
  readonly serviceNow: Option.Option<Date>
  readonly webhookAllowPrivate: boolean
  /** false: this instance serves the API but leaves webhook delivery to other instances. */
  readonly webhookDispatch: boolean
  readonly aiProvider: AiProvider
  readonly aiBaseUrl: Option.Option<string>
  readonly aiApiKey: Option.Option<Redacted.Redacted>
  readonly aiModel: Option.Option<string>
  readonly logLevel: string
  /** How long the health check waits for the database before answering 503. */
  readonly healthTimeout: Duration.Duration
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

const trustedIps = Config.string("SERVICE_PROXY_TRUSTED_IPS").pipe(
  Config.withDefault("127.0.0.1/8,::1/128"),
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

/** Every variable of CONTRACT §2, validated together so each bad one is reported. */
export const appConfig: Config.Config<AppConfigShape> = Config.all({
  port,
  host: Config.string("HOST").pipe(Config.withDefault("127.0.0.1")),
  databaseUrl,
  dataDir: Config.string("DATA_DIR").pipe(Config.withDefault("./data")),
  proxyAuthHeader: optionalString("SERVICE_PROXY_AUTH_HEADER"),
  proxyTrustedIps: trustedIps,
  defaultTimezone: timezone,
  serviceNow,
  webhookAllowPrivate: bool("SERVICE_WEBHOOK_ALLOW_PRIVATE", true),
  webhookDispatch: bool("SERVICE_WEBHOOK_DISPATCH", true),
  aiProvider: provider,
  aiBaseUrl: optionalString("SERVICE_AI_BASE_URL"),
  aiApiKey: Config.option(Config.redacted("SERVICE_AI_API_KEY")),
  aiModel: optionalString("SERVICE_AI_MODEL"),
  logLevel: Config.string("LOG_LEVEL").pipe(Config.withDefault("info")),
  healthTimeout: Config.succeed(Duration.seconds(2))
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
