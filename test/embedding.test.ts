import { HttpApiBuilder, HttpServer } from "@effect/platform"
import { Effect, Layer, ManagedRuntime, Option, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ApiLive, AppConfig, DatabaseLive, MigrationsLive, ServicesLive, Users, Credentials } from "../src/index.js"
import { freshDatabase, type TestDatabase } from "./support/database.js"

/**
 * A host program embeds the API as a web handler: no server of ours, its own request
 * plumbing, and still our envelope for bad input and unknown routes.
 */
describe("embedding as a library", () => {
  let db: TestDatabase
  let handler: (request: Request) => Promise<Response>
  let dispose: () => Promise<void>
  let token: string
  let memoMap: Layer.MemoMap
  let runtime: ManagedRuntime.ManagedRuntime<Layer.Layer.Success<typeof ServicesLive>, never>

  beforeAll(async () => {
    db = await freshDatabase()
    const config = AppConfig.layerWith({
      databaseUrl: db.url === undefined ? Option.none() : Option.some(Redacted.make(db.url)),
      dataDir: db.dataDir
    })
    const services = ServicesLive.pipe(
      Layer.provideMerge(MigrationsLive.pipe(Layer.provideMerge(DatabaseLive))),
      Layer.provideMerge(config)
    )
    // One memo map: the host's handler and its own runtime share one set of services and
    // one database (the embedded one may be opened only once).
    memoMap = Effect.runSync(Layer.makeMemoMap)
    runtime = ManagedRuntime.make(services.pipe(Layer.orDie), memoMap)
    const web = HttpApiBuilder.toWebHandler(
      Layer.mergeAll(ApiLive, HttpServer.layerContext).pipe(Layer.provideMerge(services), Layer.orDie),
      { memoMap }
    )
    handler = web.handler
    dispose = web.dispose
    // The same services the host got are usable directly, e.g. to make a user and a token.
    token = await runtime.runPromise(
      Effect.gen(function*() {
        const user = yield* (yield* Users).findOrCreate("host-user", "UTC")
        return (yield* (yield* Credentials).createToken(user.id, "host")).token
      })
    )
  })

  afterAll(async () => {
    await dispose()
    await runtime.dispose()
    await db.drop()
  })

  it("serves tasks through the host's handler", async () => {
    const created = await handler(new Request("http://host/api/tasks", {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ title: "From the host" })
    }))
    expect(created.status).toBe(201)
    expect(((await created.json()) as { data: { title: string } }).data.title).toBe("From the host")
  })

  it("answers bad input and unknown routes with our envelope", async () => {
    const bad = await handler(new Request("http://host/api/tasks/abc", { headers: { authorization: `Bearer ${token}` } }))
    expect(bad.status).toBe(400)
    expect(await bad.json()).toEqual({ error: "Invalid request", code: "VALIDATION_ERROR", details: { id: "must be a positive integer id" } })
    const post = (body: string) =>
      handler(new Request("http://host/api/tasks", {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body
      }))
    const deep = await post(`{"title":"x","notes":${"[".repeat(10_000)}${"]".repeat(10_000)}}`)
    expect(deep.status).toBe(400)
    expect(await deep.json()).toEqual({
      error: "Invalid request",
      code: "VALIDATION_ERROR",
      details: { body: "JSON nested deeper than 32 levels" }
    })
    const nul = await post(`{"title":"a\\u0000b"}`)
    expect(nul.status).toBe(400)
    expect(((await nul.json()) as { details: unknown }).details).toEqual({
      title: "must not contain NUL (\\u0000) or unpaired surrogate characters"
    })
    const missing = await handler(new Request("http://host/api/nothing-here"))
    expect(missing.status).toBe(404)
    expect(((await missing.json()) as { code: string }).code).toBe("NOT_FOUND")
  })
})
