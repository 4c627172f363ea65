import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

/** Where `npm install`'s postinstall (scripts/build-native.mjs) builds the addon. */
const ADDON = Path.join("native", "malloc-trim", "build", "Release", "malloc_trim.node")

/**
 * The addon's path, looked for from this module up: this file runs from `src/system/` (tsx,
 * vitest) or `dist/src/system/` (`npm start`, the image, an installed package), and the addon
 * sits in the package's own `native/` folder either way. Undefined where it was not built (no
 * compiler at install time; the image's runtime stage copies it from the build stage).
 */
export const mallocTrimAddon = (): string | undefined => {
  let dir = Path.dirname(fileURLToPath(import.meta.url))
  for (let up = 0; up < 4; up++) {
    const file = Path.join(dir, ADDON)
    if (Fs.existsSync(file)) return file
    dir = Path.dirname(dir)
  }
  return undefined
}

/** glibc's `malloc_trim(0)`: true when pages went back to the system. Undefined without the addon. */
export const loadMallocTrim = (): (() => boolean) | undefined => {
  const file = mallocTrimAddon()
  if (file === undefined) return undefined
  try {
    const addon = createRequire(import.meta.url)(file) as { readonly trim?: unknown }
    return typeof addon.trim === "function" ? addon.trim as () => boolean : undefined
  } catch {
    // Built for another Node ABI or platform (a copied node_modules): run without it.
    return undefined
  }
}

/**
 * Hands the pages malloc keeps free back to the system, every 2 s, load or not.
 *
 * glibc keeps what a thread frees in that thread's arena; only a free stretch at an arena's
 * very top goes back by itself. The embedded database's thread, V8's helper threads (which
 * compile PGlite's hot WebAssembly with TurboFan and help the collector) and Node's buffers
 * each leave such arenas behind: on the embedded database after a load, 60–70 MiB of the
 * process's resident memory was malloc's free memory (docs/performance.md, "Memory"). A trim
 * takes 1–3 ms of the main thread (up to 7 ms after a burst): it returns only free pages, which
 * the next allocation there maps again. It runs under load too, so the peak is bounded as well
 * as the quiet service.
 *
 * By default on the embedded database only: on a PostgreSQL server the process has no such
 * thread and no WebAssembly, and the trim measured no memory there (peak and settled within
 * 2 MiB of without). SERVICE_MALLOC_TRIM=on runs it on either, =off on neither. Returns
 * whether it runs.
 */
export const startMallocTrim = (embedded: boolean, everyMs = 2_000): boolean => {
  const setting = (process.env.SERVICE_MALLOC_TRIM ?? "").trim().toLowerCase()
  const wanted = /^(on|1|true|yes)$/.test(setting) || (embedded && !/^(off|0|false|no)$/.test(setting))
  if (!wanted) return false
  const trim = loadMallocTrim()
  if (trim === undefined) return false
  setInterval(trim, everyMs).unref()
  return true
}
