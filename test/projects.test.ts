import { Option, Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ProjectId, TaskId } from "../src/kernel/Ids.js"
import { Project, type ProjectCreate } from "../src/projects/Project.js"
import { Task } from "../src/tasks/Task.js"
import { DataOf, decode, errorOf } from "./support/api-client.js"
import { startService, type TestService, type TestUser } from "./support/service.js"

type Project = typeof Project.Type

const NOW = new Date("2030-03-10T12:00:00.000Z")
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const hoursFromNow = (h: number) => new Date(NOW.getTime() + h * 3_600_000).toISOString()

const PROJECT_FIELDS = [
  "active_count",
  "color",
  "created_at",
  "description",
  "id",
  "name",
  "overdue_count",
  "owner_id",
  "shared",
  "sort_order"
]

describe("projects", () => {
  let service: TestService
  let alice: TestUser
  let bob: TestUser
  let aliceInbox: Project
  let bobInbox: Project

  const projectsOf = async (user: TestUser) => (await user.client.projects.list()).data.projects
  const projectPath = (id: number) => ({ path: { id: ProjectId.make(id) } })
  const taskPath = (id: number) => ({ path: { id: TaskId.make(id) } })
  const readProject = async (user: TestUser, id: number) => (await user.client.projects.get(projectPath(id))).data
  const readTask = async (user: TestUser, id: number) => (await user.client.tasks.get(taskPath(id))).data
  const inboxOf = async (user: TestUser) => {
    const inbox = (await projectsOf(user)).find((p) => p.name === "Inbox")
    if (inbox === undefined) throw new Error(`${user.username} has no Inbox`)
    return inbox
  }

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
    alice = await service.user("alice")
    bob = await service.user("bob")
    aliceInbox = await inboxOf(alice)
    bobInbox = await inboxOf(bob)
  })
  afterAll(async () => {
    await service?.stop()
  })

  /** Through the typed client: a status other than 201 fails the test. */
  const createProject = async (user: TestUser, payload: ProjectCreate) =>
    (await user.client.projects.create({ payload })).data

  /** A raw body (timestamps as strings), read with the Task schema. */
  const createTask = async (user: TestUser, body: Record<string, unknown>) => {
    const res = await user.raw.post("/api/tasks", body)
    expect(res.status, res.text).toBe(201)
    return decode(DataOf(Task), res.body).data
  }

  it("every user starts with an Inbox of their own", () => {
    expect(aliceInbox).toMatchObject({ name: "Inbox", owner_id: alice.id, shared: false, active_count: 0, overdue_count: 0 })
    expect(bobInbox).toMatchObject({ name: "Inbox", owner_id: bob.id, shared: false })
    expect(aliceInbox.id).not.toBe(bobInbox.id)
  })

  it("POST /api/projects answers 201 with every project field", async () => {
    const res = await alice.raw.post("/api/projects", {
      name: "Garden",
      color: "#22aa44",
      description: "Outdoor jobs",
      sort_order: 40
    })
    expect(res.status).toBe(201)
    const wire = decode(DataOf(Schema.Record({ key: Schema.String, value: Schema.Unknown })), res.body).data
    for (const field of PROJECT_FIELDS) expect(wire, field).toHaveProperty(field)
    const p = decode(DataOf(Project), res.body).data
    expect(p).toMatchObject({
      id: expect.any(Number),
      name: "Garden",
      owner_id: alice.id,
      shared: false,
      sort_order: 40,
      color: "#22aa44",
      description: "Outdoor jobs",
      active_count: 0,
      overdue_count: 0
    })
    expect(p.created_at).toMatch(ISO_MS)
    expect(Math.abs(Date.parse(p.created_at) - NOW.getTime())).toBeLessThan(120_000)

    const read = await alice.raw.get(`/api/projects/${p.id}`)
    expect(read.status).toBe(200)
    expect(read.body).toEqual({ data: wire })
  })

  it("defaults: not shared, empty color and description, sorted after the user's others", async () => {
    const p = await createProject(alice, { name: "Defaults" })
    expect(p).toMatchObject({ shared: false, color: "", description: "", active_count: 0, overdue_count: 0 })
    expect(p.sort_order).toBe(41)
  })

  it("validates the body", async () => {
    for (const body of [
      {},
      { name: "" },
      { name: "   " },
      { name: 7 },
      { name: "x".repeat(201) },
      { name: "ok", shared: "yes" },
      { name: "ok", sort_order: 1.5 },
      { name: "ok", color: 5 }
    ]) {
      const res = await alice.raw.post("/api/projects", body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(errorOf(res).code).toBe("VALIDATION_ERROR")
    }
    const names = (await projectsOf(alice)).map((p) => p.name)
    expect(names).not.toContain("ok")
  })

  it("active_count and overdue_count follow the overdue definition", async () => {
    const p = await createProject(alice, { name: "Counting" })
    await createTask(alice, { title: "Past due", project_id: p.id, due_at: hoursFromNow(-5), priority: 1 })
    await createTask(alice, { title: "Past due too", project_id: p.id, due_at: hoursFromNow(-48), priority: 2 })
    await createTask(alice, { title: "Future", project_id: p.id, due_at: hoursFromNow(5), priority: 1 })
    await createTask(alice, { title: "Undated", project_id: p.id, priority: 1 })
    await createTask(alice, { title: "Past reminder", project_id: p.id, due_at: hoursFromNow(-3), is_reminder: true })
    await createTask(alice, { title: "Quota", project_id: p.id, progress_target: 3, rrule: "FREQ=WEEKLY" })
    await createTask(alice, { title: "Tracked", project_id: p.id, progress_target: 1, is_tracked: true, rrule: "FREQ=DAILY" })
    const trashed = await createTask(alice, { title: "Trashed", project_id: p.id, due_at: hoursFromNow(-2), priority: 1 })
    await alice.client.tasks.delete(taskPath(trashed.id))

    const res = await readProject(alice, p.id)
    // Open: the two past, the future, the undated, the reminder and the two quotas.
    expect(res.active_count).toBe(7)
    expect(res.overdue_count).toBe(2)

    const listed = (await projectsOf(alice)).find((x) => x.id === p.id)
    expect(listed).toMatchObject({ active_count: 7, overdue_count: 2 })

    // The same definition as the task list's overdue filter.
    const overdue = await alice.client.tasks.list({ urlParams: { overdue: true, project_id: p.id } })
    expect(overdue.data.tasks.map((t) => t.title).sort()).toEqual(["Past due", "Past due too"])
  })

  it("GET /api/projects lists own and shared projects by sort_order then name", async () => {
    const carol = await service.user("carol")
    await createProject(carol, { name: "Zeta", sort_order: 5 })
    await createProject(carol, { name: "alpha", sort_order: 5 })
    await createProject(carol, { name: "Beta", sort_order: 5 })
    await createProject(carol, { name: "First", sort_order: -1 })
    const dave = await service.user("dave")
    const shared = await createProject(dave, { name: "Team", shared: true, sort_order: 3 })
    await createProject(dave, { name: "Dave private", sort_order: 4 })

    const res = (await carol.client.projects.list()).data
    const projects = res.projects
    expect(res.count).toBe(projects.length)
    // Only own projects and shared ones.
    expect(projects.every((p) => p.owner_id === carol.id || p.shared)).toBe(true)
    expect(projects.map((p) => p.name)).not.toContain("Dave private")
    // Carol's own and Dave's shared one, in sort_order then name (case-insensitive) order.
    const mine = projects.filter((p) => p.owner_id === carol.id || p.id === shared.id).map((p) => p.name)
    expect(mine).toEqual(["First", "Inbox", "Team", "alpha", "Beta", "Zeta"])
    // The whole list is in that order, shared projects of others included.
    const key = (p: Project) => [p.sort_order, p.name.toLowerCase()] as const
    for (let i = 1; i < projects.length; i++) {
      const [ao, an] = key(projects[i - 1]!)
      const [bo, bn] = key(projects[i]!)
      expect(ao < bo || (ao === bo && an <= bn), `${projects[i - 1]!.name} before ${projects[i]!.name}`).toBe(true)
    }
  })

  it("PATCH /api/projects/{id} updates the fields sent and keeps the rest", async () => {
    const p = await createProject(alice, { name: "Errands", color: "red", description: "town" })
    const res = await alice.client.projects.update({ ...projectPath(p.id), payload: { name: "  Chores  ", color: "blue" } })
    expect(res.data).toEqual({ ...p, name: "Chores", color: "blue" })
    const again = await alice.client.projects.update({ ...projectPath(p.id), payload: { shared: true, sort_order: 7, description: "" } })
    expect(again.data).toEqual({ ...p, name: "Chores", color: "blue", shared: true, sort_order: 7, description: "" })
    expect(await readProject(alice, p.id)).toEqual(again.data)

    const bad = await alice.raw.patch(`/api/projects/${p.id}`, { name: "" })
    expect(bad.status).toBe(400)
    expect((await readProject(alice, p.id)).name).toBe("Chores")
  })

  it("the Inbox cannot be renamed nor deleted", async () => {
    const rename = await alice.raw.patch(`/api/projects/${aliceInbox.id}`, { name: "Incoming" })
    expect(rename.status).toBe(400)
    expect(errorOf(rename).code).toBe("VALIDATION_ERROR")
    const del = await alice.raw.delete(`/api/projects/${aliceInbox.id}`)
    expect(del.status).toBe(400)
    expect(errorOf(del).code).toBe("VALIDATION_ERROR")
    expect((await readProject(alice, aliceInbox.id)).name).toBe("Inbox")

    // Other fields of the Inbox can change.
    const color = await alice.client.projects.update({ ...projectPath(aliceInbox.id), payload: { color: "grey" } })
    expect(color.data).toMatchObject({ name: "Inbox", color: "grey" })
  })

  it("unknown and malformed ids", async () => {
    expect((await alice.raw.get("/api/projects/999999")).status).toBe(404)
    expect((await alice.raw.patch("/api/projects/999999", { name: "x" })).status).toBe(404)
    expect((await alice.raw.delete("/api/projects/999999")).status).toBe(404)
    for (const bad of ["abc", "0", "1.5", "-3", "4294967296"]) {
      const res = await alice.raw.get(`/api/projects/${bad}`)
      expect(res.status, bad).toBe(400)
      expect(errorOf(res).code).toBe("VALIDATION_ERROR")
    }
  })

  it("DELETE moves each task to its owner's Inbox", async () => {
    const p = await createProject(alice, { name: "Doomed", shared: true })
    const a1 = await createTask(alice, { title: "Alice one", project_id: p.id, priority: 1 })
    const a2 = await createTask(alice, { title: "Alice two", project_id: p.id, due_at: hoursFromNow(-1), priority: 1 })
    const b1 = await createTask(bob, { title: "Bob's in shared", project_id: p.id, priority: 1 })
    const keep = await createTask(alice, { title: "Elsewhere", priority: 1 })

    const res = await alice.raw.delete(`/api/projects/${p.id}`)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ data: { deleted: true, tasks_moved_to_inbox: 3 } })

    expect((await alice.raw.get(`/api/projects/${p.id}`)).status).toBe(404)
    expect((await readTask(alice, a1.id)).project_id).toBe(aliceInbox.id)
    expect((await readTask(alice, a2.id)).project_id).toBe(aliceInbox.id)
    expect((await readTask(bob, b1.id)).project_id).toBe(bobInbox.id)
    expect((await readTask(alice, keep.id)).project_id).toBe(aliceInbox.id)
    // Moved tasks are otherwise untouched.
    const moved = await readTask(alice, a2.id)
    expect(moved).toMatchObject({ title: "Alice two", due_at: a2.due_at, done: false, deleted_at: null })
  })

  it("DELETE of an empty project moves nothing", async () => {
    const p = await createProject(alice, { name: "Empty" })
    const res = await alice.raw.delete(`/api/projects/${p.id}`)
    expect(res.body).toEqual({ data: { deleted: true, tasks_moved_to_inbox: 0 } })
    expect((await alice.raw.delete(`/api/projects/${p.id}`)).status).toBe(404)
  })

  it("PATCH /api/projects/reorder sets the order the list shows", async () => {
    const erin = await service.user("erin")
    const inbox = await inboxOf(erin)
    expect(inbox.owner_id).toBe(erin.id)
    const x = await createProject(erin, { name: "X" })
    const y = await createProject(erin, { name: "Y" })
    const z = await createProject(erin, { name: "Z" })
    const own = async () => (await projectsOf(erin)).filter((p) => p.owner_id === erin.id)

    expect((await own()).map((p) => p.name)).toEqual(["Inbox", "X", "Y", "Z"])

    const res = await erin.raw.patch("/api/projects/reorder", { project_ids: [z.id, inbox.id, y.id, x.id] })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ data: { reordered: 4 } })
    const after = await own()
    expect(after.map((p) => p.name)).toEqual(["Z", "Inbox", "Y", "X"])
    expect(after.map((p) => p.sort_order)).toEqual([0, 1, 2, 3])

    const partial = await erin.raw.patch("/api/projects/reorder", { project_ids: [x.id, z.id] })
    expect(partial.body).toEqual({ data: { reordered: 2 } })
    expect((await readProject(erin, x.id)).sort_order).toBe(0)
    expect((await readProject(erin, z.id)).sort_order).toBe(1)

    for (const body of [{ project_ids: [] }, { project_ids: [x.id, x.id] }, { project_ids: "1,2" }, {}]) {
      const bad = await erin.raw.patch("/api/projects/reorder", body)
      expect(bad.status, JSON.stringify(body)).toBe(400)
    }
    const missing = await erin.raw.patch("/api/projects/reorder", { project_ids: [y.id, 999999] })
    expect(missing.status).toBe(404)
    // A refused reorder changes nothing.
    expect((await readProject(erin, y.id)).sort_order).toBe(2)
  })

  describe("sharing", () => {
    let team: Project
    let secret: Project
    let teamTask: Task
    let secretTask: Task

    beforeAll(async () => {
      team = await createProject(alice, { name: "Household", shared: true })
      secret = await createProject(alice, { name: "Surprise party" })
      teamTask = await createTask(alice, { title: "Fix the gate", project_id: team.id, priority: 2 })
      secretTask = await createTask(alice, { title: "Buy the cake", project_id: secret.id, priority: 2 })
    })

    it("a shared project is visible to every user, in the list and by id", async () => {
      const list = await projectsOf(bob)
      const seen = list.find((p) => p.id === team.id)
      expect(seen).toMatchObject({ name: "Household", owner_id: alice.id, shared: true, active_count: 1 })
      expect(list.map((p) => p.id)).not.toContain(secret.id)
      expect(await readProject(bob, team.id)).toMatchObject({ id: team.id, owner_id: alice.id, shared: true })
    })

    it("tasks in a shared project can be read by others", async () => {
      expect(await readTask(bob, teamTask.id)).toMatchObject({ id: teamTask.id, title: "Fix the gate", user_id: alice.id, project_id: team.id })
      const listed = await bob.client.tasks.list({ urlParams: { project_id: team.id } })
      expect(listed.data.tasks.map((t) => t.id)).toContain(teamTask.id)
      // Others may file tasks there too.
      const bobs = await createTask(bob, { title: "Paint the gate", project_id: team.id, priority: 1 })
      expect(bobs.project_id).toBe(team.id)
      expect((await alice.raw.get(`/api/tasks/${bobs.id}`)).status).toBe(200)
      expect((await readProject(alice, team.id)).active_count).toBe(2)
    })

    it("editing or deleting a shared project one does not own is a 403", async () => {
      const patch = await bob.raw.patch(`/api/projects/${team.id}`, { name: "Bob's now" })
      expect(patch.status).toBe(403)
      expect(patch.body).toMatchObject({ code: "FORBIDDEN", details: {} })
      const del = await bob.raw.delete(`/api/projects/${team.id}`)
      expect(del.status).toBe(403)
      expect(errorOf(del).code).toBe("FORBIDDEN")
      const reorder = await bob.raw.patch("/api/projects/reorder", { project_ids: [bobInbox.id, team.id] })
      expect(reorder.status).toBe(403)
      const read = await readProject(alice, team.id)
      expect(read).toMatchObject({ name: "Household", shared: true, sort_order: team.sort_order })
      expect((await readProject(bob, bobInbox.id)).sort_order).toBe(bobInbox.sort_order)
    })

    it("another user's private project is a 404 everywhere, and its tasks too", async () => {
      const get = await bob.raw.get(`/api/projects/${secret.id}`)
      expect(get.status).toBe(404)
      expect(get.body).toMatchObject({ code: "NOT_FOUND", details: {} })
      expect((await bob.raw.patch(`/api/projects/${secret.id}`, { name: "Mine" })).status).toBe(404)
      expect((await bob.raw.delete(`/api/projects/${secret.id}`)).status).toBe(404)
      expect((await bob.raw.patch("/api/projects/reorder", { project_ids: [secret.id] })).status).toBe(404)
      expect((await bob.raw.get(`/api/tasks/${secretTask.id}`)).status).toBe(404)
      const after = await readProject(alice, secret.id)
      expect(after).toMatchObject({ name: "Surprise party", shared: false, sort_order: secret.sort_order, active_count: 1 })
    })

    it("a shared task moves only to a project its owner can see too: Bob's private project is a 400, nothing changes", async () => {
      const bobsPrivate = await createProject(bob, { name: "Bob's den" })
      const bobsShared = await createProject(bob, { name: "Bob's open shed", shared: true })
      const task = await createTask(alice, { title: "Oil the hinges", project_id: team.id })
      const entries = (await bob.client.undo.status()).data

      const res = await bob.raw.patch(`/api/tasks/${task.id}`, { project_id: bobsPrivate.id, priority: 3 })
      expect(res.status, res.text).toBe(400)
      expect(res.body).toEqual({
        error: "The task's owner cannot see this project: only their own projects and shared ones can hold their tasks",
        code: "VALIDATION_ERROR",
        details: {
          project_id: "The task's owner cannot see this project: only their own projects and shared ones can hold their tasks"
        }
      })
      expect(await readTask(alice, task.id)).toMatchObject({ project_id: team.id, priority: 0 })
      expect((await bob.client.undo.status()).data).toEqual(entries)
      // Bob's Inbox is just as private; Alice's private project stays unknown to Bob (as before).
      expect(errorOf(await bob.raw.patch(`/api/tasks/${task.id}`, { project_id: bobInbox.id })).details).toEqual({
        project_id: "The task's owner cannot see this project: only their own projects and shared ones can hold their tasks"
      })
      expect((await bob.raw.patch(`/api/tasks/${task.id}`, { project_id: secret.id })).body).toMatchObject({
        code: "VALIDATION_ERROR",
        details: { project_id: "Project not found" }
      })
      expect((await readTask(alice, task.id)).project_id).toBe(team.id)

      // A shared project both can see is fine, and so are the owners' own moves.
      await bob.client.tasks.update({ ...taskPath(task.id), payload: { project_id: ProjectId.make(bobsShared.id) } })
      expect((await readTask(alice, task.id)).project_id).toBe(bobsShared.id)
      await alice.client.tasks.update({ ...taskPath(task.id), payload: { project_id: ProjectId.make(secret.id) } })
      const bobs = await createTask(bob, { title: "Bob's own", project_id: team.id })
      await bob.client.tasks.update({ ...taskPath(bobs.id), payload: { project_id: ProjectId.make(bobsPrivate.id) } })
    })

    it("unsharing hides the project again", async () => {
      const p = await createProject(alice, { name: "Briefly shared", shared: true })
      expect((await bob.raw.get(`/api/projects/${p.id}`)).status).toBe(200)
      await alice.client.projects.update({ ...projectPath(p.id), payload: { shared: false } })
      expect((await bob.raw.get(`/api/projects/${p.id}`)).status).toBe(404)
    })
  })
})
