import { HttpApi } from "@effect/platform"
import { describe, expect, it } from "vitest"
import { allowedMethods, serves } from "../src/http/Allowed.js"
import { Api } from "../src/http/Api.js"

const paths = (() => {
  const out = new Set<string>(["/", "/api", "/api/", "/api/nothing-here", "/api/tasks/1/nothing", "/api/tasks//done"])
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      for (const id of ["7", "counts", "x y"]) {
        const path = endpoint.path.replace(/:[^/]+/g, id)
        out.add(path)
        out.add(`${path}/`)
        out.add(`${path}?limit=5&x=/api/tasks`)
      }
    }
  })
  return [...out]
})()

describe("serves (the keyed-write check) agrees with allowedMethods", () => {
  it("for every route's paths, with ids, trailing slashes and queries, and for paths no route has", () => {
    let checked = 0
    let served = 0
    for (const path of paths) {
      const allowed = allowedMethods(path)
      for (const method of ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "post"]) {
        expect(serves(method, path), `${method} ${path}`).toBe(allowed.includes(method.toUpperCase()))
        checked++
        if (allowed.includes(method.toUpperCase())) served++
      }
    }
    expect(checked).toBeGreaterThan(500)
    // Both answers occur: the check is not trivially one-sided.
    expect(served).toBeGreaterThan(100)
    expect(serves("POST", "/api/tasks")).toBe(true)
    expect(serves("PATCH", "/api/tasks/counts")).toBe(false)
    expect(serves("PATCH", "/api/tasks/12")).toBe(true)
  })
})
