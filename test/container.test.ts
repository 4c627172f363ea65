import * as ChildProcess from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { serverUrl } from "./support/database.js"

/**
 * No container engine runs here, so this does what the Dockerfile's runtime stage does,
 * from a clean copy outside the repository: the compiled output, package files, migrations
 * and prompts; the stage's own install command; its own start command and environment.
 * The commands are read from the Dockerfile, so the two cannot drift apart.
 * Once per CI pass is enough: it uses the embedded database, and is skipped in the
 * PostgreSQL run.
 */

const ROOT = Path.join(import.meta.dirname, "..")
const dockerfile = Fs.readFileSync(Path.join(ROOT, "Dockerfile"), "utf8")

/** The Dockerfile's instructions, with `\` continuations joined. */
const instructions = dockerfile.replace(/\\\n/g, " ").split("\n").map((l) => l.trim()).filter((l) => l !== "" && !l.startsWith("#"))
const stageStarts = instructions.flatMap((l, i) => (/^FROM\s/i.test(l) ? [i] : []))
const runtimeStage = instructions.slice(stageStarts.at(-1))

const installCommand = (() => {
  const run = runtimeStage.find((l) => /^RUN\s+npm\s+ci\b/i.test(l))
  if (run === undefined) throw new Error("the runtime stage has no RUN npm ci")
  // The cache clean-up after it only trims the image.
  return run.replace(/^RUN\s+/i, "").split("&&")[0]!.trim()
})()

const jsonArray = (instruction: string | undefined, name: string): Array<string> => {
  const match = instruction === undefined ? null : /(\[.*\])\s*$/.exec(instruction)
  if (match === null) throw new Error(`no exec-form ${name} in the Dockerfile`)
  return JSON.parse(match[1]!)
}
const startCommand = jsonArray(runtimeStage.find((l) => /^CMD\s/i.test(l)), "CMD")
const healthCommand = jsonArray(runtimeStage.find((l) => /^HEALTHCHECK\s/i.test(l)), "HEALTHCHECK CMD")

/** `ENV A=1 B=2` lines of the runtime stage. */
const imageEnv = Object.fromEntries(
  runtimeStage.filter((l) => /^ENV\s/i.test(l)).flatMap((l) =>
    [...l.replace(/^ENV\s+/i, "").matchAll(/([A-Z_][A-Z0-9_]*)=(\S+)/g)].map((m) => [m[1]!, m[2]!]))
)

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as Net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

const run = (command: string, args: ReadonlyArray<string>, options: ChildProcess.SpawnOptions, timeoutMs: number) =>
  new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    const child = ChildProcess.spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout?.on("data", (d) => (output += d))
    child.stderr?.on("data", (d) => (output += d))
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`${command} ${args.join(" ")} took over ${timeoutMs} ms:\n${output.slice(-3000)}`))
    }, timeoutMs)
    child.on("error", reject)
    child.on("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, output })
    })
  })

/** The environment of a clean host: nothing of this test run's database settings. */
const cleanEnv = () => {
  const env = { ...process.env }
  for (const key of Object.keys(env)) {
    if (/^(DATABASE_URL|TEST_DATABASE_URL|DATA_DIR|PORT|HOST|SERVICE_|OTEL_|NODE_OPTIONS|VITEST)/.test(key)) delete env[key]
  }
  return env
}

describe.skipIf(serverUrl() !== undefined)("the container's build and start commands, from a clean copy", () => {
  let workDir = ""
  let app = ""
  let dataDir = ""
  let server: ChildProcess.ChildProcess | undefined
  let logs = ""
  let port = 0

  beforeAll(async () => {
    workDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "steady-image-"))
    app = Path.join(workDir, "app")
    dataDir = Path.join(workDir, "data")
    Fs.mkdirSync(app)
    Fs.mkdirSync(dataDir)
    // The build stage's `npm run build`, into the copy (the repository's own dist/ is not used).
    const tsc = Path.join(ROOT, "node_modules", "typescript", "bin", "tsc")
    const built = await run(process.execPath, [tsc, "-p", "tsconfig.build.json", "--outDir", Path.join(app, "dist")], { cwd: ROOT }, 240_000)
    if (!Fs.existsSync(Path.join(app, "dist", "src", "main.js"))) throw new Error(`build failed:\n${built.output}`)
    for (const file of ["package.json", "package-lock.json"]) Fs.copyFileSync(Path.join(ROOT, file), Path.join(app, file))
    for (const dir of ["migrations", "prompts"]) Fs.cpSync(Path.join(ROOT, dir), Path.join(app, dir), { recursive: true })
    // The addon's sources, which the install's postinstall builds, without this checkout's build (.dockerignore).
    Fs.cpSync(Path.join(ROOT, "native"), Path.join(app, "native"), {
      recursive: true,
      filter: (source) => !Path.relative(ROOT, source).split(Path.sep).includes("build")
    })
    Fs.mkdirSync(Path.join(app, "scripts"))
    for (const file of ["run-node.sh", "build-native.mjs"]) Fs.copyFileSync(Path.join(ROOT, "scripts", file), Path.join(app, "scripts", file))

    const install = await run("sh", ["-c", installCommand], { cwd: app, env: cleanEnv() }, 300_000)
    if (install.code !== 0) throw new Error(`${installCommand} failed (${install.code}):\n${install.output.slice(-3000)}`)

    port = await freePort()
    server = ChildProcess.spawn(startCommand[0]!, startCommand.slice(1), {
      cwd: app,
      env: { ...cleanEnv(), ...imageEnv, PORT: String(port), DATA_DIR: dataDir },
      stdio: ["ignore", "pipe", "pipe"]
    })
    server.stdout?.on("data", (d) => (logs += d))
    server.stderr?.on("data", (d) => (logs += d))
  }, 600_000)

  afterAll(async () => {
    if (server !== undefined && server.exitCode === null) {
      const exited = new Promise((resolve) => server!.once("exit", resolve))
      server.kill("SIGTERM")
      const timer = setTimeout(() => server!.kill("SIGKILL"), 15_000)
      await exited
      clearTimeout(timer)
    }
    // A whole node_modules: removed in the background of a loaded machine, so allow time.
    if (workDir !== "") await Fs.promises.rm(workDir, { recursive: true, force: true })
  }, 120_000)

  it("installs production dependencies only", () => {
    expect(installCommand).toMatch(/^npm ci\b.*--omit=dev/)
    expect(Fs.existsSync(Path.join(app, "node_modules", "effect"))).toBe(true)
    expect(Fs.existsSync(Path.join(app, "node_modules", "vitest"))).toBe(false)
    expect(Fs.existsSync(Path.join(app, "node_modules", "typescript"))).toBe(false)
    // The postinstall built the memory addon (this machine has the compiler the build stage installs).
    expect(Fs.existsSync(Path.join(app, "native", "malloc-trim", "build", "Release", "malloc_trim.node"))).toBe(true)
  })

  it("starts with the image's command and answers /api/health", async () => {
    expect(imageEnv).toMatchObject({ HOST: "0.0.0.0", DATA_DIR: "/data" })
    const deadline = Date.now() + 120_000
    let status = 0
    while (Date.now() < deadline) {
      if (server!.exitCode !== null) throw new Error(`the server exited (${server!.exitCode}):\n${logs.slice(-3000)}`)
      status = await fetch(`http://127.0.0.1:${port}/api/health`).then((r) => r.status, () => 0)
      if (status === 200) break
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
    expect(status, logs.slice(-3000)).toBe(200)
    const ready = await fetch(`http://127.0.0.1:${port}/api/health/ready`)
    expect(ready.status).toBe(200)
    // The embedded database went where DATA_DIR said.
    expect(Fs.readdirSync(dataDir).length).toBeGreaterThan(0)
    // Listening on every interface, as HOST=0.0.0.0 asks.
    expect(logs).toContain(`0.0.0.0:${port}`)
  }, 180_000)

  it("passes its own HEALTHCHECK command", async () => {
    const check = await run(healthCommand[0]!, healthCommand.slice(1), { cwd: app, env: { ...cleanEnv(), PORT: String(port) } }, 30_000)
    expect(check.code, check.output).toBe(0)
  }, 60_000)
})
