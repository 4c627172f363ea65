import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Each file boots its own embedded database; two cores leave room for two at once.
    maxWorkers: 2,
    minWorkers: 1
  }
})
