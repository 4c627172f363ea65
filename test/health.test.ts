import * as SqlClient from "@effect/sql/SqlClient"
import { Effect, Option, Redacted } from "effect"
import * as Net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase, serverUrl, type TestDatabase } from "./support/database.js"
import { startService, type TestService } from "./support/service.js"

/**
 * A TCP relay on 127.0.0.1 in front of the PostgreSQL server. `close()` stops listening
 * and cuts every relayed connection, so the database really is gone for the service;
 * `open()` listens again on the same port.
 */
class TcpProxy {
  private server: Net.Server | undefined
  private readonly sockets = new Set<Net.Socket>()
  port = 0

  constructor(private readonly targetHost: string, private readonly targetPort: number) {}

  open(): Promise<void> {
    const server = Net.createServer((client) => {
      const upstream = Net.connect(this.targetPort, this.targetHost)
      for (const socket of [client, upstream]) {
        this.sockets.add(socket)
        socket.on("close", () => this.sockets.delete(socket))
        socket.on("error", () => {
          client.destroy()
          upstream.destroy()
        })
      }
      client.pipe(upstream)
      upstream.pipe(client)
    })
    this.server = server
    return new Promise((resolve, reject) => {
      server.once("error", reject)
      server.listen(this.port, "127.0.0.1", () => {
        this.port = (server.address() as Net.AddressInfo).port
        resolve()
      })
    })
  }

  close(): Promise<void> {
    const server = this.server
    this.server = undefined
    for (const socket of this.sockets) socket.destroy()
    this.sockets.clear()
    return new Promise((resolve) => (server === undefined ? resolve() : server.close(() => resolve())))
  }
}

const ISSUE = { status: "error", message: expect.any(String) }

describe("health check", () => {
  const base = serverUrl()
  let service: TestService
  let proxy: TcpProxy | undefined
  let database: TestDatabase | undefined

  beforeAll(async () => {
    if (base === undefined) {
      service = await startService()
      return
    }
    // Behind the relay: the service's only way to its database is through the proxy.
    database = await freshDatabase()
    const target = new URL(database.url!)
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432))
    await proxy.open()
    const proxied = new URL(database.url!)
    proxied.hostname = "127.0.0.1"
    proxied.port = String(proxy.port)
    service = await startService({ databaseUrl: Option.some(Redacted.make(proxied.toString())) }, database)
  })
  afterAll(async () => {
    await proxy?.open().catch(() => undefined)
    await service?.stop()
    await proxy?.close()
    await database?.drop()
  })

  const health = async () => {
    const started = Date.now()
    const res = await service.anonymous.get("/api/health")
    return { ...res, ms: Date.now() - started }
  }

  const waitFor = async (status: number, withinMs: number) => {
    const deadline = Date.now() + withinMs
    let last = await health()
    while (last.status !== status && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100))
      last = await health()
    }
    return last
  }

  it("answers 200 {status: ok} while the database answers", async () => {
    const res = await health()
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ status: "ok" })
    expect(res.headers.get("content-type")).toContain("application/json")
  })

  it.skipIf(base === undefined)("PostgreSQL: answers 503 quickly once the server is unreachable, 200 once it is back", async () => {
    expect((await health()).status).toBe(200)
    // A request that goes through the pool first, so live connections exist to be cut.
    const tasks = await (await service.user("henry")).api.get("/api/tasks")
    expect(tasks.status).toBe(200)

    const cutAt = Date.now()
    await proxy!.close()
    const down = await health()
    expect(down.status).toBe(503)
    expect(down.body).toEqual(ISSUE)
    expect(Object.keys(down.body).sort()).toEqual(["message", "status"])
    expect(down.ms).toBeLessThan(2_000)
    expect(Date.now() - cutAt).toBeLessThan(2_500)
    // Still down: every check answers, none hangs.
    for (let i = 0; i < 3; i++) {
      const again = await health()
      expect(again.status).toBe(503)
      expect(again.ms).toBeLessThan(2_000)
    }

    await proxy!.open()
    const up = await waitFor(200, 10_000)
    expect(up.status).toBe(200)
    expect(up.body).toEqual({ status: "ok" })
  })

  it.skipIf(base === undefined)("PostgreSQL: a server that accepts but never answers is a 503 within the timeout", async () => {
    // Listen on the proxy's port but relay nothing: connections open and then hang.
    await proxy!.close()
    const held: Array<Net.Socket> = []
    const blackhole = Net.createServer((socket) => {
      held.push(socket)
      socket.on("error", () => undefined)
    })
    await new Promise<void>((resolve) => blackhole.listen(proxy!.port, "127.0.0.1", () => resolve()))
    try {
      // The first check may meet a pooled connection that was just cut; later ones open
      // new connections into the void and must give up on their own.
      for (let i = 0; i < 3; i++) {
        const down = await health()
        expect(down.status).toBe(503)
        expect(down.body).toEqual(ISSUE)
        expect(down.ms).toBeLessThan(2_000)
      }
    } finally {
      for (const socket of held) socket.destroy()
      await new Promise<void>((resolve) => blackhole.close(() => resolve()))
    }
    await proxy!.open()
    const up = await waitFor(200, 15_000)
    expect(up.status).toBe(200)
    expect(up.body).toEqual({ status: "ok" })
  })

  it.skipIf(base !== undefined)("embedded: answers 503 while the single connection is held, 200 once it is free", async () => {
    expect((await health()).status).toBe(200)
    // A transaction holds the connection from its first statement (one that has sent none
    // has not started in the database and holds nothing).
    const holder = service.run(
      Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(Effect.zipRight(sql`SELECT 1`, Effect.sleep("3 seconds"))))
    )
    // Let the transaction take the connection first.
    await new Promise((r) => setTimeout(r, 200))

    const down = await health()
    expect(down.status).toBe(503)
    expect(down.body).toEqual(ISSUE)
    expect(down.ms).toBeLessThan(2_000)

    await holder
    const up = await health()
    expect(up.status).toBe(200)
    expect(up.body).toEqual({ status: "ok" })
  })
})
