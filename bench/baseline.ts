/**
 * The benchmark's baseline: a bare `node:http` server over a `pg` Pool of the same size and
 * settings as the service's, running the very SQL the service runs for `GET /api/tasks?limit=…`
 * and `GET /api/tasks/{id}`, including the token lookup of `Credentials.verifyToken`.
 * The difference to the service is then the framework, not the database work.
 *
 * For the three writes (POST /api/tasks, PATCH /api/tasks/{id}, POST /api/tasks/{id}/done)
 * it is the floor a single-task write is measured against: the token lookup and one INSERT or UPDATE
 * answering with the task's wire JSON, in autocommit — no undo entry, no outbox, no
 * statistics, no change feed, no recurrence arithmetic. Its bodies are not the service's.
 *
 * Keep the SQL below a verbatim copy of what `taskPageJson` (src/tasks/TaskListSql.ts, default
 * filters), `taskJson` (src/tasks/TasksTable.ts) and `CredentialsTable`'s token lookup send, as
 * compiled by `@effect/sql-pg` (PostgreSQL's log with `log_min_duration_statement = 0` shows
 * them); bench/run.ts stops when the two reads' bodies differ.
 *
 * Run as a child process by bench/run.ts: `node --import tsx bench/baseline.ts`, with PORT,
 * HOST and DATABASE_URL in the environment.
 */
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import Pg from "pg"

const VERIFY_TOKEN_SQL = `
        SELECT t.id AS credential_id, t.token_hash AS digest, u.id, u.username, u.timezone
        FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.token_hash = $1`

const LIST_SQL = `
        WITH page AS (
          SELECT * FROM (
            (SELECT t.wire_text AS task, t.due_at, t.id FROM tasks t WHERE t.user_id = $1 AND (t.deleted_at IS NULL AND NOT t.done AND t.archived_at IS NULL)
             ORDER BY t.due_at, t.id LIMIT $2)
            UNION ALL (SELECT s.task, s.due_at, s.id FROM projects p CROSS JOIN LATERAL (
               SELECT t.wire_text AS task, t.due_at, t.id FROM tasks t
               WHERE t.project_id = p.id AND t.user_id <> $3 AND (t.deleted_at IS NULL AND NOT t.done AND t.archived_at IS NULL) AND num_nulls(t.project_id) = 0
               ORDER BY t.due_at, t.id LIMIT $4) s
             WHERE p.shared
             ORDER BY s.due_at, s.id LIMIT $5)
          ) merged ORDER BY due_at, id LIMIT $6 OFFSET $7
        )
        SELECT '{"data":{"tasks":' || '[' || COALESCE(string_agg(page.task, ',' ORDER BY page.due_at, page.id), '') || ']' || ',"count":' || count(*) || '}}' AS body FROM page`

const GET_SQL = `
        SELECT '{"data":' || t.wire_text || '}' AS body FROM tasks t
        WHERE t.id = $1 AND (t.user_id = $2 OR COALESCE((SELECT sp.shared FROM projects sp WHERE sp.id = t.project_id), false))`

/** The stored wire text in the service's compact envelope. */
const WIRE_RETURNING = `RETURNING '{"data":' || tasks.wire_text || '}' AS body`

const CREATE_SQL = `
        INSERT INTO tasks (user_id, project_id, title, original_title, labels, priority, notes, due_at, created_at, updated_at)
        VALUES ($1, (SELECT id FROM projects WHERE owner_id = $1 AND is_inbox), $2, $2, $3::jsonb, $4, $5, $6::timestamptz, now(), now())
        ${WIRE_RETURNING}`

const PATCH_SQL = `
        UPDATE tasks SET title = $3, priority = $4, updated_at = now() WHERE id = $1 AND user_id = $2
        ${WIRE_RETURNING}`

const DONE_SQL = `
        UPDATE tasks SET due_at = due_at + interval '1 day', completion_count = completion_count + 1,
          last_completed_at = now(), updated_at = now()
        WHERE id = $1 AND user_id = $2 AND NOT done
        ${WIRE_RETURNING}`

const readBody = (req: Http.IncomingMessage) =>
  new Promise<Record<string, unknown>>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      try {
        const text = Buffer.concat(chunks).toString("utf8")
        resolve(text === "" ? {} : JSON.parse(text))
      } catch (cause) {
        reject(cause)
      }
    })
    req.on("error", reject)
  })

const url = process.env.DATABASE_URL
if (url === undefined || url === "") throw new Error("DATABASE_URL is required")

// The service's pool settings (src/sql/Database.ts makePool).
const pool = new Pg.Pool({
  connectionString: url,
  max: 10,
  connectionTimeoutMillis: 5_000,
  idleTimeoutMillis: 30_000,
  statement_timeout: 30_000,
  options: "-c TimeZone=UTC",
  application_name: "steady-baseline"
})
pool.on("error", () => {})

const sha256 = (text: string) => Crypto.createHash("sha256").update(text, "utf8").digest("hex")
const SHA256_HEX = /^[0-9a-f]{64}$/
const sameDigest = (a: string, b: string) =>
  SHA256_HEX.test(a) && SHA256_HEX.test(b) && Crypto.timingSafeEqual(Buffer.from(a, "hex"), Buffer.from(b, "hex"))

const send = (res: Http.ServerResponse, status: number, body: string) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}

const error = (res: Http.ServerResponse, status: number, code: string, message: string) =>
  send(res, status, JSON.stringify({ error: message, code, details: {} }))

const authenticate = async (header: string | undefined): Promise<number | undefined> => {
  const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header)
  if (match === null) return undefined
  const digest = sha256(match[1]!)
  const { rows } = await pool.query<{ digest: string; id: number }>(VERIFY_TOKEN_SQL, [digest])
  const row = rows[0]
  return row !== undefined && sameDigest(row.digest, digest) ? row.id : undefined
}

const handle = async (req: Http.IncomingMessage, res: Http.ServerResponse) => {
  const target = new URL(req.url ?? "/", "http://localhost")
  if (req.method === "GET" && target.pathname === "/health") return send(res, 200, `{"status":"ok"}`)
  const userId = await authenticate(req.headers.authorization)
  if (userId === undefined) return error(res, 401, "UNAUTHORIZED", "Invalid API token")

  if (req.method === "GET" && target.pathname === "/api/tasks") {
    const limit = Number(target.searchParams.get("limit") ?? 200)
    const offset = Number(target.searchParams.get("offset") ?? 0)
    const window = limit + offset
    const { rows } = await pool.query<{ body: string }>(LIST_SQL, [userId, window, userId, window, window, limit, offset])
    return send(res, 200, rows[0]!.body)
  }
  if (req.method === "POST" && target.pathname === "/api/tasks") {
    const body = await readBody(req)
    const { rows } = await pool.query<{ body: string }>(CREATE_SQL, [
      userId,
      String(body.title),
      JSON.stringify(body.labels ?? []),
      Number(body.priority ?? 0),
      String(body.notes ?? ""),
      body.due_at ?? null
    ])
    return send(res, 201, rows[0]!.body)
  }
  const doneId = /^\/api\/tasks\/(\d{1,10})\/done$/.exec(target.pathname)
  if (req.method === "POST" && doneId !== null) {
    const { rows } = await pool.query<{ body: string }>(DONE_SQL, [Number(doneId[1]), userId])
    return rows[0] === undefined ? error(res, 404, "NOT_FOUND", "Task not found") : send(res, 200, rows[0].body)
  }
  const byId = /^\/api\/tasks\/(\d{1,10})$/.exec(target.pathname)
  if (req.method === "PATCH" && byId !== null) {
    const body = await readBody(req)
    const { rows } = await pool.query<{ body: string }>(PATCH_SQL, [Number(byId[1]), userId, String(body.title), Number(body.priority)])
    return rows[0] === undefined ? error(res, 404, "NOT_FOUND", "Task not found") : send(res, 200, rows[0].body)
  }
  if (req.method === "GET" && byId !== null) {
    const { rows } = await pool.query<{ body: string }>(GET_SQL, [Number(byId[1]), userId])
    return rows[0] === undefined ? error(res, 404, "NOT_FOUND", "Task not found") : send(res, 200, rows[0].body)
  }
  return error(res, 404, "NOT_FOUND", "No such endpoint")
}

const server = Http.createServer((req, res) => {
  handle(req, res).catch(() => {
    if (!res.headersSent) error(res, 500, "INTERNAL", "Internal error")
    else res.destroy()
  })
})
server.keepAliveTimeout = 5_000

server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? "127.0.0.1")

const stop = () => {
  server.close()
  server.closeAllConnections()
  void pool.end().finally(() => process.exit(0))
}
process.on("SIGTERM", stop)
process.on("SIGINT", stop)
