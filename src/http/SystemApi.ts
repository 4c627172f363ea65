import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

export const HealthOk = Schema.Struct({ status: Schema.Literal("ok") })
export const HealthDown = Schema.Struct({ status: Schema.Literal("error"), message: Schema.String }).annotations({
  identifier: "HealthDown"
})

/** Public endpoints: no authentication, no `{data}` envelope (spec §1, §4.1). */
export class SystemApi extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("health", "/api/health")
      .addSuccess(HealthOk)
      .addError(HealthDown, { status: 503 })
  )
  .add(
    HttpApiEndpoint.get("openapi", "/api/openapi")
      .addSuccess(HttpApiSchema.Text({ contentType: "text/yaml" }))
  )
{}
