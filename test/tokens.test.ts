import * as SqlClient from "@effect/sql/SqlClient"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startService, type TestService, type TestUser } from "./support/service.js"

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const sha256 = (text: string) => Crypto.createHash("sha256").update(text, "utf8").digest("hex")

describe("API tokens", () => {
  let service: TestService
  let alice: TestUser
  let bob: TestUser

  beforeAll(async () => {
    service = await startService()
    alice = await service.user("alice")
    bob = await service.user("bob")
  })
  afterAll(async () => {
    await service?.stop()
  })

  const sql = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
    service.run(Effect.flatMap(SqlClient.SqlClient, f))

  const bearer = (token: string) => service.client({ authorization: `Bearer ${token}` })

  it("POST /api/tokens answers 201 with the raw token shown once", async () => {
    const res = await alice.api.post("/api/tokens", { name: "laptop" })
    expect(res.status).toBe(201)
    const data = res.body.data
    expect(Object.keys(data).sort()).toEqual(["created_at", "id", "name", "token", "token_preview"])
    expect(data.id).toEqual(expect.any(Number))
    expect(data.name).toBe("laptop")
    expect(data.token).toMatch(/^[0-9a-f]{64}$/)
    expect(data.token_preview).toBe(data.token.slice(-8))
    expect(data.created_at).toMatch(ISO_MS)

    // The new token works on its own.
    const me = await bearer(data.token).get("/api/auth/me")
    expect(me.status).toBe(200)
    expect(me.body.data.id).toBe(alice.id)
  })

  it("every token is different", async () => {
    const a = await alice.api.post("/api/tokens", { name: "one" })
    const b = await alice.api.post("/api/tokens", { name: "one" })
    expect(a.status).toBe(201)
    expect(b.status).toBe(201)
    expect(a.body.data.token).not.toBe(b.body.data.token)
    expect(a.body.data.id).not.toBe(b.body.data.id)
  })

  it("GET /api/tokens lists the caller's tokens newest first, previews only", async () => {
    const created: Array<{ id: number; token: string }> = []
    for (const name of ["first", "second", "third"]) {
      const res = await bob.api.post("/api/tokens", { name })
      expect(res.status).toBe(201)
      created.push(res.body.data)
    }
    const res = await bob.api.get("/api/tokens")
    expect(res.status).toBe(200)
    const tokens = res.body.data.tokens as Array<any>
    // The harness token ("test") came first, so it is last.
    expect(tokens.map((t) => t.name)).toEqual(["third", "second", "first", "test"])
    expect(tokens.slice(0, 3).map((t) => t.id)).toEqual(created.map((t) => t.id).reverse())
    for (const item of tokens) {
      expect(Object.keys(item).sort()).toEqual(["created_at", "id", "name", "token_preview"])
      expect(item.token_preview).toMatch(/^[0-9a-f]{8}$/)
      expect(item.created_at).toMatch(ISO_MS)
    }
    expect(tokens[0].token_preview).toBe(created[2]!.token.slice(-8))
    expect(tokens[3].token_preview).toBe(bob.token.slice(-8))
    for (const { token } of [...created, { token: bob.token }]) expect(res.text).not.toContain(token)
    // Only the caller's own tokens.
    expect(tokens.every((t) => !["laptop", "one"].includes(t.name))).toBe(true)
  })

  it("the name must be 1-100 characters", async () => {
    const before = (await alice.api.get("/api/tokens")).body.data.tokens.length
    for (const body of [{ name: "" }, { name: "   " }, { name: "x".repeat(101) }, {}, { name: 42 }, { name: null }]) {
      const res = await alice.api.post("/api/tokens", body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.body).toMatchObject({ code: "VALIDATION_ERROR", error: expect.any(String) })
      expect(res.body.details).toEqual(expect.any(Object))
    }
    expect((await alice.api.get("/api/tokens")).body.data.tokens.length).toBe(before)

    const longest = await alice.api.post("/api/tokens", { name: "y".repeat(100) })
    expect(longest.status).toBe(201)
    expect(longest.body.data.name).toBe("y".repeat(100))
  })

  it("DELETE /api/tokens/{id} answers {deleted: true} and the token stops working at once", async () => {
    const created = await alice.api.post("/api/tokens", { name: "short-lived" })
    const { id, token } = created.body.data
    const client = bearer(token)
    expect((await client.get("/api/auth/me")).status).toBe(200)

    const res = await alice.api.delete(`/api/tokens/${id}`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ data: { deleted: true } })

    const after = await client.get("/api/auth/me")
    expect(after.status).toBe(401)
    expect(after.body).toMatchObject({ code: "UNAUTHORIZED", details: {} })
    expect((await alice.api.get("/api/tokens")).body.data.tokens.map((t: any) => t.id)).not.toContain(id)

    // Deleting it again: it is gone.
    const again = await alice.api.delete(`/api/tokens/${id}`)
    expect(again.status).toBe(404)
    expect(again.body).toMatchObject({ code: "NOT_FOUND", details: {} })
  })

  it("a token can delete itself", async () => {
    const created = await alice.api.post("/api/tokens", { name: "self" })
    const client = bearer(created.body.data.token)
    const res = await client.delete(`/api/tokens/${created.body.data.id}`)
    expect(res.status).toBe(200)
    expect((await client.get("/api/auth/me")).status).toBe(401)
  })

  it("another user's token id is a 404 and that token keeps working", async () => {
    const created = await bob.api.post("/api/tokens", { name: "bob's" })
    const res = await alice.api.delete(`/api/tokens/${created.body.data.id}`)
    expect(res.status).toBe(404)
    expect(res.body).toMatchObject({ code: "NOT_FOUND", details: {} })
    expect((await bearer(created.body.data.token).get("/api/auth/me")).body.data.id).toBe(bob.id)
    expect((await bob.api.get("/api/tokens")).body.data.tokens.map((t: any) => t.id)).toContain(created.body.data.id)
  })

  it("unknown and malformed ids", async () => {
    expect((await alice.api.delete("/api/tokens/999999")).status).toBe(404)
    for (const bad of ["abc", "0", "-1", "1.5", "99999999999"]) {
      const res = await alice.api.delete(`/api/tokens/${bad}`)
      expect(res.status, bad).toBe(400)
      expect(res.body.code).toBe("VALIDATION_ERROR")
    }
  })

  it("the database stores only a SHA-256 digest of each token", async () => {
    const created = await alice.api.post("/api/tokens", { name: "digest" })
    const { id, token } = created.body.data
    const rows = await sql((s) =>
      s<{ token_hash: string; token_preview: string }>`SELECT token_hash, token_preview FROM api_tokens WHERE id = ${id}`
    )
    expect(rows).toHaveLength(1)
    expect(rows[0]!.token_hash).not.toBe(token)
    expect(rows[0]!.token_hash).toBe(sha256(token))
    expect(rows[0]!.token_preview).toBe(token.slice(-8))

    // No column of any token row holds a raw token.
    const all = await sql((s) => s<{ row: string }>`SELECT row_to_json(t)::text AS row FROM api_tokens t`)
    expect(all.length).toBeGreaterThan(3)
    for (const raw of [token, alice.token, bob.token]) {
      for (const row of all) expect(row.row).not.toContain(raw)
    }
  })
})
