import {defineConfig} from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    disableConsoleIntercept: true,
    // A scratch TMPDIR per run (removed afterwards) and the Docker test base image.
    globalSetup: ['test/helpers/global-setup.ts'],
    // End-to-end tests run the built CLI and the generated scripts several times each: on a 2-vCPU
    // machine many take 30-50 s, so the default leaves room for a busy runner.
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // Docker-backed suites share one daemon; files run in parallel, tests inside a file in order.
    fileParallelism: true,
    maxWorkers: 2,
    // The bad-input corpus runs its cases two at a time: more would starve the other file's CLIs.
    maxConcurrency: 2,
  },
})
