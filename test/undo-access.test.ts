import { Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Receiver, sleep, startReceiver } from "./support/receiver.js"
import { query, snapshot } from "./support/rows.js"
import { startService, type TestService, type TestUser } from "./support/service.js"
import { createTask, inboxOf } from "./support/tasks.js"
import { createWebhook, settled } from "./support/webhooks.js"

/**
 * Undo and redo judge access now, not when the action was recorded: a
 * step on a row the actor can no longer see, or one that would put a task in a project its
 * owner cannot see, is a 409 and nothing changes — no write, the entry stays where it was,
 * no webhook.
 */
const NOW = new Date("2026-03-10T09:00:00Z")

const lost = (direction: "undo" | "redo") => ({
  error: `Cannot ${direction}: it touches a task, project or slot you can no longer see`,
  code: "CONFLICT",
  details: {}
})

describe("undo and redo after access was lost", () => {
  let service: TestService
  let receiver: Receiver
  let counter = 0

  beforeAll(async () => {
    service = await startService({ serviceNow: Option.some(NOW) })
    receiver = await startReceiver()
  })
  afterAll(async () => {
    await service?.stop()
    await receiver?.close()
  })

  /** Alice's task in her shared project; Bob with a webhook for every task.updated. */
  const scene = async () => {
    const n = ++counter
    const alice = await service.user(`access-alice${n}`, "UTC")
    const bob = await service.user(`access-bob${n}`, "UTC")
    const project = (await alice.api.post("/api/projects", { name: "Household", shared: true })).body.data
    const task = await createTask(alice.api, { title: "Pay rent", project_id: project.id, notes: "by Friday" })
    const path = `/bob${n}`
    const hook = await createWebhook(bob.api, receiver.url(path), ["task.updated"])
    const deliveries = async () =>
      (await query<{ n: number }>(service, (sql) =>
        sql`SELECT count(*)::int AS n FROM webhook_deliveries WHERE webhook_id = ${hook.id}`))[0]!.n
    const received = () => receiver.received.filter((r) => r.path === path).length
    return { alice, bob, project, task, deliveries, received }
  }

  const status = async (user: TestUser) => (await user.api.get("/api/undo/status")).body.data
  const read = async (user: TestUser, id: number) => {
    const res = await user.api.get(`/api/tasks/${id}`)
    expect(res.status, res.text).toBe(200)
    return res.body.data
  }
  const unshare = async (owner: TestUser, projectId: number, shared = false) => {
    const res = await owner.api.patch(`/api/projects/${projectId}`, { shared })
    expect(res.status, res.text).toBe(200)
  }

  it("Bob's undo of his edit of Alice's task, after she made the project private: 409, nothing written, no webhook", async () => {
    const { alice, bob, deliveries, project, received, task } = await scene()
    expect((await bob.api.patch(`/api/tasks/${task.id}`, { priority: 3, notes: "paid half" })).status).toBe(200)
    await settled(service, bob.id)
    expect(await deliveries()).toBe(1)
    await unshare(alice, project.id)

    const before = await snapshot(service)
    const statusBefore = await status(bob)
    const res = await bob.api.post("/api/undo")
    expect(res.status, res.text).toBe(409)
    expect(res.body).toEqual(lost("undo"))
    expect(await snapshot(service)).toEqual(before)
    expect(await status(bob)).toEqual(statusBefore)
    expect(statusBefore).toMatchObject({ undoable_count: 1, redoable_count: 0 })
    expect(await read(alice, task.id)).toMatchObject({ priority: 3, notes: "paid half", project_id: project.id })
    await sleep(300)
    expect(await deliveries()).toBe(1)
    expect(received()).toBe(1)

    // The entry stayed where it was: once the project is shared again, the same undo goes through.
    await unshare(alice, project.id, true)
    expect((await bob.api.post("/api/undo")).status).toBe(200)
    expect(await read(alice, task.id)).toMatchObject({ priority: 0, notes: "by Friday" })
  })

  it("Bob's redo after Alice made the project private: 409, nothing written, no webhook", async () => {
    const { alice, bob, deliveries, project, received, task } = await scene()
    expect((await bob.api.patch(`/api/tasks/${task.id}`, { priority: 3 })).status).toBe(200)
    expect((await bob.api.post("/api/undo")).status).toBe(200)
    await settled(service, bob.id)
    expect(await deliveries()).toBe(2)
    await unshare(alice, project.id)

    const before = await snapshot(service)
    const res = await bob.api.post("/api/redo")
    expect(res.status, res.text).toBe(409)
    expect(res.body).toEqual(lost("redo"))
    expect(await snapshot(service)).toEqual(before)
    expect(await status(bob)).toMatchObject({ undoable_count: 0, redoable_count: 1 })
    expect(await read(alice, task.id)).toMatchObject({ priority: 0, project_id: project.id })
    await sleep(300)
    expect(await deliveries()).toBe(2)
    expect(received()).toBe(2)
  })

  it("an undo that would move Carol's task back into a project Alice has since made private: 409, the task stays", async () => {
    const { alice, bob, deliveries, project } = await scene()
    const carol = await service.user(`access-carol${counter}`, "UTC")
    const other = (await alice.api.post("/api/projects", { name: "Garden", shared: true })).body.data
    const carols = await createTask(carol.api, { title: "Borrow the ladder", project_id: other.id })
    expect((await bob.api.patch(`/api/tasks/${carols.id}`, { project_id: project.id })).status).toBe(200)
    await unshare(alice, other.id)
    await settled(service, bob.id)
    expect(await deliveries()).toBe(1)

    const before = await snapshot(service)
    const res = await bob.api.post("/api/undo")
    expect(res.status, res.text).toBe(409)
    expect(res.body).toEqual({
      error: "Cannot undo: it would put a task in a project its owner cannot see",
      code: "CONFLICT",
      details: {}
    })
    expect(await snapshot(service)).toEqual(before)
    expect(await read(carol, carols.id)).toMatchObject({ project_id: project.id })
    await sleep(300)
    expect(await deliveries()).toBe(1)
  })

  it("undoing the deletion of a shared project whose other users' tasks went to their private Inboxes is refused", async () => {
    const { alice, bob, project } = await scene()
    const bobsTask = await createTask(bob.api, { title: "Bring chairs", project_id: project.id })
    const deleted = await alice.api.delete(`/api/projects/${project.id}`)
    expect(deleted.body.data).toEqual({ deleted: true, tasks_moved_to_inbox: 2 })
    const bobsInbox = await inboxOf(bob.api)

    const before = await snapshot(service)
    const res = await alice.api.post("/api/undo")
    expect(res.status, res.text).toBe(409)
    expect(res.body).toEqual(lost("undo"))
    expect(await snapshot(service)).toEqual(before)
    expect(await read(bob, bobsTask.id)).toMatchObject({ project_id: bobsInbox })
    expect((await alice.api.get(`/api/projects/${project.id}`)).status).toBe(404)
  })

  it("Bob's own task stays undoable after he loses the project it sits in: his own row, its project unchanged", async () => {
    const { alice, bob, project } = await scene()
    const own = await createTask(bob.api, { title: "Water plants", project_id: project.id })
    expect((await bob.api.patch(`/api/tasks/${own.id}`, { priority: 2 })).status).toBe(200)
    await unshare(alice, project.id)
    expect((await bob.api.post("/api/undo")).status).toBe(200)
    expect(await read(bob, own.id)).toMatchObject({ priority: 0, project_id: project.id })
  })
})
