import {defineConfig} from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    disableConsoleIntercept: true,
    // Builds the Docker test base image once before the Docker-backed files run.
    globalSetup: ['test/helpers/docker.ts'],
    testTimeout: 60_000,
    hookTimeout: 300_000,
    // Docker-backed suites share one daemon; files run in parallel, tests inside a file in order.
    fileParallelism: true,
    maxWorkers: 2,
  },
})
