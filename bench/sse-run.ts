/**
 * `npx tsx bench/sse-run.ts`: the change-stream scenario alone (bench/sse.ts), on the
 * databases of BENCH_DATABASES, with the built service (BENCH_SKIP_BUILD=1 reuses dist/).
 * Also BENCH_SSE_STREAMS (1000), BENCH_SSE_RATE (100 writes/s), BENCH_SSE_SECONDS (20).
 */
import { cleanupAll, runCommand } from "./processes.js"
import { type Database, printSections, type Section } from "./report.js"
import { config, log, ROOT } from "./setup.js"
import { sseScenario } from "./sse.js"

const main = async () => {
  const sections: Array<Section> = []
  try {
    if (!config.skipBuild) {
      log("building (npm run build)")
      await runCommand("npm", ["run", "build"], { timeoutMs: 180_000, cwd: ROOT })
    }
    for (const database of config.databases) sections.push(await sseScenario(database as Database))
    printSections(sections)
  } finally {
    await cleanupAll()
  }
}

process.on("SIGINT", () => void cleanupAll().then(() => process.exit(1)))
main().then(() => process.exit(0), async (error) => {
  console.error(error instanceof Error ? error.stack ?? error.message : error)
  await cleanupAll()
  process.exit(1)
})
