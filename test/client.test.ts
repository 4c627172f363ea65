import { FetchHttpClient, type HttpClient } from "@effect/platform"
import { Effect, Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeClient, TaskId } from "../src/index.js"
import { startService, type TestService, type TestUser } from "./support/service.js"

const tagOf = (error: unknown) =>
  typeof error === "object" && error !== null && "_tag" in error ? error._tag : undefined

/** The typed client the library exports, against a running service. */
describe("makeClient (typed client from the API definition)", () => {
  let service: TestService
  let user: TestUser

  beforeAll(async () => {
    service = await startService()
    user = await service.user("typed-client")
  })
  afterAll(async () => {
    await service.stop()
  })

  const run = <A, E>(effect: Effect.Effect<A, E, HttpClient.HttpClient>) =>
    Effect.runPromise(Effect.provide(effect, FetchHttpClient.layer))

  it("creates and reads a task with a bearer token, answers decoded by the server's schemas", async () => {
    const { created, read, me } = await run(Effect.gen(function*() {
      const client = yield* makeClient({ baseUrl: service.baseUrl, token: user.token })
      const created = yield* client.tasks.create({ payload: { title: "Water the plants", labels: ["home"] } })
      const read = yield* client.tasks.get({ path: { id: TaskId.make(created.data.id) } })
      const me = yield* client.account.me()
      return { created, read, me }
    }))
    expect(created.data.title).toBe("Water the plants")
    expect(read.data).toEqual(created.data)
    expect(read.data.labels).toEqual(["home"])
    expect(me.data.username).toBe("typed-client")
    // Over HTTP, as any client sees it.
    const wire = await user.api.get(`/api/tasks/${created.data.id}`)
    expect(wire.body.data.title).toBe("Water the plants")
  })

  it("fails with the typed error: 401 without a valid token, 404 for another user's task", async () => {
    const other = await service.user("typed-client-other")
    const result = await run(Effect.gen(function*() {
      const mine = yield* makeClient({ baseUrl: service.baseUrl, token: user.token })
      const task = yield* mine.tasks.create({ payload: { title: "Private" } })
      const theirs = yield* makeClient({ baseUrl: service.baseUrl, token: other.token })
      const anonymous = yield* makeClient({ baseUrl: service.baseUrl })
      return {
        unauthenticated: yield* Effect.either(anonymous.tasks.list({ urlParams: {} })),
        foreign: yield* Effect.either(theirs.tasks.get({ path: { id: TaskId.make(task.data.id) } }))
      }
    }))
    expect(Either.isLeft(result.unauthenticated) && tagOf(result.unauthenticated.left)).toBe("Unauthorized")
    expect(Either.isLeft(result.foreign) && tagOf(result.foreign.left)).toBe("NotFound")
  })
})
