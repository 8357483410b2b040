/**
 * A recipe records how the Gym checkout it was made from behaves where Gym changed over time (its
 * include order, whether `gym env start` waits for model endpoints, the openai version guard), read
 * from that checkout's code; the static rung fails when the checkout it is checked against differs.
 * The two "checkouts" are the real snapshot configs plus a small stand-in parser of each generation.
 */
import {cp, mkdir, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {parse} from 'yaml'

import {verifyRecipe} from '../../src/ladder/verify.js'
import {newRecipe} from '../../src/scaffold/new-recipe.js'
import {snapshotRoot} from '../helpers/cli.js'
import {addModelConfigs} from '../helpers/recipes.js'

const LOAD = 'class GlobalConfigDictParser:\n    def load_extra_config_paths(self, config_paths):\n        extra_configs = []\n'
const PINNED = `${LOAD}        return config_paths, extra_configs\n`
const CURRENT = `ALLOW_OPENAI_VERSION_SKEW_KEY_NAME = "allow_openai_version_skew"\n${LOAD}        while pending:\n            index, children_visited = pending.pop()\n`
const CURRENT_ENV = 'def _wait_for_model_endpoints(global_config_dict, timeout_s):\n    pass\n'

let tmp: string
let pinned: string
let current: string
let relaxRoot: string

async function gymCheckout(name: string, parser: string, env?: string): Promise<string> {
  const root = path.join(tmp, name)
  for (const dir of ['environments/calendar', 'resources_servers/calendar']) {
    await cp(path.join(snapshotRoot, dir), path.join(root, dir), {recursive: true})
  }
  await mkdir(path.join(root, 'nemo_gym', 'cli'), {recursive: true})
  await writeFile(path.join(root, 'nemo_gym', 'global_config.py'), parser)
  if (env) await writeFile(path.join(root, 'nemo_gym', 'cli', 'env.py'), env)
  return root
}

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'gr-gym-behaviour-'))
  pinned = await gymCheckout('gym-pinned', PINNED)
  current = await gymCheckout('gym-current', CURRENT, CURRENT_ENV)
  relaxRoot = path.join(tmp, 'relax')
  await mkdir(relaxRoot)
  await addModelConfigs(relaxRoot)
  await newRecipe({id: 'calendar', gymRoot: pinned, gymConfigs: ['environments/calendar/config.yaml'], relaxRoot, from: 'calendar', smoke: false, force: false, update: false, dryRun: false, version: 'test'})
})

afterAll(async () => {
  if (tmp) await rm(tmp, {recursive: true, force: true})
})

describe("the Gym checkout's behaviour, recorded and checked", () => {
  it('recipe.yaml records what the checkout it was made from does', async () => {
    const recorded = parse(await readFile(path.join(relaxRoot, 'examples/nemo_gym_agentic/recipes/calendar/recipe.yaml'), 'utf8'))
    expect(recorded.gym.behaviour).toEqual({include_order: 'discovery', waits_for_model_endpoints: false, guards_openai_version: false})
  })

  it('the static rung passes against that checkout and fails against one that behaves differently', async () => {
    const same = await verifyRecipe({relaxRoot, recipe: 'calendar', level: 'static', render: false, smoke: false, env: process.env, gymRoot: pinned})
    expect(same.rungs[0].checks.find((c) => c.id === 'static.graph-names')?.status).toBe('pass')
    const other = await verifyRecipe({relaxRoot, recipe: 'calendar', level: 'static', render: false, smoke: false, env: process.env, gymRoot: current})
    const failed = other.rungs[0].checks.filter((c) => c.id === 'static.graph-names' && c.status === 'fail').map((c) => c.message)
    expect(failed).toEqual([
      expect.stringContaining('gym.behaviour.include_order = discovery, but the Gym checkout at --gym-root has post-order'),
      expect.stringContaining('gym.behaviour.waits_for_model_endpoints = false, but the Gym checkout at --gym-root has true'),
      expect.stringContaining('gym.behaviour.guards_openai_version = false, but the Gym checkout at --gym-root has true'),
    ])
  })
})
