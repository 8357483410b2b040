/**
 * The trial rung against the fixture Gym image on the real Docker Engine: the task row is read
 * from inside the recipe-owned container (Docker exec API, no --gym-root), the Gateway calls the
 * CLI's scripted model back on 127.0.0.1 (host networking), and the artifact written inside the
 * container is read back through exec. A container without the recipe's label is never read.
 */
import {randomBytes} from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import type {RecipeContract} from '../../src/contract/types.js'
import {trialRung} from '../../src/ladder/trial/index.js'
import {buildImage, containerLogs, dockerOk, dockerUnavailableReason, ensureBaseImage, removeByLabel, uniqueTestLabel} from '../helpers/docker.js'
import {generatedRecipe} from '../helpers/recipes.js'
import {type GymLayout, WORKPLACE_GRAPH, inContainerStartScript, makeRelaxCheckout, waitForReadyz} from '../helpers/relax-fixture.js'
import {byId, failures, hostLayout, rungContext, runRungChecks} from '../helpers/trial-helpers.js'

const unavailable = await dockerUnavailableReason()
if (unavailable) console.error(`\n!! SKIPPING trial-docker tests: ${unavailable}\n`)

describe.skipIf(unavailable !== undefined)('trial rung through the fixture Gym image (Docker)', () => {
  const label = uniqueTestLabel('trial-docker')
  const tag = `gymrecipe-trial-docker-test:${randomBytes(4).toString('hex')}`
  const recipeId = `wa-trial-${randomBytes(3).toString('hex')}`
  const artifactRoot = `/tmp/gymrecipe-trial-artifacts-${randomBytes(4).toString('hex')}`
  let tmp: string
  let relaxRoot: string
  let layout: GymLayout
  let contract: RecipeContract
  let containerId: string

  beforeAll(async () => {
    await ensureBaseImage()
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-trial-docker-'))
    const checkout = await makeRelaxCheckout(path.join(tmp, 'relax'), {hostGym: false})
    relaxRoot = checkout.root
    await generatedRecipe('workplace-assistant', recipeId, relaxRoot)
    contract = (await rungContext(relaxRoot, recipeId)).target.contract!
    await buildImage({contextDir: checkout.root, dockerfile: checkout.dockerfile, tag, labels: [label]})
    // Away from the fixed port blocks of the start tests (24100–24399), which may run at the same time.
    layout = await hostLayout(20000)
    const script = inContainerStartScript({
      layout,
      graph: WORKPLACE_GRAPH,
      registration: {environment: contract.gym.environment, config: contract.gym.gateway_config, agentName: contract.gym.agent.name, cleanupUrls: true},
      callbackNetworks: '127.0.0.1/32',
    })
    containerId = (await dockerOk([
      'run', '-d', '--name', contract.service.container, '--label', label, '--label', `ai.relax.recipe=${recipeId}`,
      '--network', 'host', '-e', `NEMO_GYM_ARTIFACT_ROOT=${artifactRoot}`, tag, 'bash', '-c', script,
    ])).trim()
    try {
      await waitForReadyz(`http://127.0.0.1:${layout.gateway}`, 90_000)
    } catch (error) {
      throw new Error(`${(error as Error).message}\n--- docker logs ---\n${await containerLogs(containerId, 200)}`, {cause: error})
    }
  }, 900_000)

  afterAll(async () => {
    await removeByLabel(label)
    if (tmp) await fs.rm(tmp, {recursive: true, force: true})
  })

  const env = () => ({
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    GYM_HOST: '127.0.0.1',
    NEMO_GYM_GATEWAY_PORT: String(layout.gateway),
    NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '127.0.0.1/32',
    NEMO_GYM_ARTIFACT_ROOT: artifactRoot,
  })

  it('passes: task row read from the container, history [0, 1, 2], artifact read back, cleanup confirmed, active_trials 0', async () => {
    const results = await runRungChecks(trialRung, await rungContext(relaxRoot, recipeId, {env: env()}))
    const r = byId(results)
    expect(failures(results), await containerLogs(containerId, 80)).toBe('')
    expect(r['trial.task'].message).toBe(`task from ${contract.service.container}:/opt/nemo-gym/resources_servers/workplace_assistant/data/example.jsonl row 0 (2 message(s))`)
    expect(r['trial.history'].evidence?.tool_result_history).toEqual([0, 1, 2])
    expect(r['trial.artifact'].message).toMatch(new RegExp(`^artifact ${contract.service.container}:${artifactRoot}/gymrecipe-trial-[a-z0-9-]+/artifact\\.json: evaluation \\{"reward":1(\\.0)?,"status":"completed"\\}, 0 file\\(s\\)$`))
    expect(r['trial.cleanup-abort'].status).toBe('pass')
    expect(r['trial.gateway-clean'].message).toMatch(/^active_trials=0/)
    expect(await containerLogs(containerId)).not.toMatch(/gymrecipe-[0-9a-f]{48}/)
  })

  it('a failed trial quotes the container log line that explains it: the agent rejected the model reply', async () => {
    const faults = '/opt/relax-integration/examples/nemo_gym_agentic/service/fixture-faults.json'
    await dockerOk(['exec', containerId, 'sh', '-c', `echo '{"reject_model_replies": true}' > ${faults}`])
    try {
      const r = byId(await runRungChecks(trialRung, await rungContext(relaxRoot, recipeId, {env: env()})))
      expect(r['trial.status'].status).toBe('fail')
      // Cleanup URLs are registered here and confirm: the error is the agent's own.
      expect(r['trial.status'].message).toMatch(/^status: expected completed, got failed; error code agent_error \(the agent \/run failed/)
      expect(r['trial.status'].message).toMatch(/; the container log says \(a log line of trial gymrecipe-trial-[a-z0-9-]+\): .*Received an invalid response from model server/)
      expect(String(r['trial.status'].evidence?.log_line)).toContain('Received an invalid response from model server')
      expect(r['trial.status'].hint).toContain(`gymrecipe logs ${recipeId}`)
    } finally {
      await dockerOk(['exec', containerId, 'rm', '-f', faults])
    }
  })

  it('refuses to read the task from a container without the recipe label', async () => {
    const ctx = await rungContext(relaxRoot, recipeId, {env: env()})
    ctx.target.contract = {...ctx.target.contract!, id: 'someone-else'}
    const r = byId(await runRungChecks(trialRung, ctx))
    expect(r['trial.task'].status).toBe('fail')
    expect(r['trial.task'].message).toBe(`container ${contract.service.container} is not this recipe's (ai.relax.recipe=${recipeId}, expected someone-else)`)
    expect(r['trial.created']?.status ?? 'not-run').toBe('skip')
  })
})
