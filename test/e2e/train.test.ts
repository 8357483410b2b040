/**
 * `gymrecipe train` and `gymrecipe status` as a user runs them (built CLI), on a recipe generated
 * into the fixture Relax checkout, against the fixture Gym/Gateway (host run) and the Ray
 * emulators (fake Ray Jobs server on 127.0.0.1 + fake `ray` first on PATH, so the generated
 * training script runs unmodified). Most runs replace the job entrypoint (run_training.sh) in this
 * test's copy of the checkout with a small stub whose behaviour the test picks; the last ones run
 * the fixture mini Relax for real. Only 127.0.0.1 is contacted; everything started is stopped by id.
 */
import {execa} from 'execa'
import {randomBytes} from 'node:crypto'
import fs from 'node:fs/promises'
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {rayJobsClient} from '../../src/runtime/ray-jobs.js'
import {runStatePath} from '../../src/runtime/run-state.js'
import {newRecipe} from '../../src/scaffold/new-recipe.js'
import {repoRoot, runCli, snapshotRoot} from '../helpers/cli.js'
import {BASE_IMAGE, dockerOk, dockerUnavailableReason, removeByLabel, uniqueTestLabel} from '../helpers/docker.js'
import {type FakeRay, startFakeRay, waitFor} from '../helpers/ray-fixture.js'
import {repeatedRows} from '../helpers/recipes.js'
import {CALENDAR_GRAPH, freePortBlock, type GymLayout, type HostGym, makeRelaxCheckout, type RelaxCheckout, startHostGym, waitForReadyz, writeFaults} from '../helpers/relax-fixture.js'

const HOST = '127.0.0.1'
const dockerReason = await dockerUnavailableReason()
if (dockerReason) console.error(`\n!! train e2e: Docker-backed cases skipped: ${dockerReason}\n`)

const STUB = `#!/usr/bin/env bash
# Test stub standing in for run_training.sh; behaviour from ./stub-behaviour next to it.
set -u
here="$(cd "$(dirname "\${BASH_SOURCE[0]}")" && pwd)"
behaviour="$(cat "\${here}/stub-behaviour" 2>/dev/null || echo succeed)"
echo "stub: gateway=$1 source=$2 limit=$4 submission=\${RAY_JOB_SUBMISSION_ID:-}"
shift 4
while (( $# )); do
  case "$1" in
    --resource) echo "stub: resource=$2"; shift ;;
    --agent-command) echo "stub: agent-command=$2"; shift ;;
  esac
  shift
done
case "\${behaviour}" in
  succeed) sleep 1; echo "stub: training line"; exit 0 ;;
  fail) echo "Traceback (most recent call last):"; echo "RuntimeError: stub failure in the driver"; exit 3 ;;
  sleep) echo "stub: training forever"; exec sleep 300 ;;
  slow) echo "stub: training for a while"; sleep 20; echo "stub: training line"; exit 0 ;;
esac
`

/**
 * Runs the CLI on a pseudo-terminal: once the job is RUNNING, types Ctrl+C (the terminal sends
 * SIGINT to the foreground process group), then answers the prompt. Prints {code, output}.
 */
const PTY_DRIVER = String.raw`
import json, os, pty, select, sys, time
argv, answer = json.loads(sys.argv[1]), sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.execvpe(argv[0], argv, os.environ)
out = b""
def pump(until, timeout):
    global out
    deadline = time.time() + timeout
    while time.time() < deadline:
        if until is not None and until in out:
            return True
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return False
            if not data:
                return False
            out += data
    return False
pump(b"is RUNNING on", 150)
time.sleep(0.5)
os.write(fd, b"\x03")
if pump(b"[y/N]", 30):
    os.write(fd, answer.encode() + b"\r")
pump(None, 60)
_, status = os.waitpid(pid, 0)
print(json.dumps({"code": os.waitstatus_to_exitcode(status), "output": out.decode("utf-8", "replace")}))
`

let tmp: string
let checkout: RelaxCheckout
let recipeId: string
let recipeDir: string
let rawFile: string
let gatewayPort: number
let gym: HostGym
let ray: FakeRay
let miniRelaxScript: string
const scriptsDir = () => path.join(checkout.root, 'examples', 'nemo_gym_agentic', 'scripts')
const label = uniqueTestLabel('train-e2e')

function layoutAt(base: number): GymLayout {
  return {host: HOST, bindHost: HOST, gateway: base, agent: base + 1, resource: base + 2, head: base + 3, rayPort: base + 4, rayDashboardPort: base + 5}
}

const registration = {environment: 'calendar', config: 'calendar-v1', agentName: 'calendar_simple_agent'}

beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gr-train-'))
  checkout = await makeRelaxCheckout(path.join(tmp, 'relax'))
  miniRelaxScript = await fs.readFile(path.join(scriptsDir(), 'run_training.sh'), 'utf8')
  gatewayPort = await freePortBlock(6, 25000)
  recipeId = `caltrain-${randomBytes(3).toString('hex')}`
  const generated = await newRecipe({
    id: recipeId,
    gymRoot: snapshotRoot,
    gymConfigs: ['environments/calendar/config.yaml'],
    relaxRoot: checkout.root,
    from: 'calendar',
    smoke: false,
    force: false,
    dryRun: false,
    version: 'test',
    portBase: gatewayPort,
  })
  recipeDir = generated.dir
  await fs.mkdir(path.join(tmp, 'models', 'Qwen3-4B'), {recursive: true})
  await fs.writeFile(path.join(tmp, 'models', 'Qwen3-4B', 'config.json'), '{"architectures": ["Qwen3ForCausalLM"]}\n')
  await fs.mkdir(path.join(tmp, 'data', 'nemo-gym'), {recursive: true})
  rawFile = path.join(tmp, 'data', 'nemo-gym', `${recipeId.replaceAll('-', '_')}_train.jsonl`)
  await fs.writeFile(rawFile, await repeatedRows(path.join(snapshotRoot, 'environments', 'calendar', 'data', 'example.jsonl')))
  gym = await startHostGym(checkout, {layout: layoutAt(gatewayPort), graph: CALENDAR_GRAPH, registration})
  await waitForReadyz(`http://${HOST}:${gatewayPort}`)
  ray = await startFakeRay({stopGraceS: 1})
}, 240_000)

afterAll(async () => {
  await gym?.stop()
  await ray?.stop()
  if (!dockerReason) await removeByLabel(label)
  if (tmp) await fs.rm(tmp, {recursive: true, force: true})
})

async function useStub(behaviour: 'succeed' | 'fail' | 'sleep' | 'slow'): Promise<void> {
  await fs.writeFile(path.join(scriptsDir(), 'run_training.sh'), STUB)
  await fs.writeFile(path.join(scriptsDir(), 'stub-behaviour'), behaviour)
}

async function useMiniRelax(fault?: string): Promise<void> {
  await fs.writeFile(path.join(scriptsDir(), 'run_training.sh'), miniRelaxScript)
  const config = path.join(checkout.root, 'relax', 'fixture_train.json')
  if (fault) await fs.writeFile(config, JSON.stringify({fault}))
  else await fs.rm(config, {force: true})
}

function userEnv(overrides: Record<string, string | undefined> = {}, fakeRay: FakeRay = ray): Record<string, string | undefined> {
  return {
    ...fakeRay.env(),
    XDG_STATE_HOME: path.join(tmp, 'state'),
    MODEL_DIR: path.join(tmp, 'models'),
    GYM_HOST: HOST,
    NEMO_GYM_SOURCE_DATA: rawFile,
    EXP_DIR: path.join(tmp, 'exp'),
    RAY_DASHBOARD_ADDRESS: fakeRay.url,
    RAY_NO_WAIT: undefined,
    RAY_ADDRESS: undefined,
    RELAX_SUBMISSION_ID: undefined,
    // The data rung's shared-storage probe needs a local image.
    GYMRECIPE_PROBE_IMAGE: BASE_IMAGE,
    ...overrides,
  }
}

function train(args: string[], env: Record<string, string | undefined> = userEnv()) {
  return runCli(['train', recipeId, '--relax-root', checkout.root, '--poll-interval', '1', ...args], {env, timeout: 240_000})
}

async function submissions(fakeRay: FakeRay = ray): Promise<string[]> {
  return (await fakeRay.requests()).filter((r) => r.method === 'POST' && r.path === '/api/jobs/').map((r) => String(r.submission_id))
}

async function deadPort(): Promise<number> {
  const server = http.createServer()
  await new Promise<void>((resolve) => server.listen(0, HOST, resolve))
  const port = (server.address() as AddressInfo).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

function item(json: any, id: string): any {
  return json.preflight.find((i: any) => i.id === id)
}

const ownPrefix = () => `relax-nemo-gym-${recipeId}-`

describe('train: pre-flight (nothing is submitted unless every check passes)', () => {
  it('--dry-run runs the pre-flight, prints the command and submits nothing', async () => {
    const before = await submissions()
    const r = await train(['--dry-run'])
    expect(r.exitCode, r.stdout + r.stderr).toBe(0)
    for (const title of ['Model directory and config.json', 'Source data is the raw Gym file', 'Data rung passes', 'Gateway ready with zero active trials', 'Training targets the running service port', 'Ray dashboard reachable']) {
      expect(r.stdout).toContain(`✔ ${title}`)
    }
    // gymrecipe plays the harmless part of Relax's entrypoint so the script never sources local.sh.
    expect(r.stdout).toMatch(new RegExp(`Would run \\(in ${checkout.root}\\): RELAX_ENTRYPOINT_MODE=gymrecipe MODEL_CONFIG_DIR=${checkout.root}/scripts/models RUNTIME_ENV_JSON='\\{"env_vars":\\{\\}\\}' RELAX_SUBMISSION_ID=${ownPrefix()}\\d{8}-\\d{6}-[0-9a-f]{6} RAY_DASHBOARD_ADDRESS=${ray.url} bash examples/nemo_gym_agentic/recipes/${recipeId}/run-qwen3-4B-8xgpu-nemo-gym-${recipeId}\\.sh`))
    expect(r.stdout).toContain('the script waits for the job')
    expect(await submissions()).toEqual(before)
  })

  it('credentials in RAY_DASHBOARD_ADDRESS and a RAY_JOB_HEADERS value with a line break never reach text, --json or errors', async () => {
    const url = new URL(ray.url)
    const planted = [
      {RAY_DASHBOARD_ADDRESS: `http://ops:dash-password-42@${url.host}`},
      {RAY_JOB_HEADERS: JSON.stringify({'x-ray-authorization': 'Bearer tok-first-half\r\nsecond-half-99'})},
    ]
    for (const overrides of planted) {
      for (const args of [['--dry-run'], ['--dry-run', '--json']]) {
        const r = await train(args, userEnv(overrides))
        const out = r.stdout + r.stderr
        for (const secret of ['dash-password-42', 'tok-first-half', 'second-half-99']) expect({args, secret, leaked: out.includes(secret)}).toEqual({args, secret, leaked: false})
        // Userinfo in the dashboard URL authenticates (Basic), as with Ray's own client.
        if ('RAY_DASHBOARD_ADDRESS' in overrides) expect(r.exitCode, out).toBe(0)
        // A header value with a line break is bad input (exit 2, as the help says), named without its value.
        if ('RAY_JOB_HEADERS' in overrides) {
          expect(r.exitCode).toBe(2)
          if (args.includes('--json')) expect(r.json.error).toMatchObject({code: 'E_RAY_HEADERS', message: 'RAY_JOB_HEADERS: the value of header x-ray-authorization contains a line break'})
        }
      }
    }
 }, 240_000)

  it('a RUNTIME_ENV_JSON of the caller (it may carry tokens) is inherited, never printed', async () => {
    const secret = 'hf_secret_token_in_runtime_env'
    const env = userEnv({RUNTIME_ENV_JSON: JSON.stringify({env_vars: {HF_TOKEN: secret}})})
    for (const args of [['--dry-run'], ['--dry-run', '--json']]) {
      const r = await train(args, env)
      expect(r.exitCode, r.stdout + r.stderr).toBe(0)
      expect(r.stdout + r.stderr).not.toContain(secret)
      expect(r.stdout).toContain('RELAX_ENTRYPOINT_MODE=gymrecipe')
    }
 }, 180_000)

  it('a missing model directory fails the pre-flight (exit 3)', async () => {
    const before = await submissions()
    const r = await train(['--json'], userEnv({MODEL_DIR: path.join(tmp, 'no-models')}))
    expect(r.exitCode).toBe(3)
    expect(r.json.outcome).toBe('preflight-failed')
    expect(item(r.json, 'model')).toMatchObject({status: 'fail', message: `model directory ${path.join(tmp, 'no-models', 'Qwen3-4B')} does not exist`})
    expect(r.json.preflight.filter((i: any) => i.status === 'fail').map((i: any) => i.id)).toEqual(['model'])
    expect(await submissions()).toEqual(before)
  })

  it('a *_relax.jsonl source fails the pre-flight', async () => {
    const preview = rawFile.replace(/\.jsonl$/, '_relax.jsonl')
    await fs.copyFile(rawFile, preview)
    const before = await submissions()
    const r = await train(['--json'], userEnv({NEMO_GYM_SOURCE_DATA: preview}))
    expect(r.exitCode).toBe(3)
    expect(item(r.json, 'source-data')).toMatchObject({status: 'fail', message: `${preview} is the converted preview, not the raw file`})
    expect(item(r.json, 'data-rung').status).toBe('fail')
    expect(await submissions()).toEqual(before)
  })

  it('a Gateway that is not ready, or has active trials, fails the pre-flight', async () => {
    const before = await submissions()
    const notReadyPort = await freePortBlock(6, 25400)
    await writeFaults(checkout, {never_ready: true})
    const notReady = await startHostGym(checkout, {layout: layoutAt(notReadyPort), graph: CALENDAR_GRAPH, registration})
    try {
      await waitFor(() => fetch(`http://${HOST}:${notReadyPort}/readyz`).then((x) => x.status), (s) => s === 503, 20_000, 'a 503 /readyz')
      const r = await train(['--json'], userEnv({NEMO_GYM_GATEWAY_PORT: String(notReadyPort)}))
      expect(r.exitCode).toBe(3)
      expect(item(r.json, 'gateway')).toMatchObject({status: 'fail', message: `http://${HOST}:${notReadyPort}/readyz is not ready (HTTP 503, ready=false)`})
    } finally {
      await notReady.stop()
    }
    const stalePort = await freePortBlock(6, 25600)
    await writeFaults(checkout, {stale_trials: 2})
    const stale = await startHostGym(checkout, {layout: layoutAt(stalePort), graph: CALENDAR_GRAPH, registration})
    try {
      await waitForReadyz(`http://${HOST}:${stalePort}`)
      await writeFaults(checkout, undefined)
      const r = await train(['--json'], userEnv({NEMO_GYM_GATEWAY_PORT: String(stalePort)}))
      expect(r.exitCode).toBe(3)
      const gateway = item(r.json, 'gateway')
      expect(gateway.status).toBe('fail')
      expect(gateway.message).toContain('2 active trial(s)')
      expect(gateway.evidence.active_trials).toBe(2)
    } finally {
      await writeFaults(checkout, undefined)
      await stale.stop()
    }
    // Another recipe's Gateway, ready and idle, on the port the script targets: not this recipe's service.
    const foreignPort = await freePortBlock(6, 25800)
    const foreign = await startHostGym(checkout, {layout: layoutAt(foreignPort), graph: CALENDAR_GRAPH, registration: {...registration, config: 'other-recipe-v1'}})
    try {
      await waitForReadyz(`http://${HOST}:${foreignPort}`)
      const r = await train(['--dry-run', '--json'], userEnv({NEMO_GYM_GATEWAY_PORT: String(foreignPort)}))
      expect(r.exitCode).toBe(3)
      expect(item(r.json, 'gateway')).toMatchObject({status: 'fail', message: `the Gateway on http://${HOST}:${foreignPort} does not register calendar/calendar-v1: it is another recipe's service`})
      expect((await fetch(`http://${HOST}:${foreignPort}/readyz`).then((x) => x.json())).trials).toBe(0)
    } finally {
      await foreign.stop()
    }
    expect(await submissions()).toEqual(before)
  }, 240_000)

  it.skipIf(Boolean(dockerReason))('a running service on another port than the training script uses fails the pre-flight', async () => {
    const other = gatewayPort + 7
    await dockerOk(['run', '-d', '--network', 'host', '--name', `nemo-gym-${recipeId}`, '--label', `ai.relax.recipe=${recipeId}`, '--label', label, '-e', `NEMO_GYM_GATEWAY_PORT=${other}`, BASE_IMAGE, 'sleep', 'infinity'])
    try {
      const before = await submissions()
      const r = await train(['--json'])
      expect(r.exitCode).toBe(3)
      expect(item(r.json, 'gateway-port')).toMatchObject({
        status: 'fail',
        message: `the training script would use port ${gatewayPort} (NEMO_GYM_GATEWAY_PORT) but the service listens on ${other} (container nemo-gym-${recipeId} NEMO_GYM_GATEWAY_PORT)`,
      })
      expect(await submissions()).toEqual(before)
    } finally {
      await removeByLabel(label)
    }
  })

  it('an unreachable dashboard (loopback port nobody listens on) fails the pre-flight', async () => {
    const port = await deadPort()
    const r = await train(['--json'], userEnv({RAY_DASHBOARD_ADDRESS: `http://${HOST}:${port}`}))
    expect(r.exitCode, r.stdout + r.stderr).toBe(3)
    const dashboard = item(r.json, 'ray-dashboard')
    expect(dashboard.status).toBe('fail')
    expect(dashboard.message).toContain(`http://${HOST}:${port} (RAY_DASHBOARD_ADDRESS): Ray dashboard http://${HOST}:${port} did not answer GET /api/version`)
  })

  it('the dashboard derives from RAY_ADDRESS (host:port → http://host:RAY_DASHBOARD_PORT) like the script', async () => {
    const r = await train(['--json', '--dry-run'], userEnv({RAY_DASHBOARD_ADDRESS: undefined, RAY_ADDRESS: `${HOST}:6379`, RAY_DASHBOARD_PORT: String(ray.port)}))
    expect(r.exitCode, r.stdout + r.stderr).toBe(0)
    expect(r.json.dashboard_address).toBe(ray.url)
    expect(item(r.json, 'ray-dashboard').evidence.source).toContain('RAY_ADDRESS host')
  })
})

describe('the generated training script against the Ray emulators', () => {
  it('a reused submission id is rejected by Ray (HTTP 500) and the first job is untouched', async () => {
    await useStub('sleep')
    const id = `${ownPrefix()}dup-${randomBytes(3).toString('hex')}`
    const script = path.join(recipeDir, `run-qwen3-4B-8xgpu-nemo-gym-${recipeId}.sh`)
    const env = {...process.env, ...userEnv({RELAX_SUBMISSION_ID: id, RAY_NO_WAIT: '1'})} as Record<string, string>
    const first = await execa('bash', [script], {cwd: checkout.root, env, reject: false, all: true})
    expect(first.exitCode, String(first.all)).toBe(0)
    const second = await execa('bash', [script], {cwd: checkout.root, env, reject: false, all: true})
    expect(second.exitCode).not.toBe(0)
    expect(String(second.all)).toContain(`Job with submission_id ${id} already exists. Please use a different submission_id.`)
    const job = await (await fetch(`${ray.url}/api/jobs/${id}`)).json()
    expect(job.status).toBe('RUNNING')
    await rayJobsClient(ray.url).stop(id)
    await waitFor(() => fetch(`${ray.url}/api/jobs/${id}`).then((x) => x.json()), (j: any) => j.status === 'STOPPED', 10_000, 'STOPPED')
  })
})

describe('train: submit, follow, prove', () => {
  it('waits by default: the script tails the job, gymrecipe records it; SUCCEEDED without training outputs is a failure (exit 4)', async () => {
    await useStub('succeed')
    // Relax's real local.sh may pkill python/ray; gymrecipe must never let the script source it.
    const localSh = path.join(checkout.root, 'scripts', 'entrypoint', 'local.sh')
    const marker = path.join(tmp, 'local-sh-sourced')
    const original = await fs.readFile(localSh, 'utf8')
    await fs.writeFile(localSh, `${original}\necho sourced > ${JSON.stringify(marker)}\n`)
    const r = await train(['--json']).finally(() => fs.writeFile(localSh, original))
    await expect(fs.stat(marker)).rejects.toThrow()
    expect(r.exitCode, r.stderr).toBe(4)
    const report = r.json
    expect(report.outcome).toBe('training-rung-failed')
    expect(report.job.status).toBe('SUCCEEDED')
    expect(report.waits).toBe(true)
    expect(report.message).toContain('SUCCEEDED but the training rung failed')
    expect(report.training_rung.status).toBe('fail')
    const byId = Object.fromEntries(report.training_rung.checks.map((c: any) => [c.id, c.status]))
    expect(byId['training.rollout-dumps']).toBe('fail')
    expect(byId['training.checkpoint']).toBe('fail')
    expect(byId['training.job-state']).toBe('pass')
    // The script's own `ray job submit` waited (no --no-wait) under the id gymrecipe chose.
    const call = (await ray.cliCalls()).find((c) => c.argv.includes(`--submission-id=${report.submission_id}`))!
    expect(call.argv).not.toContain('--no-wait')
    // The entrypoint survived the CLI's join and the cluster's /bin/sh intact.
    const logs = await (await fetch(`${ray.url}/api/jobs/${report.submission_id}/logs`)).json()
    expect(logs.logs).toContain('stub: resource={"actor":[1,8],"rollout":[1,8]}')
    expect(logs.logs).toMatch(/stub: agent-command=\. \/.*\/scripts\/run_agent_app\.sh/)
    // As on a real cluster, the job does not see its own submission id.
    expect(logs.logs).toMatch(/submission=$/m)
    // Recorded outside the checkout, with the script's tee log.
    const state = JSON.parse(await fs.readFile(runStatePath(recipeDir, {XDG_STATE_HOME: path.join(tmp, 'state')}), 'utf8'))
    expect(state).toMatchObject({recipe: recipeId, submissionId: report.submission_id, dashboardAddress: ray.url, smoke: false})
    expect(state.logFile).toMatch(new RegExp(`/log/qwen3-4B-8xgpu-nemo-gym-${recipeId}-.+\\.log$`))
    expect(await fs.readFile(state.logFile, 'utf8')).toContain('stub: training line')
  })

  it('human output streams the job log once while the script waits', async () => {
    await useStub('succeed')
    const r = await train([])
    expect(r.exitCode).toBe(4)
    expect(r.stdout).toContain('Tailing logs until the job exits (disable with --no-wait):')
    expect(r.stdout.split('stub: training line').length - 1).toBe(1)
    expect(r.stdout).toContain('SUCCEEDED; a job state is not proof')
    expect(r.stderr + r.stdout).toContain('SUCCEEDED but the training rung failed')
  })

  it('RAY_NO_WAIT=1: the script returns after submission and gymrecipe follows the job through the REST API', async () => {
    await useStub('succeed')
    const r = await train([], userEnv({RAY_NO_WAIT: '1'}))
    expect(r.exitCode).toBe(4)
    const id = /RELAX_SUBMISSION_ID=(\S+)/.exec(r.stdout)![1]
    const call = (await ray.cliCalls()).find((c) => c.argv.includes(`--submission-id=${id}`))!
    expect(call.argv).toContain('--no-wait')
    expect(r.stdout).not.toContain('Tailing logs until the job exits')
    expect(r.stdout).toContain(`gymrecipe: following ${id} through the Ray Jobs API`)
    expect(r.stdout.split('stub: training line').length - 1).toBe(1)
    expect(r.stdout).toContain('the script returns after submission (RAY_NO_WAIT=1)')
  })

  it('a FAILED job exits 1 with the log tail and never runs the training rung', async () => {
    await useStub('fail')
    const r = await train(['--json'])
    expect(r.exitCode).toBe(1)
    expect(r.json.outcome).toBe('job-failed')
    expect(r.json.job).toMatchObject({status: 'FAILED', driver_exit_code: 3, error_type: 'JOB_ENTRYPOINT_COMMAND_ERROR'})
    expect(r.json.log_tail.at(-1)).toBe('RuntimeError: stub failure in the driver')
    expect(r.json.training_rung).toBeNull()
    expect(r.json.job).not.toHaveProperty('runtime_env')
    const human = await train([])
    expect(human.exitCode).toBe(1)
    expect(human.stdout).toContain('  | RuntimeError: stub failure in the driver')
  }, 180_000)

  it('Ctrl+C with --stop-on-interrupt stops only its own submission, by id (never `ray stop`)', async () => {
    await useStub('sleep')
    const foreign = `someone-elses-job-${randomBytes(3).toString('hex')}`
    await rayJobsClient(ray.url).submit({entrypoint: 'sleep 300', submission_id: foreign})
    const child = execa(process.execPath, [path.join(repoRoot, 'bin', 'run.js'), 'train', recipeId, '--relax-root', checkout.root, '--poll-interval', '1', '--stop-on-interrupt', '--json'], {
      env: {NO_COLOR: '1', ...userEnv()},
      reject: false,
    })
    try {
      const own = await waitFor(
        async () => ((await (await fetch(`${ray.url}/api/jobs/`)).json()) as any[]).find((j) => j.submission_id.startsWith(ownPrefix()) && j.status === 'RUNNING' && j.entrypoint.includes('run_training.sh')),
        (j) => Boolean(j) && !(j.submission_id as string).includes('-dup-'),
        120_000,
        'own job RUNNING',
      )
      child.kill('SIGINT')
      const result = await child
      expect(result.exitCode).toBe(130)
      const report = JSON.parse(String(result.stdout)).result
      expect(report.outcome).toBe('interrupted')
      expect(report.submission_id).toBe(own.submission_id)
      expect(report.job.status).toBe('STOPPED')
      expect(((await (await fetch(`${ray.url}/api/jobs/${foreign}`)).json()) as any).status).toBe('RUNNING')
      const stops = (await ray.requests()).filter((r) => r.method === 'POST' && r.path.endsWith('/stop')).map((r) => r.submission_id)
      expect(stops).toContain(own.submission_id)
      expect(stops).not.toContain(foreign)
      expect((await ray.cliCalls()).filter((c) => c.argv[0] !== 'job')).toEqual([])
    } finally {
      child.kill('SIGKILL')
      await rayJobsClient(ray.url).stop(foreign)
    }
  }, 180_000)

  it('Ctrl+C without a terminal leaves the job running and prints the exact stop command', async () => {
    await useStub('sleep')
    const child = execa(process.execPath, [path.join(repoRoot, 'bin', 'run.js'), 'train', recipeId, '--relax-root', checkout.root, '--poll-interval', '1'], {
      env: {NO_COLOR: '1', ...userEnv()},
      reject: false,
      all: true,
    })
    let ownId: string | undefined
    try {
      const own = await waitFor(
        async () => ((await (await fetch(`${ray.url}/api/jobs/`)).json()) as any[]).filter((j) => j.submission_id.startsWith(ownPrefix()) && j.status === 'RUNNING' && !j.submission_id.includes('-dup-')),
        (jobs) => jobs.length === 1,
        120_000,
        'own job RUNNING',
      )
      ownId = own[0].submission_id
      child.kill('SIGINT')
      const result = await child
      expect(result.exitCode).toBe(130)
      expect(String(result.all)).toContain(`stop it with: ray job stop --address=${ray.url} ${ownId}`)
      expect(((await (await fetch(`${ray.url}/api/jobs/${ownId}`)).json()) as any).status).toBe('RUNNING')
    } finally {
      child.kill('SIGKILL')
      if (ownId) await rayJobsClient(ray.url).stop(ownId)
    }
  }, 180_000)

  it.each([
    ['y', 'STOPPED'],
    ['n', 'RUNNING'],
  ])('Ctrl+C on a terminal asks before stopping its own job (answer %s → %s)', async (answer, expected) => {
    await useStub('sleep')
    const driver = await execa('python3', ['-c', PTY_DRIVER, JSON.stringify([process.execPath, path.join(repoRoot, 'bin', 'run.js'), 'train', recipeId, '--relax-root', checkout.root, '--poll-interval', '1']), answer], {
      env: {NO_COLOR: '1', ...userEnv()},
      reject: false,
      timeout: 180_000,
    })
    expect(driver.exitCode, String(driver.stderr)).toBe(0)
    const result = JSON.parse(String(driver.stdout))
    const output = String(result.output)
    expect(result.code, output).toBe(130)
    const id = /RELAX_SUBMISSION_ID=(\S+)/.exec(output)![1]
    expect(output).toContain(`Stop Ray job ${id} (this run's own submission) on ${ray.url}? [y/N]`)
    const job = (await (await fetch(`${ray.url}/api/jobs/${id}`)).json()) as any
    if (expected === 'STOPPED') await waitFor(() => fetch(`${ray.url}/api/jobs/${id}`).then((x) => x.json()), (j: any) => j.status === 'STOPPED', 10_000, 'STOPPED')
    else expect(job.status).toBe('RUNNING')
    if (expected === 'RUNNING') {
      expect(output).toContain(`stop it with: ray job stop --address=${ray.url} ${id}`)
      await rayJobsClient(ray.url).stop(id)
    }
  }, 180_000)

  it('losing the dashboard while following is reported (exit 1) with how to check and stop the job, not as a result', async () => {
    const doomed = await startFakeRay({stopGraceS: 1})
    try {
      await useStub('sleep')
      const child = execa(process.execPath, [path.join(repoRoot, 'bin', 'run.js'), 'train', recipeId, '--relax-root', checkout.root, '--poll-interval', '1', '--json'], {
        env: {NO_COLOR: '1', ...userEnv({RAY_NO_WAIT: '1'}, doomed)},
        reject: false,
      })
      await waitFor(
        async () => ((await (await fetch(`${doomed.url}/api/jobs/`)).json()) as any[]).filter((j) => j.status === 'RUNNING'),
        (jobs) => jobs.length === 1,
        120_000,
        'job RUNNING',
      )
      await new Promise((resolve) => setTimeout(resolve, 1500))
      await doomed.stop()
      const result = await child
      expect(result.exitCode, String(result.stderr)).toBe(1)
      const report = JSON.parse(String(result.stdout)).result
      expect(report.outcome).toBe('follow-lost')
      expect(report.message).toContain(`stop it with ray job stop --address=${doomed.url} ${report.submission_id}`)
      expect(report.training_rung).toBeNull()
    } finally {
      await doomed.stop()
    }
  }, 180_000)

  it('RAY_JOB_HEADERS reach the cluster through the script and the REST client; the token is never printed', async () => {
    const token = `Bearer tok-${randomBytes(8).toString('hex')}`
    const secured = await startFakeRay({requireHeaders: [`x-ray-authorization=${token}`], stopGraceS: 1})
    try {
      await useStub('fail')
      const env = userEnv({RAY_JOB_HEADERS: JSON.stringify({'x-ray-authorization': token})}, secured)
      const r = await train(['--json'], env)
      expect(r.exitCode, r.stdout).toBe(1)
      expect(r.json.outcome).toBe('job-failed')
      expect(r.stdout + r.stderr).not.toContain(token.slice(7))
      const human = await train([], env)
      expect(human.stdout + human.stderr).not.toContain(token.slice(7))
      expect((await secured.requests()).every((q) => q.status !== 401)).toBe(true)
      const noHeaders = await train(['--json', '--dry-run'], userEnv({}, secured))
      expect(noHeaders.exitCode).toBe(3)
      expect(item(noHeaders.json, 'ray-dashboard').message).toContain('refused GET /api/version (HTTP 401')
    } finally {
      await secured.stop()
    }
  }, 180_000)
})

describe('Ray 2.58 in front of the cluster', () => {
  it("Ray's token auth (RAY_AUTH_MODE=token): pre-flight, the script's submission and gymrecipe's follow all pass; the token is never printed", async () => {
    const token = `tok-${randomBytes(8).toString('hex')}`
    const secured = await startFakeRay({authToken: token, stopGraceS: 1})
    try {
      await useStub('succeed')
      const env = userEnv({RAY_AUTH_MODE: 'token', RAY_AUTH_TOKEN: token}, secured)
      const r = await train(['--json'], env)
      expect(r.exitCode, r.stdout + r.stderr).toBe(4)
      expect(r.json.job.status).toBe('SUCCEEDED')
      expect(item(r.json, 'ray-dashboard').message).toContain('credentials: the token in RAY_AUTH_TOKEN')
      expect(r.stdout + r.stderr).not.toContain(token)
      const requests = await secured.requests()
      expect(requests.filter((q) => q.status === 401 || q.status === 403)).toEqual([])
      expect(requests.some((q) => q.method === 'POST' && q.path === '/api/jobs/' && q.status === 200)).toBe(true)
      const without = await train(['--json', '--dry-run'], userEnv({}, secured))
      expect(without.exitCode).toBe(3)
      expect(item(without.json, 'ray-dashboard').message).toContain('HTTP 401: Unauthorized: Missing authentication token')
    } finally {
      await secured.stop()
    }
  })

  it('a log stream that drops while the job runs: the script says training goes on, gymrecipe follows the job to its real end', async () => {
    const flaky = await startFakeRay({dropTailAfterS: 2, stopGraceS: 1})
    try {
      await useStub('slow')
      const env = userEnv({}, flaky)
      const script = path.join(recipeDir, `run-qwen3-4B-8xgpu-nemo-gym-${recipeId}.sh`)
      const alone = await execa('bash', [script], {cwd: checkout.root, env: {...process.env, ...env, RELAX_ENTRYPOINT_MODE: 'test', MODEL_CONFIG_DIR: path.join(checkout.root, 'scripts', 'models'), RUNTIME_ENV_JSON: '{"env_vars":{}}'} as Record<string, string>, reject: false, all: true})
      expect(alone.exitCode, String(alone.all)).toBe(3)
      expect(String(alone.all)).toMatch(/The log stream of \S+ ended, but the job is still RUNNING on .*: training goes on\./)
      const r = await train(['--json'], env)
      expect(r.json.script_exit_code).toBe(3)
      expect(r.json.job.status).toBe('SUCCEEDED')
      // Judged by the job and its outputs, never by the CLI's exit: no outputs, so the rung fails (4), not "job failed" (1).
      expect(r.json.outcome).toBe('training-rung-failed')
      expect(r.exitCode).toBe(4)
      expect(r.json.log_tail).toContain('stub: training line')
    } finally {
      await flaky.stop()
    }
  }, 180_000)
})

describe('train with the fixture mini Relax (real trials through the Gateway)', () => {
  it('SUCCEEDED and the training rung passes: exit 0', async () => {
    await useMiniRelax()
    const r = await train(['--json'])
    expect(r.exitCode, JSON.stringify(r.json?.training_rung ?? r.stderr, null, 1)).toBe(0)
    expect(r.json.outcome).toBe('succeeded')
    expect(r.json.training_rung.status).toBe('pass')
    expect(r.json.training_rung.checks.length).toBeGreaterThan(3)
  }, 180_000)

  it('SUCCEEDED but a NaN grad norm: the training rung fails, reported as failure (exit 4)', async () => {
    await useMiniRelax('nan_grad_norm')
    try {
      const r = await train(['--json'])
      expect(r.exitCode).toBe(4)
      expect(r.json.job.status).toBe('SUCCEEDED')
      expect(r.json.outcome).toBe('training-rung-failed')
      const failed = r.json.training_rung.checks.filter((c: any) => c.status === 'fail')
      expect(failed.map((c: any) => c.message).join('\n')).toMatch(/nan/i)
    } finally {
      await useMiniRelax()
    }
  }, 180_000)
})

describe('status', () => {
  it('shows the recorded job, the Gateway and the container at a glance (--json and human)', async () => {
    const r = await runCli(['status', recipeId, '--relax-root', checkout.root, '--json'], {env: userEnv()})
    expect(r.exitCode, r.stderr).toBe(0)
    expect(r.json.job.submission_id).toMatch(new RegExp(`^${ownPrefix()}`))
    expect(r.json.job.status).toMatch(/^(SUCCEEDED|FAILED|STOPPED)$/)
    expect(r.json.gateway).toMatchObject({url: `http://${HOST}:${gatewayPort}`, reachable: true, ready: true, active_trials: 0, registers: true, problem: null})
    expect(r.json.env_sh_sourced).toBe(true)
    expect(r.json.gateway.service_epoch).toMatch(/^[0-9a-f]{32}$/)
    expect(r.json.container).toMatchObject({name: `nemo-gym-${recipeId}`, exists: false})
    const human = await runCli(['status', recipeId, '--relax-root', checkout.root], {env: userEnv()})
    expect(human.stdout).toContain(`  job        ${r.json.job.submission_id}  ${r.json.job.status}  on ${ray.url}`)
    expect(human.stdout).toMatch(new RegExp(`  gateway    http://127\\.0\\.0\\.1:${gatewayPort}  ready  epoch [0-9a-f]{8}  trials \\d+  active 0`))
  })

  it("names another recipe's Gateway on this recipe's port", async () => {
    const foreignPort = await freePortBlock(6, 26000)
    const foreign = await startHostGym(checkout, {layout: layoutAt(foreignPort), graph: CALENDAR_GRAPH, registration: {...registration, config: 'other-recipe-v1'}})
    try {
      await waitForReadyz(`http://${HOST}:${foreignPort}`)
      const r = await runCli(['status', recipeId, '--relax-root', checkout.root, '--json'], {env: userEnv({NEMO_GYM_GATEWAY_PORT: String(foreignPort)})})
      expect(r.json.gateway).toMatchObject({ready: true, registers: false, problem: "does not register calendar/calendar-v1: another recipe's service"})
      const human = await runCli(['status', recipeId, '--relax-root', checkout.root], {env: userEnv({NEMO_GYM_GATEWAY_PORT: String(foreignPort)})})
      expect(human.stdout).toContain("(does not register calendar/calendar-v1: another recipe's service)")
    } finally {
      await foreign.stop()
    }
  }, 120_000)

  it.skipIf(Boolean(dockerReason))('reports the container state and its ownership label', async () => {
    await dockerOk(['run', '-d', '--network', 'host', '--name', `nemo-gym-${recipeId}`, '--label', `ai.relax.recipe=${recipeId}`, '--label', label, '-e', `NEMO_GYM_GATEWAY_PORT=${gatewayPort}`, BASE_IMAGE, 'sleep', 'infinity'])
    try {
      const r = await runCli(['status', recipeId, '--relax-root', checkout.root, '--json'], {env: userEnv()})
      expect(r.json.container).toMatchObject({exists: true, running: true, state: 'running', label: recipeId, owned: true, gateway_port: gatewayPort, image: BASE_IMAGE})
      const human = await runCli(['status', recipeId, '--relax-root', checkout.root], {env: userEnv()})
      expect(human.stdout).toContain(`  container  nemo-gym-${recipeId}  running  ai.relax.recipe=${recipeId}  image ${BASE_IMAGE}  port ${gatewayPort}`)
    } finally {
      await removeByLabel(label)
    }
  })

  it('a recipe that was never trained says so; an unreachable Gateway is reported, not hidden', async () => {
    const r = await runCli(['status', recipeId, '--relax-root', checkout.root, '--json'], {env: userEnv({XDG_STATE_HOME: path.join(tmp, 'empty-state'), NEMO_GYM_GATEWAY_PORT: String(await deadPort())})})
    expect(r.exitCode).toBe(0)
    expect(r.json.job).toBeNull()
    expect(r.json.gateway.reachable).toBe(false)
    expect(r.json.gateway.problem).toMatch(/^no answer: /)
  })
})
