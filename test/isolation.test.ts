import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startService, type TestService, type TestUser } from "./support/service.js"

const NOT_FOUND = { error: expect.any(String), code: "NOT_FOUND", details: {} }

/** Everything user A owns, as A sees it. */
const snapshot = async (a: TestUser, ids: { tasks: Array<number>; projects: Array<number> }) => {
  const tasks = []
  for (const id of ids.tasks) tasks.push((await a.api.get(`/api/tasks/${id}`)).body)
  const projects = []
  for (const id of ids.projects) projects.push((await a.api.get(`/api/projects/${id}`)).body)
  const list = (await a.api.get("/api/tasks")).body
  const trash = (await a.api.get("/api/trash")).body
  const tokens = (await a.api.get("/api/tokens")).body
  const prefs = (await a.api.get("/api/user/preferences")).body
  return { tasks, projects, list, trash, tokens, prefs }
}

describe("isolation between users", () => {
  let service: TestService
  let alice: TestUser
  let bob: TestUser
  let project: any
  let openTask: any
  let trashedTask: any
  let inboxTask: any
  let aliceToken: any
  let ids: { tasks: Array<number>; projects: Array<number> }

  beforeAll(async () => {
    service = await startService()
    alice = await service.user("alice")
    bob = await service.user("bob")
    project = (await alice.api.post("/api/projects", { name: "Private plans", color: "navy" })).body.data
    openTask = (await alice.api.post("/api/tasks", {
      title: "Secret errand",
      project_id: project.id,
      due_at: "2020-01-01T09:00:00.000Z",
      priority: 2,
      labels: ["secret"],
      notes: "needle-in-notes"
    })).body.data
    inboxTask = (await alice.api.post("/api/tasks", { title: "Inbox secret", priority: 1, rrule: "FREQ=DAILY", due_at: "2030-01-01T09:00:00.000Z" }))
      .body.data
    trashedTask = (await alice.api.post("/api/tasks", { title: "Trashed secret", project_id: project.id, priority: 1 })).body.data
    expect((await alice.api.delete(`/api/tasks/${trashedTask.id}`)).status).toBe(200)
    aliceToken = (await alice.api.post("/api/tokens", { name: "second" })).body.data
    expect(openTask.id).toEqual(expect.any(Number))
    expect(inboxTask.id).toEqual(expect.any(Number))
    ids = { tasks: [openTask.id, inboxTask.id, trashedTask.id], projects: [project.id] }
    // Bob has data of his own, so his lists are not trivially empty.
    await bob.api.post("/api/tasks", { title: "Bob's errand", priority: 1, due_at: "2020-01-02T09:00:00.000Z", labels: ["secret"] })
  })
  afterAll(async () => {
    await service?.stop()
  })

  it("B gets 404 on every verb of A's private tasks, and A's data is unchanged", async () => {
    const before = await snapshot(alice, ids)
    for (const task of [openTask, inboxTask, trashedTask]) {
      const calls: Array<[string, string, unknown?]> = [
        ["GET", `/api/tasks/${task.id}`],
        ["PATCH", `/api/tasks/${task.id}`, { title: "Hijacked" }],
        ["PATCH", `/api/tasks/${task.id}`, { project_id: project.id }],
        ["DELETE", `/api/tasks/${task.id}`],
        ["POST", `/api/tasks/${task.id}/restore`],
        ["POST", `/api/tasks/${task.id}/reprocess`]
      ]
      for (const [method, path, body] of calls) {
        const res = await bob.api.request(method, path, body)
        expect(res.status, `${method} ${path}`).toBe(404)
        expect(res.body).toEqual(NOT_FOUND)
      }
    }
    expect(await snapshot(alice, ids)).toEqual(before)
    expect((await alice.api.get(`/api/tasks/${openTask.id}`)).body.data).toMatchObject({
      title: "Secret errand",
      project_id: project.id,
      deleted_at: null
    })
    expect((await alice.api.get(`/api/tasks/${trashedTask.id}`)).body.data.deleted_at).not.toBeNull()
  })

  it("a private task's 404 is the same as for a task that does not exist", async () => {
    const missing = await bob.api.get("/api/tasks/999999")
    const hidden = await bob.api.get(`/api/tasks/${openTask.id}`)
    expect(hidden.status).toBe(missing.status)
    expect(hidden.body).toEqual(missing.body)
  })

  it("B gets 404 on every verb of A's private project, and A's data is unchanged", async () => {
    const before = await snapshot(alice, ids)
    const calls: Array<[string, string, unknown?]> = [
      ["GET", `/api/projects/${project.id}`],
      ["PATCH", `/api/projects/${project.id}`, { name: "Mine now" }],
      ["PATCH", `/api/projects/${project.id}`, { shared: true }],
      ["DELETE", `/api/projects/${project.id}`],
      ["PATCH", "/api/projects/reorder", { project_ids: [project.id] }]
    ]
    for (const [method, path, body] of calls) {
      const res = await bob.api.request(method, path, body)
      expect(res.status, `${method} ${path}`).toBe(404)
      expect(res.body).toEqual(NOT_FOUND)
    }
    const missing = await bob.api.get("/api/projects/999999")
    expect((await bob.api.get(`/api/projects/${project.id}`)).body).toEqual(missing.body)
    expect(await snapshot(alice, ids)).toEqual(before)
  })

  it("B cannot file tasks in A's private project, and gets the same answer as for no project at all", async () => {
    const into = await bob.api.post("/api/tasks", { title: "Sneak in", project_id: project.id, priority: 1 })
    const nowhere = await bob.api.post("/api/tasks", { title: "Sneak in", project_id: 999_999, priority: 1 })
    expect(into.status).toBe(nowhere.status)
    expect(into.body).toEqual(nowhere.body)
    expect([400, 404]).toContain(into.status)

    const own = (await bob.api.post("/api/tasks", { title: "Mine", priority: 1 })).body.data
    const move = await bob.api.patch(`/api/tasks/${own.id}`, { project_id: project.id })
    expect([400, 404]).toContain(move.status)
    expect((await bob.api.get(`/api/tasks/${own.id}`)).body.data.project_id).toBe(own.project_id)
    expect((await alice.api.get(`/api/projects/${project.id}`)).body.data.active_count).toBe(1)
  })

  it("B gets 404 deleting A's token, and the token keeps working", async () => {
    for (const id of [aliceToken.id]) {
      const res = await bob.api.delete(`/api/tokens/${id}`)
      expect(res.status).toBe(404)
      expect(res.body).toEqual(NOT_FOUND)
    }
    const me = await service.client({ authorization: `Bearer ${aliceToken.token}` }).get("/api/auth/me")
    expect(me.status).toBe(200)
    expect(me.body.data.id).toBe(alice.id)
    const listed = (await alice.api.get("/api/tokens")).body.data.tokens.map((t: any) => t.id)
    expect(listed).toContain(aliceToken.id)
    expect((await bob.api.get("/api/tokens")).text).not.toContain(aliceToken.token_preview)
  })

  it("B's task lists never show A's private tasks, whatever the filters", async () => {
    const aliceIds = new Set(ids.tasks)
    const queries = [
      "",
      "?limit=1000",
      "?done=true",
      "?trashed=true",
      "?archived=true",
      "?overdue=true",
      "?overdue=false",
      "?kind=task",
      "?recurring=true",
      "?one_off=true",
      "?label=secret",
      "?search=secret",
      "?search=needle",
      `?project_id=${project.id}`,
      `?project=${project.id}`
    ]
    for (const query of queries) {
      const res = await bob.api.get(`/api/tasks${query}`)
      expect(res.status, query).toBe(200)
      const listed = res.body.data.tasks as Array<any>
      expect(listed.filter((t) => aliceIds.has(t.id)), query).toEqual([])
      expect(listed.every((t) => t.user_id === bob.id), query).toBe(true)
      expect(res.text).not.toContain("Secret errand")
    }
    // Bob does see his own.
    const own = await bob.api.get("/api/tasks?label=secret")
    expect(own.body.data.tasks.map((t: any) => t.title)).toEqual(["Bob's errand"])
    const trash = await bob.api.get("/api/trash")
    expect(trash.body.data).toEqual({ tasks: [], count: 0 })
    const counts = await bob.api.get("/api/tasks/counts")
    expect(counts.body.data.overdue).toBe(1)
    const projects = await bob.api.get("/api/projects")
    expect(projects.body.data.projects.map((p: any) => p.id)).not.toContain(project.id)
    expect(projects.text).not.toContain("Private plans")
  })

  it("A still sees all of it", async () => {
    const list = await alice.api.get("/api/tasks")
    expect(list.body.data.tasks.map((t: any) => t.id).sort()).toEqual([openTask.id, inboxTask.id].sort())
    const trash = await alice.api.get("/api/trash")
    expect(trash.body.data.tasks.map((t: any) => t.id)).toEqual([trashedTask.id])
    const projects = await alice.api.get("/api/projects")
    expect(projects.body.data.projects.map((p: any) => p.id)).toContain(project.id)
  })
})
