import * as HttpApiEndpoint from "@effect/platform/HttpApiEndpoint"
import * as HttpApiGroup from "@effect/platform/HttpApiGroup"
import { Schema } from "effect"
import { TokenIdParam } from "../kernel/Ids.js"
import { Preferences, PreferencesPatch } from "./Preferences.js"
import { Timestamp } from "../tasks/Task.js"
import { nonBlank, StoredString } from "../kernel/Text.js"
import { Data } from "../http/Envelope.js"
import { Authentication } from "../http/Security.js"

export const Me = Schema.Struct({
  id: Schema.Int,
  username: Schema.String,
  timezone: Schema.String,
  week_start: Schema.String
}).annotations({ identifier: "Me" })

export const TokenListItem = Schema.Struct({
  id: Schema.Int,
  name: Schema.String,
  token_preview: Schema.String,
  created_at: Timestamp
}).annotations({ identifier: "TokenListItem" })

export const CreatedToken = Schema.extend(TokenListItem, Schema.Struct({ token: Schema.String }))

export const TokenCreate = Schema.Struct({
  name: StoredString.pipe(
    nonBlank(),
    Schema.maxLength(100, { message: () => "must be at most 100 characters" })
  )
})

export const TokenList = Schema.Struct({ tokens: Schema.Array(TokenListItem) })
export const TokenDeleted = Schema.Struct({ deleted: Schema.Literal(true) })
export const SessionCreated = Schema.Struct({ user: Me, expires_at: Timestamp })
export const SessionDeleted = Schema.Struct({ signed_out: Schema.Boolean })

/** Who the caller is, their preferences and their API tokens. */
export class AccountApi extends HttpApiGroup.make("account")
  .add(HttpApiEndpoint.get("me", "/api/auth/me").addSuccess(Data(Me)))
  .add(HttpApiEndpoint.get("preferences", "/api/user/preferences").addSuccess(Data(Preferences)))
  .add(
    HttpApiEndpoint.patch("updatePreferences", "/api/user/preferences").setPayload(PreferencesPatch).addSuccess(
      Data(Preferences)
    )
  )
  .add(
    HttpApiEndpoint.get("tokens", "/api/tokens").addSuccess(Data(TokenList))
  )
  .add(HttpApiEndpoint.post("createToken", "/api/tokens").setPayload(TokenCreate).addSuccess(Data(CreatedToken), { status: 201 }))
  .add(
    HttpApiEndpoint.del("deleteToken", "/api/tokens/:id").setPath(TokenIdParam).addSuccess(
      Data(TokenDeleted)
    )
  )
  .middleware(Authentication)
{}

/**
 * The web login flow: a valid Bearer token mints an HttpOnly session cookie that then
 * authenticates like the token; DELETE signs the cookie out.
 */
export class SessionApi extends HttpApiGroup.make("session")
  .add(
    HttpApiEndpoint.post("createSession", "/api/auth/session").addSuccess(
      Data(SessionCreated)
    )
  )
  .add(
    HttpApiEndpoint.del("deleteSession", "/api/auth/session").addSuccess(Data(SessionDeleted))
  )
{}
