/**
 * The trial rung against the fixture Gateway run on the host (no Docker): generated
 * workplace-assistant and calendar recipes, the CLI's scripted model on 127.0.0.1, and
 * faults switched per test (test/fixtures/trial-faults/sitecustomize.py).
 */
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {trialRung} from '../../src/ladder/trial/index.js'
import {gatewayClient} from '../../src/runtime/gateway-trials.js'
import {startScriptedModel} from '../../src/runtime/scripted-model.js'
import {generatedRecipe} from '../helpers/recipes.js'
import {
  CALENDAR_GRAPH,
  type GymLayout,
  type HostGym,
  type RelaxCheckout,
  WORKPLACE_GRAPH,
  gatewayEnvironmentsJson,
  makeRelaxCheckout,
  repoRoot,
  startHostGym,
  writeFaults,
} from '../helpers/relax-fixture.js'
import {byId, failures, hostLayout, rungContext, runRungChecks} from '../helpers/trial-helpers.js'

const FAULTS_DIR = path.join(repoRoot, 'test', 'fixtures', 'trial-faults')

let tmp: string
let checkout: RelaxCheckout
let faultsFile: string

async function setFaults(faults: Record<string, unknown>): Promise<void> {
  await fs.writeFile(faultsFile, JSON.stringify(faults))
}

function rungEnv(layout: GymLayout, extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    GYM_HOST: '127.0.0.1',
    NEMO_GYM_GATEWAY_PORT: String(layout.gateway),
    NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '127.0.0.1/32',
    ...extra,
  }
}

beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-trial-rung-'))
  checkout = await makeRelaxCheckout(path.join(tmp, 'relax'))
  await generatedRecipe('workplace-assistant', 'workplace-assistant', checkout.root)
  await generatedRecipe('calendar', 'calendar', checkout.root)
  faultsFile = path.join(tmp, 'gym-faults.json')
  await setFaults({})
})

afterAll(async () => {
  if (tmp) await fs.rm(tmp, {recursive: true, force: true})
})

describe('trial rung: workplace-assistant (stateful, Responses, history [0, 1, 2])', () => {
  let gym: HostGym
  let layout: GymLayout
  let artifactRoot: string

  beforeAll(async () => {
    layout = await hostLayout(23000)
    artifactRoot = path.join(tmp, 'artifacts')
    gym = await startHostGym(checkout, {
      layout,
      graph: WORKPLACE_GRAPH,
      registration: {environment: 'workplace_assistant', config: 'workplace-assistant-v1', agentName: 'workplace_assistant_simple_agent'},
      env: {
        NEMO_GYM_GATEWAY_ENVIRONMENTS_JSON: gatewayEnvironmentsJson(layout, {environment: 'workplace_assistant', config: 'workplace-assistant-v1', agentName: 'workplace_assistant_simple_agent', cleanupUrls: true}),
        NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '127.0.0.1/32',
        NEMO_GYM_ARTIFACT_ROOT: artifactRoot,
        PYTHONPATH: FAULTS_DIR,
        GYMRECIPE_TEST_GYM_FAULTS: faultsFile,
      },
    })
    await gym.waitForOutput(/All 3 \/ 3 servers ready!/)
  })

  afterAll(async () => {
    await setFaults({})
    if (gym) expect(await gym.stop()).toBe(0)
  })

  const context = (extra: Record<string, unknown> = {}, env: Record<string, string> = {}) =>
    rungContext(checkout.root, 'workplace-assistant', {env: rungEnv(layout, env), gymRoot: checkout.gymRoot, ...extra})

  it('passes: reward 1.0, 2 tool calls and outputs, history [0, 1, 2], aborted trial cleaned up, active_trials 0', async () => {
    await setFaults({})
    const results = await runRungChecks(trialRung, await context())
    const r = byId(results)
    expect(failures(results)).toBe('')
    expect(Object.keys(r)).toEqual(expect.arrayContaining([
      'trial.contract', 'trial.task', 'trial.gateway-ready', 'trial.created', 'trial.status', 'trial.reward', 'trial.tool-metrics',
      'trial.history', 'trial.tools-offered', 'trial.cleanup-abort', 'trial.cleanup-probe', 'trial.gateway-clean',
    ]))
    expect(r['trial.history'].message).toContain('[0, 1, 2]')
    expect(r['trial.history'].evidence?.tool_result_history).toEqual([0, 1, 2])
    expect(r['trial.tool-metrics'].message).toBe('tool_calls=2 tool_outputs=2')
    expect(r['trial.reward'].message).toBe('reward 1')
    expect(r['trial.cleanup-abort'].message).toContain('confirmed {"clean": true}')
    expect(r['trial.gateway-clean'].message).toMatch(/^active_trials=0/)
    // The bearer token of the scripted model never reaches the evidence.
    const text = JSON.stringify(results)
    expect(text).not.toMatch(/gymrecipe-[0-9a-f]{48}/)
    expect(gym.output()).not.toMatch(/gymrecipe-[0-9a-f]{48}/)
  })

  it('checks the artifact when NEMO_GYM_ARTIFACT_ROOT is configured', async () => {
    const results = await runRungChecks(trialRung, await context({}, {NEMO_GYM_ARTIFACT_ROOT: artifactRoot}))
    const r = byId(results)
    expect(failures(results)).toBe('')
    expect(r['trial.artifact'].status).toBe('pass')
    expect(r['trial.artifact'].message).toContain(artifactRoot)
  })

  it('renews the lease while a slow trial runs (lease 0.6 s, trial ~1.5 s)', async () => {
    await setFaults({agent_delay_s: 0.5})
    try {
      const ctx = await context()
      ctx.target.contract!.trial!.lease_s = 0.6
      const results = await runRungChecks(trialRung, ctx)
      const r = byId(results)
      expect(r['trial.status'].message).toBe('status completed')
      expect(r['trial.status'].evidence?.renewals).toBeGreaterThanOrEqual(3)
      expect(r['trial.status'].evidence?.elapsed_ms).toBeGreaterThan(1200)
      expect(r['trial.history'].status).toBe('pass')
    } finally {
      await setFaults({})
    }
  })

  it('fails on a wrong expected reward, naming expected and actual', async () => {
    const ctx = await context()
    ctx.target.contract!.trial!.expect.reward = 0.5
    const r = byId(await runRungChecks(trialRung, ctx))
    expect(r['trial.reward'].status).toBe('fail')
    expect(r['trial.reward'].message).toBe('reward: expected 0.5, got 1')
    expect(r['trial.status'].status).toBe('pass')
    expect(r['trial.history'].status).toBe('pass')
  })

  it('[workplace-assistant#6] fails when the agent stops feeding tool results back (history [0, 0, 0])', async () => {
    await setFaults({drop_tool_outputs: true})
    try {
      const r = byId(await runRungChecks(trialRung, await context()))
      expect(r['trial.history'].status).toBe('fail')
      expect(r['trial.history'].message).toContain('tool-result history: expected [0, 1, 2], got [0, 0, 0]: tool results were never fed back')
      expect(r['trial.history'].evidence?.tool_result_history).toEqual([0, 0, 0])
    } finally {
      await setFaults({})
    }
  })

  it('fails on a scripted-turn mismatch (the script ends before the agent does)', async () => {
    const ctx = await context()
    const trial = ctx.target.contract!.trial!
    trial.turns = trial.turns.slice(0, 2) // drop the final "Done." turn
    const r = byId(await runRungChecks(trialRung, ctx))
    expect(r['trial.status'].status).toBe('fail')
    expect(r['trial.status'].message).toMatch(/^status: expected completed, got failed; error code agent_error/)
    expect(r['trial.history'].message).toContain('came after the script ended (no scripted turn 2 (the script has 2))')
  })

  it('fails when another trial is still active afterwards (leaked trial)', async () => {
    // A stale requester: a trial whose model never answers, with a long lease.
    const hung = await startScriptedModel({host: '127.0.0.1', protocol: 'responses'})
    const {apiKey, session} = hung.addSession([{text: 'never'}], {holdAt: 0})
    const gateway = gatewayClient(`http://127.0.0.1:${layout.gateway}`)
    const created = await gateway.create({
      protocol_version: 'relax-nemo-gym/v1', request_id: 'relax-stale-leak', session: {session_id: 'stale', group_id: 'stale', rollout_mode: 'train', attempt: 1},
      environment: {name: 'workplace_assistant', config: 'workplace-assistant-v1', task: {messages: [{role: 'user', content: 'hi'}], metadata: {}}},
      model_endpoint: {base_url: hung.baseUrl, api_key: apiKey, model: 'model'}, interrupt_policy: 'protected', deadline_s: 300, lease_s: 300,
    })
    expect(created.status).toBe(202)
    await session.held
    try {
      const r = byId(await runRungChecks(trialRung, await context()))
      expect(r['trial.status'].status).toBe('pass')
      expect(r['trial.gateway-clean'].status).toBe('fail')
      expect(r['trial.gateway-clean'].message).toBe('active_trials=1 after the trial (1 before it started): a trial leaked or a stale requester is still submitting')
    } finally {
      expect((await gateway.abort('relax-stale-leak')).status).toBe(202)
      await hung.close()
    }
  })

  it('[workplace-assistant#7] fails when the environment does not clean up an aborted trial (cleanup_unverified)', async () => {
    await setFaults({cleanup_noop: true})
    try {
      const r = byId(await runRungChecks(trialRung, await context()))
      expect(r['trial.status'].status).toBe('pass')
      expect(r['trial.cleanup-abort'].status).toBe('fail')
      expect(r['trial.cleanup-abort'].message).toMatch(/^aborted trial ended failed with error code aborted \(the trial was aborted\), reported as cleanup_unverified \(cleanup was not confirmed/)
      expect(r['trial.cleanup-abort'].message).toContain('expected aborted (not cleanup_unverified)')
      expect(r['trial.cleanup-abort'].hint).toContain('lifecycle error')
    } finally {
      await setFaults({})
    }
  })

  it('[r2e-gym#12] fails at creation when the callback host is outside the allowlist (400 + hint)', async () => {
    const r = byId(await runRungChecks(trialRung, await context({callbackHost: 'localhost'})))
    expect(r['trial.created'].status).toBe('fail')
    expect(r['trial.created'].message).toBe('POST /v1/trials answered 400: model_endpoint.base_url host is not in the callback allowlist')
    expect(r['trial.created'].hint).toContain('The callback host localhost is not in the Gateway\'s callback allowlist (env.sh: NEMO_GYM_CALLBACK_ALLOWED_NETWORKS=127.0.0.1/32, which does not contain localhost)')
    expect(r['trial.status'].status).toBe('skip')
    expect(r['trial.cleanup-abort'].message).toBe('not checked: the Gateway refused the first trial (see trial.created)')
  })

  it('fails with the 401 visible when callbacks carry the wrong bearer token', async () => {
    await setFaults({auth_prefix: 'Token '})
    try {
      const r = byId(await runRungChecks(trialRung, await context()))
      expect(r['trial.status'].message).toMatch(/^status: expected completed, got failed; error code agent_error/)
      expect(r['trial.history'].status).toBe('fail')
      expect(r['trial.history'].message).toContain('the scripted model answered 401 to 1 callback(s)')
      expect(r['trial.history'].message).toContain('bearer token does not match any scripted session')
      expect(JSON.stringify(r)).not.toMatch(/gymrecipe-[0-9a-f]{48}/)
    } finally {
      await setFaults({})
    }
  })
})

describe('trial rung: calendar (simple agent, default trial from the real example row)', () => {
  let gym: HostGym
  let layout: GymLayout

  beforeAll(async () => {
    layout = await hostLayout(23300)
    gym = await startHostGym(checkout, {
      layout,
      graph: CALENDAR_GRAPH,
      registration: {environment: 'calendar', config: 'calendar-v1', agentName: 'calendar_simple_agent'},
      env: {NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '127.0.0.1/32'},
    })
    await gym.waitForOutput(/All 3 \/ 3 servers ready!/)
  })

  afterAll(async () => {
    if (gym) expect(await gym.stop()).toBe(0)
  })

  it('passes with the built-in calendar trial (reward 1.0, history [0], no cleanup trial)', async () => {
    const ctx = await rungContext(checkout.root, 'calendar', {env: rungEnv(layout), gymRoot: checkout.gymRoot})
    const results = await runRungChecks(trialRung, ctx)
    expect(failures(results)).toBe('')
    const r = byId(results)
    expect(r['trial.history'].message).toBe('tool-result history [0] over 1 callback(s)')
    expect(r['trial.reward'].message).toBe('reward 1')
    expect(r['trial.cleanup-abort']).toBeUndefined()
  })

  it('a trial whose agent rejects every model reply names agent_error first, never cleanup (no cleanup URLs here)', async () => {
    await writeFaults(checkout, {reject_model_replies: true})
    try {
      const ctx = await rungContext(checkout.root, 'calendar', {env: rungEnv(layout), gymRoot: checkout.gymRoot})
      const r = byId(await runRungChecks(trialRung, ctx))
      expect(r['trial.status'].status).toBe('fail')
      // The Gateway reports cleanup_unverified caused by agent_error: the cause leads.
      expect(r['trial.status'].message).toMatch(/^status: expected completed, got failed; error code agent_error \(the agent \/run failed .*\), reported as cleanup_unverified \(/)
      expect(r['trial.status'].evidence?.error).toEqual({code: 'cleanup_unverified', type: 'CleanupError', cause: 'agent_error'})
      expect(r['trial.status'].hint ?? '').not.toMatch(/cleanup/i)
    } finally {
      await writeFaults(checkout, {})
    }
  })

  it('[r2e-gym#14] fails when the scripted answer violates a constraint (reward 0, the model answered wrongly)', async () => {
    const ctx = await rungContext(checkout.root, 'calendar', {env: rungEnv(layout), gymRoot: checkout.gymRoot})
    const trial = ctx.target.contract!.trial!
    trial.turns = [{text: trial.turns[0].text!.replace('"12:45"', '"13:00"')}]
    const r = byId(await runRungChecks(trialRung, ctx))
    expect(r['trial.reward'].message).toBe('reward: expected 1, got 0')
    expect(r['trial.status'].status).toBe('pass')
  })
})
