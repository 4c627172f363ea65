import { Context, Effect, Layer } from "effect"

/**
 * Builds a layer with only the services named here; the compiler refuses a layer that
 * requires one not named.
 *
 * Why the HTTP layers are built this way: every request copies the context of the fiber
 * serving it, and `HttpApiBuilder.group` merges the context its group was built with into
 * each request's (`Context.merge`, a `Map` copied entry by entry). Built with every service
 * of the application, as `Layer.provide(ServicesLive)` gives them, that was ~55 entries
 * copied five or six times per request: about a third of the ~260 KB a request allocated,
 * and with it of the young-generation collections (docs/performance.md, "Allocation per
 * request"). A group names the services its handlers use, typically two or three.
 *
 * `Layer.locallyEffect` narrows the context the layer is built in; the layer still shares
 * the memo map of the layer around it, so nothing it builds is built twice.
 */
export const onlyServices = <const Tags extends ReadonlyArray<Context.Tag<any, any>>>(...tags: Tags) =>
<ROut, E, RIn extends Context.Tag.Identifier<Tags[number]>>(
  layer: Layer.Layer<ROut, E, RIn>
): Layer.Layer<ROut, E, RIn> => {
  const narrow = (build: Effect.Effect<Context.Context<ROut>, E, RIn>) =>
    Effect.mapInputContext(build, (context: Context.Context<RIn>) => Context.pick(...tags)(context) as Context.Context<RIn>)
  // `locallyEffect` declares its function over `Effect<RIn, E, Context<ROut>>` (Effect 2's
  // order of type parameters), while it is called with the layer's build effect, typed above.
  return Layer.locallyEffect(layer, narrow as any) as Layer.Layer<ROut, E, RIn>
}
