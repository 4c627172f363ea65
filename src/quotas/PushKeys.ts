import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Schema } from "effect"
import * as Crypto from "node:crypto"

/**
 * The VAPID key pair for web push: generated once (P-256), stored, and the public key
 * served as the uncompressed point in base64url, as browsers expect it.
 */
const generate = () => {
  const { privateKey, publicKey } = Crypto.generateKeyPairSync("ec", { namedCurve: "prime256v1" })
  const jwk = publicKey.export({ format: "jwk" })
  const raw = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, "base64url"), Buffer.from(jwk.y!, "base64url")])
  return {
    public_key: raw.toString("base64url"),
    private_key: (privateKey.export({ format: "jwk" }).d ?? "") as string
  }
}

/** The stored key pair (`app_settings.value`, jsonb), of which only the public key is read. */
const VapidRow = Schema.Struct({ value: Schema.Struct({ public_key: Schema.String }) })
const decodeVapid = Schema.decodeUnknown(Schema.Array(VapidRow))
/** Read back after the insert: the row is there, whichever instance wrote it. */
const decodeVapidOne = Schema.decodeUnknown(Schema.Tuple(VapidRow))

export class PushKeys extends Effect.Service<PushKeys>()("steady/PushKeys", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const publicKey = Effect.gen(function*() {
      const existing = yield* Effect.flatMap(sql`SELECT value FROM app_settings WHERE key = 'vapid'`, decodeVapid)
      if (existing[0] !== undefined) return existing[0].value.public_key
      // Two instances racing here both insert; the first wins and both read it back.
      yield* sql`INSERT INTO app_settings (key, value) VALUES ('vapid', ${JSON.stringify(generate())}::jsonb)
        ON CONFLICT (key) DO NOTHING`
      const [row] = yield* Effect.flatMap(sql`SELECT value FROM app_settings WHERE key = 'vapid'`, decodeVapidOne)
      return row.value.public_key
    }).pipe(Effect.orDie)
    return { publicKey } as const
  })
}) {}
