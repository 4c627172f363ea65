import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Yaml from "yaml"
import { wantsJson } from "../src/system/SystemHttp.js"
import { startService, type TestService } from "./support/service.js"

/** `src` and `href` attributes of script, link and img tags, where a page would load from. */
const loadedFrom = (html: string) =>
  [...html.matchAll(/<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*["']?([^"'\s>]+)/gi)].map((m) => m[1]!)

describe("at the door: /, /docs and the document in either format", () => {
  let service: TestService

  beforeAll(async () => {
    service = await startService()
  })
  afterAll(async () => {
    await service.stop()
  })

  it("GET / is a small HTML page naming the service, linking the reference and health, without credentials", async () => {
    const res = await service.anonymous.get("/")
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toMatch(/^text\/html/)
    expect(res.text).toContain("<title>Steady</title>")
    expect(res.text).toContain(`href="/docs"`)
    expect(res.text).toContain(`href="/api/health"`)
    expect(res.text.length).toBeLessThan(4_000)
  })

  it("GET /docs is an interactive reference of the served document, with every script inline (no CDN)", async () => {
    const res = await service.anonymous.get("/docs")
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toMatch(/^text\/html/)
    // Nothing loaded from elsewhere; no script loaded at all, the bundle is in the page.
    expect(loadedFrom(res.text).filter((url) => /^(https?:)?\/\//i.test(url))).toEqual([])
    expect(/<script\b[^>]*\bsrc\s*=/i.test(res.text)).toBe(false)
    expect(res.text.includes(`id="api-reference"`)).toBe(true)
    expect(res.text.length).toBeGreaterThan(1_000_000)
    // The document it shows is the served one (not HttpApi's raw rendering).
    const embedded = /<script id="api-reference" type="application\/json">([\s\S]*?)<\/script>/.exec(res.text)
    expect(embedded).not.toBeNull()
    const shown = JSON.parse(embedded![1]!)
    const served = Yaml.parse((await service.anonymous.get("/api/openapi")).text)
    expect(shown).toEqual(served)
    expect(Object.keys(shown.paths)).toContain("/api/openapi")
    // The fonts would come from fonts.scalar.com otherwise.
    expect(res.text.includes(`"withDefaultFonts":false`)).toBe(true)
  })

  it("GET /api/openapi is JSON when Accept asks for JSON, YAML otherwise, with the same paths", async () => {
    const yaml = await service.anonymous.get("/api/openapi")
    expect(yaml.status).toBe(200)
    expect(yaml.headers.get("content-type")).toMatch(/^text\/yaml/)
    expect(yaml.headers.get("vary")).toMatch(/accept/i)
    const fromYaml = Yaml.parse(yaml.text)

    const json = await service.anonymous.request("GET", "/api/openapi", undefined, { accept: "application/json" })
    expect(json.status).toBe(200)
    expect(json.headers.get("content-type")).toMatch(/^application\/json/)
    const fromJson = JSON.parse(json.text)
    expect(Object.keys(fromJson.paths)).toEqual(Object.keys(fromYaml.paths))
    expect(fromJson).toEqual(fromYaml)

    for (const accept of ["*/*", "text/yaml", "text/html,application/xhtml+xml,*/*;q=0.8", "application/json;q=0, */*"]) {
      const res = await service.anonymous.request("GET", "/api/openapi", undefined, { accept })
      expect(res.headers.get("content-type"), accept).toMatch(/^text\/yaml/)
    }
  })

  it("the pages take GET only: other methods are a 405 naming it, in the error envelope", async () => {
    for (const path of ["/", "/docs"]) {
      const res = await service.anonymous.post(path, {})
      expect(res.status, path).toBe(405)
      expect(res.headers.get("allow"), path).toBe("GET, HEAD")
      expect(res.body.code, path).toBe("METHOD_NOT_ALLOWED")
    }
    expect((await service.anonymous.get("/doc")).status).toBe(404)
  })
})

describe("wantsJson (Accept negotiation for the document)", () => {
  it("picks JSON only when asked above any YAML type", () => {
    expect(wantsJson(undefined)).toBe(false)
    expect(wantsJson("")).toBe(false)
    expect(wantsJson("*/*")).toBe(false)
    expect(wantsJson("application/json")).toBe(true)
    expect(wantsJson("Application/JSON; charset=utf-8")).toBe(true)
    expect(wantsJson("application/vnd.oai.openapi+json")).toBe(true)
    expect(wantsJson("application/json, */*;q=0.8")).toBe(true)
    expect(wantsJson("application/json;q=0")).toBe(false)
    expect(wantsJson("text/yaml, application/json")).toBe(false)
    expect(wantsJson("application/yaml;q=0.5, application/json")).toBe(true)
    expect(wantsJson("application/json;q=0.5, text/yaml")).toBe(false)
  })
})
