import { expect } from "vitest"
import { Task, type TaskCreate, type TaskListQuery } from "../../src/tasks/Task.js"
import { type ApiClient, DataOf, decode } from "./api-client.js"
import type { Client } from "./service.js"

/** Wire timestamps: ISO 8601 in UTC with milliseconds and `Z`, as the `Timestamp` schema documents. */
export const ISO_MS_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/**
 * Every field of a Task on the wire, in order: the `Task` schema's (spec §2.1 plus
 * is_reminder, is_tracked, snooze_count, is_snoozed and enrichment_status).
 */
export const TASK_FIELDS: ReadonlyArray<string> = Object.keys(Task.fields)

/** A timestamp taken from the service clock: well-formed and within `withinMs` after `start`. */
export const expectServiceTime = (value: unknown, start: Date, withinMs = 10 * 60_000) => {
  expect(value).toMatch(ISO_MS_Z)
  const at = Date.parse(value as string)
  expect(at).toBeGreaterThanOrEqual(start.getTime())
  expect(at).toBeLessThan(start.getTime() + withinMs)
}

/**
 * Creates a task from a raw JSON body (timestamps as the client writes them) and returns its
 * wire object, read with the `Task` schema; fails the test on anything but 201.
 */
export const createTask = async (api: Client, body: Record<string, unknown>): Promise<Task> => {
  const res = await api.post("/api/tasks", body)
  if (res.status !== 201) throw new Error(`POST /api/tasks ${JSON.stringify(body)} -> ${res.status} ${res.text}`)
  return decode(DataOf(Task), res.body).data
}

/** Creates a task through the typed client (201 or the test fails) and returns it. */
export const newTask = async (client: ApiClient, payload: TaskCreate): Promise<Task> =>
  (await client.tasks.create({ payload })).data

/** Ids of a GET /api/tasks page through the typed client, in order. */
export const taskIds = async (client: ApiClient, urlParams: TaskListQuery = {}): Promise<Array<number>> => {
  const { data } = await client.tasks.list({ urlParams })
  expect(data.count).toBe(data.tasks.length)
  return data.tasks.map((t) => t.id)
}

/** The caller's Inbox project id. */
export const inboxOf = async (api: Client): Promise<number> => {
  const res = await api.get("/api/projects")
  const inbox = (res.body.data.projects as Array<{ id: number; is_inbox: boolean; name: string }>).find((p) => p.is_inbox)
  if (inbox === undefined) throw new Error("no Inbox")
  expect(inbox.name).toBe("Inbox")
  return inbox.id
}

/** Ids of a GET /api/tasks page, in order. */
export const listIds = async (api: Client, queryString = ""): Promise<Array<number>> => {
  const res = await api.get(`/api/tasks${queryString === "" ? "" : `?${queryString}`}`)
  if (res.status !== 200) throw new Error(`GET /api/tasks?${queryString} -> ${res.status} ${res.text}`)
  const tasks = res.body.data.tasks as Array<{ id: number }>
  expect(res.body.data.count).toBe(tasks.length)
  return tasks.map((t) => t.id)
}
