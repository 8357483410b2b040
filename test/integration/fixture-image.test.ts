/**
 * The fixture Gym image on the real Docker Engine: build it from a temp Relax
 * checkout (build context = checkout root, like Relax), run the fixed
 * in-container start sequence with host networking bound to 127.0.0.1, and
 * check readiness, the direct calendar verifier, tracebacks in `docker logs`,
 * clean SIGTERM handling and start-up fault injection. Everything created
 * carries a per-run label and is removed by that label.
 */
import {randomBytes} from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {TRAINING_ROWS} from '../helpers/recipes.js'

import {buildImage, containerLogs, docker, dockerOk, dockerUnavailableReason, ensureBaseImage, inspectContainer, removeByLabel, uniqueTestLabel} from '../helpers/docker.js'
import {
  CALENDAR_GRAPH,
  type GymLayout,
  IMAGE_FAULTS_FILE,
  PINNED_GYM_COMMIT,
  type RelaxCheckout,
  freePortBlock,
  inContainerStartScript,
  makeRelaxCheckout,
  waitForReadyz,
} from '../helpers/relax-fixture.js'

const unavailable = await dockerUnavailableReason()
if (unavailable) {
  const banner = '!'.repeat(78)
  console.error(`\n${banner}\n!! SKIPPING fixture-image tests: ${unavailable}\n!! CI always has a Docker daemon; these tests must run there.\n${banner}\n`)
}

const HOST = '127.0.0.1'
const registration = {environment: 'calendar', config: 'calendar-v1', agentName: 'calendar_simple_agent'}

function verifyBody(startTime: string) {
  return {
    responses_create_params: {input: [{role: 'system', content: 'Return the calendar as JSON.'}, {role: 'user', content: 'Schedule Planning at 10am for one hour.'}], tools: []},
    exp_cal_state: {'0': {event_id: 0, event_name: 'Planning', duration: 60, constraint: 'at 10am', min_time: '10:00', max_time: '16:00'}},
    response: {object: 'response', output: [{type: 'message', role: 'assistant', content: [{type: 'output_text', text: JSON.stringify([{event_id: 0, event_name: 'Planning', start_time: startTime, duration: 60}])}]}]},
  }
}

describe.skipIf(unavailable !== undefined)('fixture Gym image on the Docker Engine', () => {
  const label = uniqueTestLabel('fixture-image')
  const tag = `gymrecipe-fixture-gym-test:${randomBytes(4).toString('hex')}`
  let tmp: string
  let checkout: RelaxCheckout
  let layout: GymLayout

  beforeAll(async () => {
    const t0 = Date.now()
    await ensureBaseImage()
    const baseMs = Date.now() - t0
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-fixture-image-'))
    checkout = await makeRelaxCheckout(path.join(tmp, 'relax'), {hostGym: false})
    const buildMs = await buildImage({contextDir: checkout.root, dockerfile: checkout.dockerfile, tag, labels: [label]})
    console.log(`fixture-image: base image ready in ${baseMs} ms, fixture image built in ${buildMs} ms`)
    const base = await freePortBlock(6, 22000)
    layout = {host: HOST, bindHost: HOST, gateway: base, agent: base + 1, resource: base + 2, head: base + 3, rayPort: base + 4, rayDashboardPort: base + 5}
  }, 900_000)

  afterAll(async () => {
    const removed = await removeByLabel(label)
    expect(removed.images.length).toBeGreaterThanOrEqual(1)
    if (tmp) await fs.rm(tmp, {recursive: true, force: true})
  })

  it('lays out /opt/nemo-gym like the real image (preflight, venvs, hub, baked scripts)', async () => {
    const check = [
      'set -eu',
      `test "\${NEMO_GYM_COMMIT}" = "${PINNED_GYM_COMMIT}"`,
      'test "$(pwd)" = /opt/nemo-gym',
      '/opt/nemo-gym/.venv/bin/gym --help >/dev/null',
      'for d in responses_api_agents/simple_agent responses_api_agents/swe_agents resources_servers/calendar resources_servers/workplace_assistant resources_servers/math_with_judge resources_servers/example_multi_step; do test -x /opt/nemo-gym/$d/.venv/bin/python; done',
      'test -s /opt/nemo-gym/environments/calendar/config.yaml',
      'test -s /opt/nemo-gym/responses_api_models/relax_gateway_model/configs/relax_gateway_model.yaml',
      'test -s /opt/relax-integration/examples/nemo_gym_agentic/scripts/convert_dataset.py',
      '/opt/nemo-gym/.venv/bin/gym dataset download --repo-id nvidia/Nemotron-RL-agent-workplace_assistant --artifact train.jsonl --output /tmp/out/workplace_assistant_train.jsonl',
      '/usr/bin/python3 /opt/relax-integration/examples/nemo_gym_agentic/scripts/convert_dataset.py --input /tmp/out/workplace_assistant_train.jsonl --output /tmp/out/workplace_assistant_train_relax.jsonl',
      'echo preflight-ok',
    ].join('\n')
    const result = await docker(['run', '--rm', '--network', 'host', '--label', label, tag, 'bash', '-c', check])
    expect(result.stderr + result.stdout).toContain('preflight-ok')
    // The hub's train split: the example rows repeated to a run's worth.
    expect(result.stdout).toContain(`Converted ${TRAINING_ROWS} NeMo Gym row(s)`)
    expect(result.exitCode).toBe(0)
  })

  it('starts calendar with the fixed in-container sequence, reaches ready, verifies, logs tracebacks and stops cleanly', async () => {
    const script = inContainerStartScript({layout, graph: CALENDAR_GRAPH, registration})
    const id = (await dockerOk(['run', '-d', '--network', 'host', '--label', label, '-e', `GYM_HOST=${HOST}`, '-e', 'RAY_ADDRESS=10.0.0.1:6379', tag, 'bash', '-c', script])).trim()
    try {
      const gateway = `http://${HOST}:${layout.gateway}`
      let ready: any
      try {
        ready = await waitForReadyz(gateway, 60_000)
      } catch (error) {
        throw new Error(`${(error as Error).message}\n--- docker logs ---\n${await containerLogs(id, 200)}`, {cause: error})
      }
      expect(ready).toMatchObject({gym_commit: PINNED_GYM_COMMIT, trials: 0, active_trials: 0, janitor_healthy: true, ready: true})
      const resource = `http://${HOST}:${layout.resource}`
      const post = async (body: unknown) => {
        const response = await fetch(`${resource}/verify`, {method: 'POST', headers: {'content-type': 'application/json'}, body: JSON.stringify(body)})
        return {status: response.status, text: await response.text()}
      }
      const correct = await post(verifyBody('10:00'))
      const wrong = await post(verifyBody('11:00'))
      expect(JSON.parse(correct.text).reward).toBe(1)
      expect(JSON.parse(wrong.text).reward).toBe(0)
      // The same check through the resource server's venv python, as the recipe verifier runs it.
      const inside = await docker(['exec', id, '/opt/nemo-gym/resources_servers/calendar/.venv/bin/python', '-c',
        `import json,urllib.request as u; b=json.dumps(${JSON.stringify(verifyBody('10:00'))}).encode(); r=u.urlopen(u.Request("${resource}/verify",data=b,headers={"Content-Type":"application/json"})); print("reward", json.load(r)["reward"])`])
      expect(inside.stdout.trim()).toBe('reward 1.0')
      // Like real Gym: a malformed body is a 422 validation error; a JSON body declared as
      // text/plain makes Gym's error handler fail, a 500 with a traceback on stdout.
      const malformed = await post({responses_create_params: {}, exp_cal_state: {}})
      expect(malformed.status).toBe(422)
      const broken = await fetch(`${resource}/verify`, {method: 'POST', headers: {'content-type': 'text/plain'}, body: '{}'})
      expect(broken.status).toBe(500)
      let logs = ''
      for (let i = 0; i < 20 && !logs.includes('Traceback (most recent call last)'); i++) {
        logs = await containerLogs(id)
        if (!logs.includes('Traceback')) await new Promise((resolve) => setTimeout(resolve, 250))
      }
      expect(logs).toContain('Traceback (most recent call last)')
      expect(logs).toContain('TypeError: Object of type bytes is not JSON serializable')
      expect(logs).toContain('All 3 / 3 servers ready!')
      expect(logs).toContain('Ray runtime started.')
      // docker stop sends SIGTERM to the exec'ed gym process (PID 1): it must exit 0 quickly.
      const t0 = Date.now()
      await dockerOk(['stop', '-t', '10', id])
      expect(Date.now() - t0).toBeLessThan(8000)
      expect((await inspectContainer(id)).State.ExitCode).toBe(0)
    } finally {
      await docker(['rm', '-f', id])
    }
  })

  it('dies during start-up with the injected exit code (exit_after_s fault)', async () => {
    const faults = path.join(tmp, 'faults-exit.json')
    await fs.writeFile(faults, JSON.stringify({exit_after_s: 1.5, exit_code: 3}))
    const script = inContainerStartScript({layout, graph: CALENDAR_GRAPH, registration})
    const id = (await dockerOk(['run', '-d', '--network', 'host', '--label', label,
      '--mount', `type=bind,source=${faults},target=${IMAGE_FAULTS_FILE},readonly`, tag, 'bash', '-c', script])).trim()
    try {
      const wait = await dockerOk(['wait', id], {timeoutMs: 30_000})
      expect(wait.trim()).toBe('3')
      const logs = await containerLogs(id)
      expect(logs).toContain('Starting server calendar_simple_agent')
      expect(logs).toContain('finished unexpectedly!')
      expect(logs).not.toContain('servers ready!')
    } finally {
      await docker(['rm', '-f', id])
    }
  })
})
