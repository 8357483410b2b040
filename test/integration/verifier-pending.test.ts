/**
 * A recipe made for an environment with no known-correct and known-wrong outputs (no built-in, no
 * example rollouts, no --verifier): the service rung's verifier check fails naming what to write,
 * without needing the service to run, and `gymrecipe train` refuses in its pre-flight.
 */
import {mkdtemp} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {beforeAll, describe, expect, it} from 'vitest'

import {verifierCheck} from '../../src/ladder/service/checks.js'
import {Scratch} from '../../src/ladder/scratch-store.js'
import {resolveRecipe} from '../../src/recipe/target.js'
import {runCli, snapshotRoot} from '../helpers/cli.js'
import {addModelConfigs} from '../helpers/recipes.js'

const CONFIG = 'resources_servers/example_multi_step/configs/example_multi_step.yaml'

describe('a pending verifier', () => {
  let relaxRoot: string
  let pending: string
  beforeAll(async () => {
    relaxRoot = await mkdtemp(path.join(os.tmpdir(), 'gr-pending-'))
    await addModelConfigs(relaxRoot)
    const made = await runCli(['new', 'multi', '--gym-root', snapshotRoot, '--gym-config', CONFIG, '--relax-root', relaxRoot, '--json'])
    expect(made.exitCode, made.stderr).toBe(0)
    pending = made.json.contract.verifier.pending
    expect(pending).toMatch(/^no known-correct and known-wrong outputs for example_multi_step/)
  })

  it('fails the service rung\'s verifier check with what is missing, service running or not', async () => {
    const target = await resolveRecipe(relaxRoot, 'multi')
    // No Docker daemon is reachable at this address: the check must not need one.
    const ctx = {target, options: {env: {...process.env, DOCKER_HOST: 'unix:///nonexistent/docker.sock'}, smoke: false}, scratch: new Scratch()}
    const outcome = await verifierCheck.run(ctx)
    expect(outcome).toMatchObject({status: 'fail', message: `no known-correct and known-wrong outputs yet: ${pending}`, file: 'recipe.yaml'})
    expect(Array.isArray(outcome) ? undefined : outcome.hint).toBe('Give them, then: gymrecipe new multi --update --verifier <file.yaml>')
  })

  it('makes train refuse in its pre-flight (exit 3), naming the verifier', async () => {
    const r = await runCli(['train', 'multi', '--relax-root', relaxRoot, '--dry-run', '--json'])
    expect(r.exitCode).toBe(3)
    const verifier = r.json.preflight.find((i: {id: string}) => i.id === 'verifier')
    expect(verifier).toMatchObject({status: 'fail', message: `verifier pending: ${pending}`})
    expect(verifier.hint).toContain('gymrecipe new multi --update --verifier <file.yaml>')
  })

  it('a recipe with examples passes the same pre-flight item', async () => {
    const made = await runCli(['new', 'cal', '--gym-root', snapshotRoot, '--gym-config', 'environments/calendar/config.yaml', '--relax-root', relaxRoot, '--json'])
    expect(made.exitCode, made.stderr).toBe(0)
    const r = await runCli(['train', 'cal', '--relax-root', relaxRoot, '--dry-run', '--json'])
    const verifier = r.json.preflight.find((i: {id: string}) => i.id === 'verifier')
    expect(verifier).toMatchObject({status: 'pass', message: expect.stringMatching(/^\d+ correct and \d+ wrong turn\(s\) in recipe\.yaml$/)})
  })
})
