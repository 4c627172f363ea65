/**
 * `npm start`: compiles only when the sources changed since the last build, then runs the
 * service in this same process.
 *
 * - Same process: npm's shell execs the one command of the start script, so npm's own signal
 *   forwarding reaches the service directly (no `sh` or second node between them that could
 *   die and leave the service orphaned).
 * - Fingerprint: a content hash of what the build reads (every .ts file under src/, the
 *   tsconfigs, the lockfile, which pins the compiler). Contents, not mtimes: a fresh clone
 *   or checkout gives every file a new mtime without changing a byte.
 * - The stamp also records `dist/src/main.js`'s mtime after the build: a later `npm run build`
 *   (or any other tsc run) rewrites it, so a dist not built from the stamped sources is rebuilt.
 */
import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const ROOT = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..")
const MAIN = Path.join(ROOT, "dist", "src", "main.js")
const STAMP = Path.join(ROOT, "dist", ".build-fingerprint.json")
const INPUTS = ["tsconfig.json", "tsconfig.build.json", "package-lock.json"]

const QUIET = /^(warn|warning|error|err|fatal|critical|none|off)$/i.test((process.env.LOG_LEVEL ?? "").trim())

/** One line in the shape of the service's own JSON logs (stdout stays one JSON object a line). */
const log = (logLevel, message, annotations = {}) => {
  if (logLevel === "INFO" && QUIET) return
  const line = { message, logLevel, timestamp: new Date().toISOString(), annotations }
  ;(logLevel === "INFO" ? process.stdout : process.stderr).write(`${JSON.stringify(line)}\n`)
}

const sourceFiles = (dir) =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.isFile() && /\.[cm]?ts$/.test(entry.name) ? [path] : []
  })

const fingerprint = () => {
  const hash = createHash("sha256")
  const files = [...sourceFiles(Path.join(ROOT, "src")), ...INPUTS.map((name) => Path.join(ROOT, name))]
    .map((file) => Path.relative(ROOT, file).split(Path.sep).join("/"))
    .sort()
  for (const file of files) {
    let content
    try {
      content = Fs.readFileSync(Path.join(ROOT, file))
    } catch {
      content = Buffer.from("(missing)")
    }
    hash.update(file).update("\0").update(createHash("sha256").update(content).digest()).update("\0")
  }
  return hash.digest("hex")
}

const mtimeOf = (file) => {
  try {
    return Fs.statSync(file).mtimeMs
  } catch {
    return undefined
  }
}

const readStamp = () => {
  try {
    return JSON.parse(Fs.readFileSync(STAMP, "utf8"))
  } catch {
    return undefined
  }
}

const upToDate = (sources) => {
  const stamp = readStamp()
  const main = mtimeOf(MAIN)
  return stamp !== undefined && main !== undefined && stamp.sources === sources && stamp.main === main
}

/** tsc from the project's own typescript, diagnostics on stderr so stdout stays JSON logs. */
const build = () =>
  new Promise((resolve) => {
    let tsc
    try {
      tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")
    } catch {
      log("ERROR", "The sources changed since the last build, and typescript is not installed: run `npm install` first")
      resolve(1)
      return
    }
    const child = spawn(process.execPath, [tsc, "-p", Path.join(ROOT, "tsconfig.build.json")], {
      cwd: ROOT,
      stdio: ["ignore", process.stderr, process.stderr]
    })
    // Stopped while compiling: stop the compiler too rather than leave it writing dist/.
    const stop = (signal) => {
      child.kill(signal)
      process.exit(signal === "SIGINT" ? 130 : 143)
    }
    process.on("SIGINT", stop)
    process.on("SIGTERM", stop)
    const done = (code) => {
      process.off("SIGINT", stop)
      process.off("SIGTERM", stop)
      resolve(code)
    }
    child.once("error", (error) => {
      log("ERROR", `Could not run tsc: ${error.message}`)
      done(1)
    })
    child.once("exit", (code, signal) => done(code ?? (signal === null ? 1 : 128)))
  })

const sources = fingerprint()
if (upToDate(sources)) {
  log("INFO", "Build up to date: dist/ was built from these sources")
} else {
  log("INFO", "Building (tsc -p tsconfig.build.json): dist/ was not built from these sources")
  const started = performance.now()
  Fs.rmSync(STAMP, { force: true })
  const code = await build()
  if (code !== 0) {
    log("ERROR", `The build failed (tsc exit code ${code}); not starting`)
    process.exit(code)
  }
  // Written whole under another name, then renamed: a launch racing this one reads an old
  // stamp or the new one, never half of one.
  const temporary = `${STAMP}.${process.pid}`
  Fs.writeFileSync(temporary, JSON.stringify({ sources, main: mtimeOf(MAIN) }))
  Fs.renameSync(temporary, STAMP)
  log("INFO", "Built", { durationMs: Math.round(performance.now() - started) })
}

await import(pathToFileURL(MAIN).href)
