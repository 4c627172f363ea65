import { Config, ConfigError, Either, Option } from "effect"

/** Where and how spans are exported; read from the standard `OTEL_*` variables. */
export interface OtlpSettings {
  /** The full traces URL (`…/v1/traces`). */
  readonly tracesUrl: string
  readonly protocol: "http/protobuf" | "http/json"
  readonly headers: Readonly<Record<string, string>>
  readonly serviceName: string
}

const fail = (name: string, message: string) => ConfigError.InvalidData([name], message)

const optional = (name: string) =>
  Config.option(Config.string(name)).pipe(Config.map(Option.filter((s) => s.trim() !== "")), Config.map(Option.map((s) => s.trim())))

const httpUrl = (name: string, value: string): Either.Either<string, ConfigError.ConfigError> => {
  try {
    const url = new URL(value)
    return url.protocol === "http:" || url.protocol === "https:"
      ? Either.right(value)
      : Either.left(fail(name, "must start with http:// or https://"))
  } catch {
    return Either.left(fail(name, `"${value}" is not a URL`))
  }
}

/** `k1=v1,k2=v2`, values URL-encoded, as the OpenTelemetry specification writes them. */
const parseHeaders = (raw: string): Either.Either<Record<string, string>, ConfigError.ConfigError> => {
  const out: Record<string, string> = {}
  for (const part of raw.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const eq = part.indexOf("=")
    if (eq <= 0) return Either.left(fail("OTEL_EXPORTER_OTLP_HEADERS", `"${part}" is not key=value`))
    try {
      out[decodeURIComponent(part.slice(0, eq).trim())] = decodeURIComponent(part.slice(eq + 1).trim())
    } catch {
      return Either.left(fail("OTEL_EXPORTER_OTLP_HEADERS", `"${part}" is not URL-encoded`))
    }
  }
  return Either.right(out)
}

/**
 * Tracing is on when `OTEL_EXPORTER_OTLP_ENDPOINT` (spans go to `<endpoint>/v1/traces`) or
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as is) is set; otherwise none: no tracer runs.
 */
export const otlpConfig: Config.Config<Option.Option<OtlpSettings>> = Config.all({
  endpoint: optional("OTEL_EXPORTER_OTLP_ENDPOINT"),
  tracesEndpoint: optional("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
  tracesProtocol: optional("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
  protocol: optional("OTEL_EXPORTER_OTLP_PROTOCOL"),
  headers: optional("OTEL_EXPORTER_OTLP_HEADERS"),
  serviceName: optional("OTEL_SERVICE_NAME")
}).pipe(
  Config.mapOrFail((raw): Either.Either<Option.Option<OtlpSettings>, ConfigError.ConfigError> => {
    const url = Option.isSome(raw.tracesEndpoint)
      ? httpUrl("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raw.tracesEndpoint.value)
      : Option.isSome(raw.endpoint)
      ? Either.map(httpUrl("OTEL_EXPORTER_OTLP_ENDPOINT", raw.endpoint.value), (base) => `${base.replace(/\/+$/, "")}/v1/traces`)
      : undefined
    if (url === undefined) return Either.right(Option.none())
    const protocol = Option.getOrElse(Option.orElse(raw.tracesProtocol, () => raw.protocol), () => "http/protobuf")
    if (protocol !== "http/protobuf" && protocol !== "http/json") {
      return Either.left(fail("OTEL_EXPORTER_OTLP_PROTOCOL", `"${protocol}" is not supported (use http/protobuf or http/json)`))
    }
    const headers = Option.isSome(raw.headers) ? parseHeaders(raw.headers.value) : Either.right({})
    return Either.flatMap(url, (tracesUrl) =>
      Either.map(headers, (parsed) =>
        Option.some({ tracesUrl, protocol, headers: parsed, serviceName: Option.getOrElse(raw.serviceName, () => "steady") })))
  })
)
