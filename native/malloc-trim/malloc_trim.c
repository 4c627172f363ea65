/*
 * glibc's malloc_trim(0) for Node, which offers no way to call it.
 *
 * Freed memory stays with malloc: each thread's arena keeps the pages of what it freed, unless
 * they happen to sit at the very top of the arena. The embedded database's thread, V8's
 * compiler threads (PGlite's WebAssembly tiered up) and Node's buffers leave tens of MiB free
 * but resident after a burst; malloc_trim(0) hands those pages back to the system
 * (docs/performance.md, "Memory"). src/system/MallocTrim.ts calls it.
 *
 * Built by `npm install`'s postinstall (scripts/build-native.mjs, node-gyp) where glibc and a
 * compiler are; elsewhere the service runs without it. Built against another libc anyway, trim()
 * does nothing.
 */
#include <node_api.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

/* trim(): true when memory was returned to the system. */
static napi_value Trim(napi_env env, napi_callback_info info) {
  (void)info;
  int released = 0;
#if defined(__GLIBC__)
  released = malloc_trim(0);
#endif
  napi_value result;
  napi_get_boolean(env, released != 0, &result);
  return result;
}

NAPI_MODULE_INIT() {
  napi_value trim;
  napi_create_function(env, "trim", NAPI_AUTO_LENGTH, Trim, NULL, &trim);
  napi_set_named_property(env, exports, "trim", trim);
  return exports;
}
