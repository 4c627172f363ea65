import * as Net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startService, type TestService } from "./support/service.js"

/**
 * Opens a connection, sends half a request and never the rest; resolves with how long the
 * server took to close it and what it wrote before closing.
 */
const slowHeaders = (baseUrl: string) =>
  new Promise<{ readonly seconds: number; readonly written: string }>((resolve, reject) => {
    const url = new URL(baseUrl)
    const started = performance.now()
    let written = ""
    const socket = Net.connect({ host: url.hostname, port: Number(url.port) }, () => {
      socket.write("GET /api/health HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
    })
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => (written += chunk))
    socket.on("close", () => resolve({ seconds: (performance.now() - started) / 1000, written }))
    socket.on("error", reject)
    // Bounded: a server that never closes fails the test instead of hanging it.
    setTimeout(() => socket.destroy(), 45_000).unref()
  })

describe("slow clients (a request's headers must arrive within 10 s)", () => {
  let service: TestService

  beforeAll(async () => {
    service = await startService()
  })

  afterAll(async () => {
    await service?.stop()
  })

  it("a connection whose headers never finish is answered 408 with the envelope and closed 10–12 s after it opened", async () => {
    const [first, second] = await Promise.all([slowHeaders(service.baseUrl), slowHeaders(service.baseUrl)])
    for (const { seconds, written } of [first!, second!]) {
      expect(seconds).toBeGreaterThanOrEqual(9.9)
      expect(seconds).toBeLessThan(12.5)
      expect(written).toMatch(/^HTTP\/1\.1 408 /)
      expect(written).toContain(`"code":"REQUEST_TIMEOUT"`)
    }
    // The service is unharmed.
    expect((await service.anonymous.get("/api/health")).body).toEqual({ status: "ok" })
  }, 60_000)
})
