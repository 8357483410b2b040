/**
 * vitest global setup: one scratch directory per test run (TMPDIR and XDG_STATE_HOME, inherited by
 * the test workers and every process they start), removed when the run ends; then the Docker base image.
 */
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {setup as setupDocker} from './docker.js'

let scratch: string | undefined

export async function setup(): Promise<void> {
  scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-test-run-'))
  process.env.TMPDIR = scratch
  // What gymrecipe remembers about recipes (ladder verdicts, submissions) stays inside the run.
  process.env.XDG_STATE_HOME = path.join(scratch, 'state')
  await setupDocker()
}

export async function teardown(): Promise<void> {
  if (scratch) await fs.rm(scratch, {recursive: true, force: true})
}
