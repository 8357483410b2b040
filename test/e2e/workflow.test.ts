/**
 * The whole user journey for a stateful tool recipe, through the built CLI, on the real Docker
 * Engine: new → prepare → start → verify --level trial → train → status → verify --level training.
 * Emulated: NeMo Gym + the Relax Gateway (fixture image), Ray (fake Jobs server and `ray` CLI), the
 * Relax trainer (fixture mini Relax) and the Relax Agentic API (a stand-in that answers 401).
 * Only 127.0.0.1 is contacted; everything started here is stopped by id or removed by label.
 */
import {randomBytes} from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {TRAINING_ROWS} from '../helpers/recipes.js'

import {runCli, snapshotRoot} from '../helpers/cli.js'
import {dockerUnavailableReason, ensureBaseImage, removeByLabel} from '../helpers/docker.js'
import {type FakeRay, randomNodeId, startFakeRay} from '../helpers/ray-fixture.js'
import {freePortBlock, makeRelaxCheckout, startAgenticApiStandIn, type RelaxCheckout} from '../helpers/relax-fixture.js'

const HOST = '127.0.0.1'
const unavailable = await dockerUnavailableReason()
if (unavailable) console.error(`\n!! SKIPPING the workflow e2e test: ${unavailable}\n`)

function failures(report: any): unknown {
  return report?.rungs?.map((r: any) => [r.rung, r.status, r.checks.filter((c: any) => c.status !== 'pass').map((c: any) => `${c.id}: ${c.message}`)])
}

describe.skipIf(Boolean(unavailable))('a stateful tool recipe from new to a proven training run', () => {
  let tmp: string
  let checkout: RelaxCheckout
  let ray: FakeRay
  let relax: Awaited<ReturnType<typeof startAgenticApiStandIn>> | undefined
  let id: string
  let env: Record<string, string | undefined>

  beforeAll(async () => {
    await ensureBaseImage()
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-workflow-'))
    checkout = await makeRelaxCheckout(path.join(tmp, 'relax'), {hostGym: false, snapshotDir: snapshotRoot})
    id = `wf-${randomBytes(3).toString('hex')}`
    ray = await startFakeRay({nodes: [{node_id: randomNodeId(), node_ip: HOST, is_head: true}], stopGraceS: 1})
    relax = await startAgenticApiStandIn()
    await fs.mkdir(path.join(tmp, 'models', 'Qwen3-4B'), {recursive: true})
    await fs.writeFile(path.join(tmp, 'models', 'Qwen3-4B', 'config.json'), '{"architectures": ["Qwen3ForCausalLM"]}\n')
    env = {
      ...ray.env(),
      GYM_HOST: HOST,
      GYM_BIND_HOST: HOST,
      NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '127.0.0.0/8',
      NEMO_GYM_IMAGE: `gymrecipe-test-workflow:${id}`,
      NEMO_GYM_SOURCE_DATA: path.join(tmp, 'shared', 'nemo-gym', `${id.replaceAll('-', '_')}_train.jsonl`),
      MODEL_DIR: path.join(tmp, 'models'),
      EXP_DIR: path.join(tmp, 'exp'),
      XDG_STATE_HOME: path.join(tmp, 'state'),
      RAY_DASHBOARD_ADDRESS: ray.url,
      GYMRECIPE_GYM_ROOT: snapshotRoot,
      RELAX_HOST: HOST,
      RELAX_PORT: String(relax.port),
      RAY_ADDRESS: undefined,
      RAY_NO_WAIT: undefined,
      DOCKER_CLI_HINTS: 'false',
    }
  }, 300_000)

  afterAll(async () => {
    await ray?.stop()
    await relax?.close()
    if (id) await removeByLabel(`ai.relax.recipe=${id}`).catch(() => undefined)
    if (tmp) await fs.rm(tmp, {recursive: true, force: true})
  })

  const cli = (args: string[]) => runCli([...args, '--relax-root', checkout.root], {env, timeout: 900_000})

  it('climbs every rung: the generated scripts work against the emulated Gym, Ray and Relax', async () => {
    const block = await freePortBlock(100, 27000, 4000)
    // The private Ray's GCS port inside the block (base+18 is unused), so concurrent tests never share one.
    const created = await runCli(
      ['new', id, '--from', 'workplace-assistant', '--gym-root', snapshotRoot, '--gym-config', 'resources_servers/workplace_assistant/configs/workplace_assistant.yaml', '--relax-root', checkout.root, '--port-base', String(block), '--gcs-port', String(block + 18), '--json'],
      {env},
    )
    expect(created.exitCode, created.stderr).toBe(0)

    // Step 1: the train split is downloaded inside the image (offline fixture hub), validated and published.
    const prepared = await cli(['prepare', id, '--json'])
    expect(prepared.exitCode, JSON.stringify(failures(prepared.json?.ladder ?? prepared.json), null, 1) + prepared.stderr.slice(-2000)).toBe(0)
    const rows = (await fs.readFile(env.NEMO_GYM_SOURCE_DATA!, 'utf8')).split('\n').filter((l) => l.trim()).length
    expect(rows).toBe(TRAINING_ROWS)

    // Step 2: a fresh labelled container, ready, pinned commit, verifier passes and fails as it must.
    const started = await cli(['start', id, '--json'])
    expect(started.exitCode, JSON.stringify(failures(started.json?.ladder), null, 1) + started.stderr.slice(-2000)).toBe(0)

    // Network both ways, then one deterministic trial with tool results fed back and cleanup proven.
    const trial = await cli(['verify', id, '--level', 'trial', '--json'])
    expect(trial.exitCode, JSON.stringify(failures(trial.json), null, 1)).toBe(0)
    expect(trial.json.rungs.map((r: any) => r.status)).toEqual(['pass', 'pass', 'pass', 'pass', 'pass'])

    // Step 3: the generated training script submits to (fake) Ray; mini Relax runs real trials.
    const trained = await cli(['train', id, '--poll-interval', '1', '--json'])
    expect(trained.exitCode, JSON.stringify(trained.json?.training_rung ?? trained.stderr.slice(-3000), null, 1)).toBe(0)
    expect(trained.json.job.status).toBe('SUCCEEDED')

    const status = await cli(['status', id, '--json'])
    expect(status.exitCode).toBe(0)
    expect(status.json.job.submission_id).toBe(trained.json.submission_id)

    // Every rung, from a fresh climb: a SUCCEEDED job is not enough, the outputs prove the run.
    const proven = await cli(['verify', id, '--level', 'training', '--json'])
    expect(proven.exitCode, JSON.stringify(failures(proven.json), null, 1)).toBe(0)
    expect(proven.json.rungs.map((r: any) => [r.rung, r.status])).toEqual([
      ['static', 'pass'],
      ['data', 'pass'],
      ['service', 'pass'],
      ['network', 'pass'],
      ['trial', 'pass'],
      ['training', 'pass'],
    ])

    // Trials gymrecipe did not make are still a stale requester, even after its own use.
    const gateway = `http://${HOST}:${created.json.contract.service.gateway_port}`
    const stray = await fetch(`${gateway}/v1/trials`, {
      method: 'POST',
      headers: {'content-type': 'application/json'},
      body: JSON.stringify({
        protocol_version: 'relax-nemo-gym/v1',
        request_id: `stray-${id}`,
        session: {session_id: 'stray', group_id: 'stray', rollout_mode: 'train', attempt: 1},
        environment: {name: created.json.contract.gym.environment, config: created.json.contract.gym.gateway_config, task: {messages: [{role: 'user', content: 'hi'}], metadata: {}}},
        model_endpoint: {base_url: `http://${HOST}:9/v1`, api_key: 'stray', model: 'model'},
        generation: {responses_create_params: {}, sampling_params: {}},
        interrupt_policy: 'protected',
        deadline_s: 5,
        lease_s: 2,
        metadata: {},
      }),
    })
    expect(stray.status).toBe(202)
    const stale = await cli(['verify', id, '--level', 'service', '--json'])
    expect(stale.exitCode).toBe(4)
    const trialsCheck = stale.json.rungs.find((r: any) => r.rung === 'service').checks.find((c: any) => c.id === 'service.trials')
    expect(trialsCheck.status).toBe('fail')
    expect(trialsCheck.message).toContain('stale requester')
  }, 1_800_000)
})
