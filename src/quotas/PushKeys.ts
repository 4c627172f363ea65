import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
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

export class PushKeys extends Effect.Service<PushKeys>()("steady/PushKeys", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const publicKey = Effect.gen(function*() {
      const existing = yield* sql<{ value: { public_key: string } }>`SELECT value FROM app_settings WHERE key = 'vapid'`
      if (existing[0] !== undefined) return existing[0].value.public_key
      // Two instances racing here both insert; the first wins and both read it back.
      yield* sql`INSERT INTO app_settings (key, value) VALUES ('vapid', ${JSON.stringify(generate())}::jsonb)
        ON CONFLICT (key) DO NOTHING`
      const [row] = yield* sql<{ value: { public_key: string } }>`SELECT value FROM app_settings WHERE key = 'vapid'`
      return row!.value.public_key
    }).pipe(Effect.orDie)
    return { publicKey } as const
  })
}) {}
