/**
 * Ctrl+C leaves nothing behind: interrupting `verify --level data` while the daemon is creating
 * the shared-storage probe container (created on the daemon, its id not yet back to gymrecipe)
 * still removes that container by id, and the command exits 130 saying so.
 */
import {execa} from 'execa'
import {mkdtemp, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {PROBE_LABEL} from '../../src/runtime/storage-probe.js'
import {repoRoot} from '../helpers/cli.js'
import {BASE_IMAGE, docker, dockerUnavailableReason, ensureBaseImage} from '../helpers/docker.js'
import {delayingDockerProxy, type DockerProxy} from '../helpers/docker-proxy.js'
import {generatedRecipe} from '../helpers/recipes.js'

const unavailable = await dockerUnavailableReason()
const daemonSocket = process.env.DOCKER_HOST?.startsWith('unix://') ? process.env.DOCKER_HOST.slice('unix://'.length) : '/var/run/docker.sock'

describe.skipIf(unavailable !== undefined)('Ctrl+C during the storage probe', () => {
  let dir: string
  let proxy: DockerProxy
  let relaxRoot: string
  const recipe = `probe-int-${process.pid}`

  beforeAll(async () => {
    await ensureBaseImage()
    dir = await mkdtemp(path.join(os.tmpdir(), 'gr-int-'))
    proxy = await delayingDockerProxy(dir, {target: daemonSocket, hold: /^POST \S*\/containers\/create/, delayMs: 3000})
    ;({relaxRoot} = await generatedRecipe('calendar', recipe))
  }, 300_000)

  afterAll(async () => {
    await proxy?.close()
    const left = (await docker(['ps', '-a', '-q', '--filter', `label=${PROBE_LABEL}=${recipe}`])).stdout.split('\n').filter(Boolean)
    if (left.length > 0) await docker(['rm', '-f', ...left])
    await rm(dir, {recursive: true, force: true})
    await rm(relaxRoot, {recursive: true, force: true})
  })

  it('removes the container the daemon created before its id came back, and exits 130', async () => {
    const rows = path.join(dir, 'calendar_train.jsonl')
    await writeFile(rows, '{"responses_create_params":{"input":[{"role":"user","content":"hi"}]},"exp_cal_state":{}}\n')
    const child = execa(process.execPath, [path.join(repoRoot, 'bin/run.js'), 'verify', recipe, '--level', 'data', '--relax-root', relaxRoot], {
      reject: false,
      env: {NO_COLOR: '1', DOCKER_HOST: `unix://${proxy.socket}`, GYMRECIPE_PROBE_IMAGE: BASE_IMAGE, NEMO_GYM_SOURCE_DATA: rows},
      timeout: 120_000,
    })
    const held = await proxy.held
    // The daemon has made the container; gymrecipe is still waiting for the answer.
    expect(await held.answered).toMatch(/^HTTP\/1\.1 201/)
    expect((await docker(['ps', '-a', '-q', '--filter', `label=${PROBE_LABEL}=${recipe}`])).stdout.trim()).not.toBe('')
    child.kill('SIGINT')
    const result = await child
    expect(result.exitCode).toBe(130)
    expect(String(result.stderr)).toContain('interrupted (SIGINT): what this command created was removed')
    expect((await docker(['ps', '-a', '-q', '--filter', `label=${PROBE_LABEL}=${recipe}`])).stdout.trim()).toBe('')
  }, 180_000)
})
