import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option, Stream } from "effect"
import { csvRow } from "./Csv.js"
import { Task } from "../tasks/Task.js"
import { Project } from "../projects/Project.js"
import type { CurrentUserShape } from "../kernel/CurrentUser.js"
import { now as clockNow } from "../kernel/ServiceClock.js"
import type { UserId } from "../kernel/Ids.js"
import { exportPage } from "../lifecycle/CompletionsTable.js"
import { exportPage as projectsPage } from "../projects/ProjectsTable.js"
import { exportPage as tasksPage } from "../tasks/TaskListSql.js"

/** Rows are read in pages of this many, so an export never holds a whole table in memory. */
export const EXPORT_PAGE = 1000

const TASK_COLUMNS = Object.keys(Task.fields)
const PROJECT_COLUMNS = Object.keys(Project.fields)

const encoder = new TextEncoder()

type Table = "tasks" | "projects" | "completions"

/** GET /api/export: streamed JSON or CSV of the caller's own data (spec §4.5). */
export class Exporter extends Effect.Service<Exporter>()("steady/Exporter", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const page = (table: Table, userId: UserId, after: number, now: Date) => {
      switch (table) {
        case "tasks":
          return tasksPage(sql, userId, after, EXPORT_PAGE)
        case "projects":
          return projectsPage(sql, userId, after, EXPORT_PAGE, now)
        case "completions":
          return exportPage(sql, userId, after, EXPORT_PAGE)
      }
    }

    /** Every row of a table as JSON text, a page at a time (keyset paging by id). */
    const rows = (table: Table, userId: UserId, now: Date): Stream.Stream<string> =>
      Stream.paginateEffect(0, (after: number) =>
        page(table, userId, after, now).pipe(
          Effect.orDie,
          Effect.map((batch) => {
            const last = batch.at(-1)
            const next: Option.Option<number> = batch.length === EXPORT_PAGE && last !== undefined
              ? Option.some(last.id)
              : Option.none()
            return [batch.map((r) => r.json), next] as const
          })
        )
      ).pipe(Stream.flatMap((batch: ReadonlyArray<string>) => Stream.fromIterable(batch)))

    const jsonArray = (table: Table, userId: UserId, now: Date) =>
      Stream.concat(
        Stream.make("["),
        Stream.concat(rows(table, userId, now).pipe(Stream.zipWithIndex, Stream.map(([json, i]) => (i === 0 ? json : `,${json}`))), Stream.make("]"))
      )

    /** The export as a download: its bytes and the file name it is offered under (dated by the service clock). */
    const json = (user: CurrentUserShape) =>
      Effect.map(clockNow, (now) => ({
        filename: `steady-export-${now.toISOString().slice(0, 10)}.json`,
        body: Stream.flatten(
          Stream.make(
            Stream.make(`{"data":{"tasks":`),
            jsonArray("tasks", user.id, now),
            Stream.make(`,"projects":`),
            jsonArray("projects", user.id, now),
            Stream.make(`,"completions":`),
            jsonArray("completions", user.id, now),
            Stream.make(`,"exported_at":${JSON.stringify(now.toISOString())}}}`)
          )
        ).pipe(Stream.map((text) => encoder.encode(text)))
      }))

    const csv = (user: CurrentUserShape, type: "tasks" | "projects") =>
      Effect.map(clockNow, (now) => {
        const columns = type === "tasks" ? TASK_COLUMNS : PROJECT_COLUMNS
        return {
          filename: `steady-${type}-${now.toISOString().slice(0, 10)}.csv`,
          body: Stream.concat(
            Stream.make(csvRow(columns)),
            rows(type, user.id, now).pipe(Stream.map((text: string) => {
              const record = JSON.parse(text) as Record<string, unknown>
              return csvRow(columns.map((c) => record[c]))
            }))
          ).pipe(Stream.map((text) => encoder.encode(text)))
        }
      })

    return { json, csv } as const
  })
}) {}
