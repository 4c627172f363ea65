import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask } from "./support/tasks.js"

/** GET /api/completions and GET /api/trash page like GET /api/tasks: limit 1–1000 (default 200), offset ≥ 0. */
describe("completions and trash are paged", () => {
  let service: TestService
  let user: TestUser
  let other: TestUser

  beforeAll(async () => {
    service = await startService()
    user = await service.user("pager")
    other = await service.user("someone-else")
    // Five completions and five trashed tasks, each made after the one before.
    for (const n of [1, 2, 3, 4, 5]) {
      const done = await createTask(user.api, { title: `done ${n}` })
      expect((await user.api.post(`/api/tasks/${done.id}/done`, {})).status).toBe(200)
      const trashed = await createTask(user.api, { title: `trashed ${n}` })
      expect((await user.api.delete(`/api/tasks/${trashed.id}`)).status).toBe(200)
    }
    const theirs = await createTask(other.api, { title: "not mine" })
    await other.api.post(`/api/tasks/${theirs.id}/done`, {})
    await other.api.delete(`/api/tasks/${theirs.id}`)
  })
  afterAll(async () => {
    await service.stop()
  })

  const completionTitles = async (query: string) => {
    const res = await user.api.get(`/api/completions${query}`)
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.count).toBe(res.body.data.completions.length)
    return res.body.data.completions.map((c: { task_title: string }) => c.task_title)
  }
  const trashTitles = async (query: string) => {
    const res = await user.api.get(`/api/trash${query}`)
    expect(res.status, res.text).toBe(200)
    expect(res.body.data.count).toBe(res.body.data.tasks.length)
    return res.body.data.tasks.map((t: { title: string }) => t.title)
  }

  it("completions: newest first, a page at a time", async () => {
    expect(await completionTitles("")).toEqual(["done 5", "done 4", "done 3", "done 2", "done 1"])
    expect(await completionTitles("?limit=2")).toEqual(["done 5", "done 4"])
    expect(await completionTitles("?limit=2&offset=2")).toEqual(["done 3", "done 2"])
    expect(await completionTitles("?limit=2&offset=4")).toEqual(["done 1"])
    expect(await completionTitles("?offset=5")).toEqual([])
    expect(await completionTitles("?offset=3")).toEqual(["done 2", "done 1"])
  })

  it("completions: paging applies after the filters", async () => {
    const all = (await user.api.get("/api/completions")).body.data.completions
    const third = all.find((c: { task_title: string }) => c.task_title === "done 3")
    expect(await completionTitles(`?task_id=${third.task_id}&limit=1`)).toEqual(["done 3"])
    expect(await completionTitles(`?task_id=${third.task_id}&offset=1`)).toEqual([])
  })

  it("trash: most recently trashed first, a page at a time", async () => {
    expect(await trashTitles("")).toEqual(["trashed 5", "trashed 4", "trashed 3", "trashed 2", "trashed 1"])
    expect(await trashTitles("?limit=3")).toEqual(["trashed 5", "trashed 4", "trashed 3"])
    expect(await trashTitles("?limit=3&offset=3")).toEqual(["trashed 2", "trashed 1"])
    expect(await trashTitles("?offset=4&limit=1000")).toEqual(["trashed 1"])
  })

  it.each([
    ["limit=0", { limit: "must be from 1 to 1000" }],
    ["limit=1001", { limit: "must be from 1 to 1000" }],
    ["limit=abc", { limit: "must be an integer" }],
    ["offset=-1", { offset: "must be from 0 to 2147483647" }],
    ["offset=2147483648", { offset: "must be from 0 to 2147483647" }],
    ["limit=1.5", { limit: "must be an integer" }]
  ])("%s is a 400 on both, as on GET /api/tasks", async (query, details) => {
    for (const path of ["/api/completions", "/api/trash", "/api/tasks"]) {
      const res = await user.api.get(`${path}?${query}`)
      expect(res.status, `${path}?${query}`).toBe(400)
      expect(res.body).toEqual({ error: "Invalid request", code: "VALIDATION_ERROR", details })
    }
  })

  it("the default page is 200 rows", async () => {
    // Ten at a time: 205 at once would queue past the pool's 3 s wait on a slow machine (a 503).
    const many: Array<Record<string, any>> = []
    for (let start = 0; start < 205; start += 10) {
      const batch = Array.from({ length: Math.min(10, 205 - start) }, (_, i) => start + i)
      many.push(...await Promise.all(batch.map((i) => createTask(user.api, { title: `bulk ${i}` }))))
    }
    const res = await user.api.post("/api/tasks/bulk/done", { ids: many.map((t) => t.id) })
    expect(res.body.tasks_affected).toBe(205)
    expect((await user.api.get("/api/completions")).body.data.count).toBe(200)
    expect((await user.api.get("/api/completions?limit=1000")).body.data.count).toBe(210)
    expect((await user.api.get("/api/completions?offset=200")).body.data.count).toBe(10)
  })
})
