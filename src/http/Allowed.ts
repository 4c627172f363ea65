import * as HttpApi from "@effect/platform/HttpApi"
import { Api } from "./Api.js"
import { DOOR_ROUTES } from "../system/SystemApi.js"

interface Route {
  readonly pattern: RegExp
  readonly method: string
  readonly literal: boolean
  readonly path: string
}

/** "/api/tasks/:id" → a pattern where a parameter is any one segment, as the router matches it. */
const patternOf = (path: string) =>
  new RegExp(`^${path.split("/").map((segment) => segment.startsWith(":") ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("/")}/?$`)

const routes: ReadonlyArray<Route> = (() => {
  const out: Array<Route> = []
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      const path = endpoint.path
      out.push({ pattern: patternOf(path), method: endpoint.method, literal: !path.includes(":"), path })
    }
  })
  // Served beside the API: `POST /docs` is a 405 like `POST /api/health`, not a 404.
  for (const { method, path } of DOOR_ROUTES) out.push({ pattern: patternOf(path), method, literal: true, path })
  return out
})()

const ORDER = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

const methodsOf = (matching: ReadonlyArray<Route>) => {
  const methods = new Set(matching.map((route) => route.method))
  if (methods.has("GET")) methods.add("HEAD")
  return ORDER.filter((m) => methods.has(m))
}

/**
 * The methods the API serves on a path (for 405 and its `Allow` header); empty when no
 * route has that path, which is then a 404. A path written out as a route of its own
 * (`/api/tasks/counts`) has that route's methods only, as the document lists them, not those
 * of a parameter route it also fits (`/api/tasks/{id}`).
 */
export const allowedMethods = (url: string): ReadonlyArray<string> => {
  const path = url.split("?")[0] ?? ""
  const matching = routes.filter((route) => route.pattern.test(path))
  const literal = matching.filter((route) => route.literal)
  return methodsOf(literal.length > 0 ? literal : matching)
}

/**
 * For a request on a literal route's path with a method that route does not have, the
 * methods to name in a 405. Checked before routing: the router would hand `PATCH
 * /api/tasks/counts` to `PATCH /api/tasks/{id}` and refuse "counts" as an id.
 */
export const refusedOnLiteralPath = (method: string, url: string): ReadonlyArray<string> | undefined => {
  const path = (url.split("?")[0] ?? "").replace(/(.)\/$/, "$1")
  const allowed = literalPaths.get(path)
  return allowed === undefined || allowed.includes(method.toUpperCase()) ? undefined : allowed
}

/** Literal route paths and their methods, looked up on every request before routing. */
const literalPaths: ReadonlyMap<string, ReadonlyArray<string>> = (() => {
  const byPath = new Map<string, Array<Route>>()
  for (const route of routes) {
    if (!route.literal) continue
    byPath.set(route.path, [...(byPath.get(route.path) ?? []), route])
  }
  return new Map([...byPath].map(([path, matching]) => [path, methodsOf(matching)]))
})()

/** Parameter routes by method, for `serves`. */
const parameterRoutes: ReadonlyMap<string, ReadonlyArray<Route>> = (() => {
  const byMethod = new Map<string, Array<Route>>()
  for (const route of routes) {
    if (!route.literal) byMethod.set(route.method, [...(byMethod.get(route.method) ?? []), route])
  }
  return byMethod
})()

/**
 * Whether `allowedMethods(url)` includes `method`, without matching every route: a keyed
 * write asks this on every request.
 */
export const serves = (method: string, url: string): boolean => {
  const path = url.split("?")[0] ?? ""
  const upper = method.toUpperCase()
  const literal = literalPaths.get(path.replace(/(.)\/$/, "$1"))
  if (literal !== undefined) return literal.includes(upper)
  return parameterRoutes.get(upper === "HEAD" ? "GET" : upper)?.some((route) => route.pattern.test(path)) ?? false
}
