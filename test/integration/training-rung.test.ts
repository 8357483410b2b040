/**
 * The training rung on real runs of the fixture "mini Relax": the generated calendar training
 * script submits through the fake `ray` CLI to the fake Ray Jobs server, whose job runs
 * run_training.sh (readiness, conversion) and relax.entrypoints.train, which runs real trials
 * through the thin client against the fixture Gateway (host run) with a scripted policy.
 * One passing run, and one run per variant that must fail the rung.
 */
import {execa} from 'execa'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {trainingRung} from '../../src/ladder/training/index.js'
import {writeRunState} from '../../src/runtime/run-state.js'
import {type FakeRay, startFakeRay} from '../helpers/ray-fixture.js'
import {CALENDAR_GRAPH, type GymLayout, type HostGym, type RelaxCheckout, SNAPSHOT_DIR, makeRelaxCheckout, startHostGym, waitForReadyz} from '../helpers/relax-fixture.js'
import {runCli} from '../helpers/cli.js'
import {generatedRecipe} from '../helpers/recipes.js'
import {byId, failures, hostLayout, rungContext, runRungChecks} from '../helpers/trial-helpers.js'

let tmp: string
let checkout: RelaxCheckout
let gym: HostGym
let layout: GymLayout
let ray: FakeRay
let recipeDir: string
let runScript: string

const HOST = '127.0.0.1'

beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-training-rung-'))
  checkout = await makeRelaxCheckout(path.join(tmp, 'relax'))
  recipeDir = (await generatedRecipe('calendar', 'calendar', checkout.root)).dir
  runScript = path.join(recipeDir, 'run-qwen3-4B-8xgpu-nemo-gym-calendar.sh')
  await fs.mkdir(path.join(tmp, 'models', 'Qwen3-4B'), {recursive: true})
  await fs.writeFile(path.join(tmp, 'models', 'Qwen3-4B', 'config.json'), '{"architectures": ["Qwen3ForCausalLM"]}\n')
  await fs.mkdir(path.join(tmp, 'data'), {recursive: true})
  await fs.copyFile(path.join(SNAPSHOT_DIR, 'environments/calendar/data/example.jsonl'), path.join(tmp, 'data', 'calendar_train.jsonl'))
  layout = await hostLayout(23900)
  gym = await startHostGym(checkout, {
    layout,
    graph: CALENDAR_GRAPH,
    registration: {environment: 'calendar', config: 'calendar-v1', agentName: 'calendar_simple_agent', maxConcurrency: 8},
    env: {NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '127.0.0.1/32'},
  })
  await gym.waitForOutput(/All 3 \/ 3 servers ready!/)
  ray = await startFakeRay({stateDir: path.join(tmp, 'ray')})
})

afterAll(async () => {
  await ray?.stop()
  if (gym) expect(await gym.stop()).toBe(0)
  if (tmp) await fs.rm(tmp, {recursive: true, force: true})
})

interface Run {
  name: string
  exitCode: number
  output: string
  submissionId: string
  logFile: string
  expDir: string
  workerLogs: string
  leakState: string
  env: Record<string, string>
}

/** Run the generated training script once, with the mini Relax configured by fixture_train.json. */
async function train(name: string, fixture: Record<string, unknown> = {}): Promise<Run> {
  const base = path.join(tmp, 'runs', name)
  await fs.mkdir(base, {recursive: true})
  const workerLogs = path.join(base, 'ray-logs')
  const leakState = path.join(base, 'leak.json')
  await fs.writeFile(path.join(checkout.root, 'relax', 'fixture_train.json'), JSON.stringify({max_rollouts: 1, max_prompts: 2, worker_log_dir: workerLogs, leak_state_file: leakState, ...fixture}))
  const env: Record<string, string> = {
    ...ray.env(),
    HOME: process.env.HOME ?? '/root',
    XDG_STATE_HOME: path.join(tmp, 'state'),
    RAY_DASHBOARD_ADDRESS: ray.url,
    EXP_DIR: path.join(base, 'exp'),
    MODEL_DIR: path.join(tmp, 'models'),
    GYM_HOST: HOST,
    NEMO_GYM_GATEWAY_PORT: String(layout.gateway),
    NEMO_GYM_SOURCE_DATA: path.join(tmp, 'data', 'calendar_train.jsonl'),
    NEMO_GYM_CALLBACK_ALLOWED_NETWORKS: '127.0.0.1/32',
  }
  const result = await execa('bash', [runScript], {cwd: checkout.root, env, extendEnv: false, reject: false, all: true, timeout: 180_000})
  const output = String(result.all)
  const submissionId = /Submitting (\S+) to /.exec(output)?.[1] ?? ''
  const logs = (await fs.readdir(path.join(checkout.root, 'log'))).filter((f) => f.startsWith('qwen3-4B-8xgpu-nemo-gym-calendar-'))
  const stats = await Promise.all(logs.map(async (f) => ({f, t: (await fs.stat(path.join(checkout.root, 'log', f))).mtimeMs})))
  const logFile = path.join(checkout.root, 'log', stats.sort((a, b) => b.t - a.t)[0].f)
  return {name, exitCode: result.exitCode ?? -1, output, submissionId, logFile, expDir: env.EXP_DIR, workerLogs, leakState, env}
}

async function verifyTraining(run: Run, extra: Record<string, unknown> = {}) {
  const ctx = await rungContext(checkout.root, 'calendar', {env: run.env, workerLogs: [run.workerLogs], ...extra})
  return runRungChecks(trainingRung, ctx)
}

describe('training rung on the mini Relax', () => {
  it('[calendar#14] passes a real multi-sample run: dumps, varied groups, a finite step, a checkpoint, clean logs, active_trials 0', async () => {
    const run = await train('pass', {max_rollouts: 2})
    expect(run.exitCode, run.output).toBe(0)
    expect(run.output).toContain(`Job '${run.submissionId}' succeeded`)
    expect(run.output).toContain('Converted 5 NeMo Gym row(s)')
    expect(run.output).toMatch(/Saved rollout result \(16 samples\) to \S+\/Qwen3-4B_mcore_8xgpu\/rollout_result\/train\/0\.jsonl/)
    // The job log is found without help (newest log/<name>-<time>.log in the Relax root).
    const results = await verifyTraining(run)
    expect(failures(results)).toBe('')
    const r = byId(results)
    expect(r['training.rollout-dumps'].message).toMatch(/^32 sample\(s\) in 2 dump file\(s\)/)
    expect(r['training.groups'].message).toBe('4 group(s) of 8 samples; 4 with reward variance (non-zero advantage)')
    expect(r['training.optimizer-step'].message).toMatch(/^2 optimizer step\(s\) with a finite grad norm \(last: step 1, grad_norm [0-9.]+\) in \S+\.log$/)
    expect(r['training.checkpoint'].message).toMatch(/iter_0000002 \(latest_checkpointed_iteration\.txt = 2\)$/)
    expect(r['training.logs-clean'].message).toBe('no OOM or traceback in the driver log and 2 worker log file(s)')
    expect(r['training.gateway-clean'].status).toBe('pass')
    expect(r['training.job-state']).toBeUndefined() // no recorded submission

    // The dump records carry Relax's fields and real rewards from the calendar verifier.
    const dump = (await fs.readFile(path.join(run.expDir, 'Qwen3-4B_mcore_8xgpu', 'rollout_result', 'train', '0.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l))
    expect(dump).toHaveLength(16)
    expect(dump[0]).toMatchObject({rollout_id: 0, group_index: 0, status: 'completed', agent_turns: 1, image_count: 0})
    expect(dump.map((d) => d.reward)).toEqual([1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0])
    expect(dump[0].prompt).toContain('<|im_start|>system')

    // With the submission recorded (as `gymrecipe train` does), the log comes from the Ray Jobs API.
    await writeRunState({recipe: 'calendar', recipeDir, submissionId: run.submissionId, dashboardAddress: ray.url, logFile: null, submittedAt: new Date().toISOString(), smoke: false}, run.env)
    try {
      const recorded = byId(await verifyTraining(run))
      expect(recorded['training.optimizer-step'].message).toContain(`in Ray job ${run.submissionId} on ${ray.url}`)
      expect(recorded['training.job-state']).toMatchObject({status: 'pass', message: `job ${run.submissionId} SUCCEEDED (not proof by itself: the other checks are)`})
    } finally {
      await fs.rm(path.join(tmp, 'state'), {recursive: true, force: true})
    }

    // After the run: the training rung on its own, without climbing static → trial again.
    const only = await runCli(['verify', 'calendar', '--only', 'training', '--relax-root', checkout.root, '--worker-log', run.workerLogs, '--json'], {env: run.env})
    expect(only.exitCode, only.stdout).toBe(0)
    expect(only.json).toMatchObject({level: 'training', climbed: false, status: 'pass'})
    expect(only.json.rungs.map((x: any) => [x.rung, x.status])).toEqual([['training', 'pass']])
    const text = await runCli(['verify', 'calendar', '--only', 'training', '--relax-root', checkout.root, '--worker-log', run.workerLogs], {env: run.env})
    expect(text.exitCode).toBe(0)
    expect(text.stdout.trim().split('\n').slice(-2)).toEqual([
      'calendar: the training rung passed on its own; the ladder was not climbed, so the recipe is not verified',
      `next: climb the whole ladder with gymrecipe verify calendar --level training --relax-root ${checkout.root}`,
    ])
    const both = await runCli(['verify', 'calendar', '--only', 'training', '--level', 'trial', '--relax-root', checkout.root], {env: run.env})
    expect(both.exitCode).toBe(2)
  })

  it('fails when all rewards are equal, with the triage verdict "the model answered wrongly"', async () => {
    const run = await train('all-equal', {fault: 'all_rewards_equal'})
    expect(run.exitCode, run.output).toBe(0)
    const r = byId(await verifyTraining(run, {jobLog: run.logFile}))
    expect(r['training.groups'].status).toBe('fail')
    expect(r['training.groups'].message).toBe('every reward is 0: zero advantage in all 2 group(s), nothing to learn from; triage: the model answered wrongly (16 model)')
    expect((r['training.groups'].evidence as any).triage.verdict).toBe('model')
    expect(r['training.optimizer-step'].status).toBe('pass') // a degenerate step is still a step line
    expect((r['training.optimizer-step'].evidence as any).degenerate_batches).toBe(1)
  })

  it('[workplace-assistant#12] [r2e-gym#19] fails with one sample per prompt (zero advantage by construction)', async () => {
    const run = await train('one-sample', {fault: 'one_sample_per_prompt'})
    const r = byId(await verifyTraining(run, {jobLog: run.logFile}))
    expect(r['training.groups'].status).toBe('fail')
    expect(r['training.groups'].message).toMatch(/^2 of 2 group\(s\) have fewer than 4 samples \(sizes 1\): one sample per prompt gives zero GRPO advantage by construction; every reward is 1/)
    expect(r['training.groups'].hint).toBe('Use --n-samples-per-prompt >= 4 in the training script.')
  })

  it('fails without a step line', async () => {
    const run = await train('no-step', {fault: 'no_step_line'})
    const r = byId(await verifyTraining(run, {jobLog: run.logFile}))
    expect(r['training.optimizer-step'].status).toBe('fail')
    expect(r['training.optimizer-step'].message).toBe(`no optimizer step in the job log ${run.logFile} (no "step N: {... 'train/grad_norm': ...}" line), although 1 rollout result(s) were saved`)
    expect(r['training.groups'].status).toBe('pass')
  })

  it('fails on a NaN grad norm', async () => {
    const run = await train('nan', {fault: 'nan_grad_norm'})
    const r = byId(await verifyTraining(run, {jobLog: run.logFile}))
    expect(r['training.optimizer-step'].status).toBe('fail')
    expect(r['training.optimizer-step'].message).toBe('1 step line(s) but no finite train/grad_norm (step 0: grad_norm NaN): every step was skipped')
    expect(r['training.optimizer-step'].file).toBe(run.logFile)
  })

  it('[calendar#14] fails without a checkpoint', async () => {
    const run = await train('no-ckpt', {fault: 'missing_checkpoint'})
    const r = byId(await verifyTraining(run, {jobLog: run.logFile}))
    expect(r['training.checkpoint'].status).toBe('fail')
    expect(r['training.checkpoint'].message).toBe(`no checkpoint: ${path.join(run.expDir, 'Qwen3-4B_mcore_8xgpu', 'latest_checkpointed_iteration.txt')} is missing and there is no iter_* directory`)
  })

  it('[workplace-assistant#13] [r2e-gym#18] [gsm8k#10] fails on an OOM in a worker log although the job SUCCEEDED', async () => {
    const run = await train('oom', {fault: 'worker_oom'})
    expect(run.output).toContain(`Job '${run.submissionId}' succeeded`)
    const r = byId(await verifyTraining(run, {jobLog: run.logFile}))
    expect(r['training.logs-clean'].status).toBe('fail')
    expect(r['training.logs-clean'].message).toMatch(/^1 OOM line\(s\) and 1 traceback\(s\); first in \S+\/worker-[0-9a-f]+-01000000-\d+\.err:5: torch\.OutOfMemoryError: CUDA out of memory\./)
    // Without the worker logs the driver log alone looks clean: say so.
    const blind = byId(await verifyTraining(run, {jobLog: run.logFile, workerLogs: []}))
    expect(blind['training.logs-clean'].message).toBe('no OOM or traceback in the driver log (no worker logs given: pass --worker-log to scan Ray worker logs)')
  })

  it('fails on a traceback in the driver log', async () => {
    const run = await train('driver-tb', {fault: 'driver_traceback'})
    const r = byId(await verifyTraining(run, {jobLog: run.logFile}))
    expect(r['training.logs-clean'].status).toBe('fail')
    expect(r['training.logs-clean'].message).toMatch(/^1 traceback\(s\); first in \S+\.log:\d+: KeyError: 'rollout_turns'$/)
  })

  it('fails when a trial leaked on the Gateway (active_trials > 0 after the run)', async () => {
    const run = await train('leak', {fault: 'leaked_trial', leak_hold_s: 120})
    const leak = JSON.parse(await fs.readFile(run.leakState, 'utf8'))
    try {
      const r = byId(await verifyTraining(run, {jobLog: run.logFile}))
      expect(r['training.gateway-clean'].status).toBe('fail')
      expect(r['training.gateway-clean'].message).toBe(`active_trials=1 on http://${HOST}:${layout.gateway} after the run: a trial leaked (a requester died without aborting, or an actor still hangs)`)
      expect(r['training.groups'].status).toBe('pass')
    } finally {
      process.kill(leak.pid, 'SIGTERM')
    }
    // Once the hung actor is gone the Gateway settles back to zero.
    const deadline = Date.now() + 20_000
    let active = -1
    while (Date.now() < deadline && active !== 0) {
      active = (await waitForReadyz(`http://${HOST}:${layout.gateway}`)).active_trials
      if (active !== 0) await new Promise((resolve) => setTimeout(resolve, 200))
    }
    expect(active).toBe(0)
  })
})
