import * as HttpApi from "@effect/platform/HttpApi"
import { Api } from "./Api.js"
import { DOOR_ROUTES } from "../system/SystemApi.js"

interface ParamRoute {
  readonly path: string
  /** Each segment's literal text, or null where the route takes a parameter. */
  readonly segments: ReadonlyArray<string | null>
}

const literal = new Map<string, string>()
const literalPaths = new Set<string>()
const parametric = new Map<string, Array<ParamRoute>>()

HttpApi.reflect(Api, {
  onGroup: () => {},
  onEndpoint: ({ endpoint }) => {
    const path = endpoint.path
    if (!path.includes(":")) {
      literal.set(`${endpoint.method} ${path}`, path)
      literalPaths.add(path)
      return
    }
    const segments = path.split("/").map((segment) => (segment.startsWith(":") ? null : segment))
    const list = parametric.get(endpoint.method) ?? []
    list.push({ path, segments })
    parametric.set(endpoint.method, list)
  }
})
// The pages served beside the API get their own label too, not `unmatched`.
for (const { method, path } of DOOR_ROUTES) {
  literal.set(`${method} ${path}`, path)
  literalPaths.add(path)
}
// The router prefers a literal segment over a parameter at the same place; so does this.
for (const list of parametric.values()) {
  const rank = (route: ParamRoute) => route.segments.map((s) => (s === null ? "1" : "0")).join("")
  list.sort((a, b) => (rank(a) < rank(b) ? -1 : rank(a) > rank(b) ? 1 : 0))
}

const matchParametric = (method: string, path: string): string | undefined => {
  const candidates = parametric.get(method)
  if (candidates === undefined) return undefined
  const segments = path.split("/")
  for (const route of candidates) {
    if (route.segments.length !== segments.length) continue
    let ok = true
    for (let i = 0; i < segments.length; i++) {
      const want = route.segments[i]
      if (want === null ? segments[i] === "" : want !== segments[i]) {
        ok = false
        break
      }
    }
    if (ok) return route.path
  }
  return undefined
}

// A literal route's path with another method is refused (405) before routing, even where a
// parameter route would fit it (`PATCH /api/tasks/counts`).
const find = (method: string, path: string) =>
  literal.get(`${method} ${path}`) ?? (literalPaths.has(path) ? undefined : matchParametric(method, path))

/**
 * The route pattern a request is served by (`/api/tasks/:id`), for metrics and span names:
 * labelling by raw path would make one series per task id. Undefined when no route fits.
 */
export const routeOf = (method: string, url: string): string | undefined => {
  const query = url.indexOf("?")
  let path = query === -1 ? url : url.slice(0, query)
  if (path.length > 1 && path.endsWith("/")) path = path.slice(0, -1)
  return find(method, path) ?? (method === "HEAD" ? find("GET", path) : undefined)
}
