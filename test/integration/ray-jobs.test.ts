/**
 * The Ray Jobs REST client (src/runtime/ray-jobs.ts) against the fake Ray Jobs server, and the fake
 * `ray` CLI against the same server (test/fixtures/ray). Everything on 127.0.0.1, OS-chosen ports.
 */
import {execa} from 'execa'
import {mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {GymError} from '../../src/errors.js'
import {
  dashboardAddressFromEnv,
  followJob,
  logTail,
  rayJobHeadersFromEnv,
  rayJobsClient,
  type RayJobsClient,
  redactUrl,
} from '../../src/runtime/ray-jobs.js'
import {readRunState, runStatePath, writeRunState} from '../../src/runtime/run-state.js'
import {pidAlive} from '../helpers/processes.js'
import {FAKE_RAY_BIN_DIR, type FakeRay, startFakeRay, waitFor} from '../helpers/ray-fixture.js'

let ray: FakeRay
let client: RayJobsClient
let tmp: string

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'gr-ray-jobs-'))
  ray = await startFakeRay({stopGraceS: 1})
  client = rayJobsClient(ray.url)
})

afterAll(async () => {
  await ray?.stop()
  if (tmp) await rm(tmp, {recursive: true, force: true})
})

function uid(prefix: string): string {
  return `${prefix}-${Date.now()}-${Math.random().toString(16).slice(2, 8)}`
}

describe('REST client against the fake Ray Jobs server', () => {
  it('reads /api/version', async () => {
    const version = await client.version()
    expect(version.ray_version).toMatch(/^2\./)
    expect(typeof version.version).toBe('string')
  })

  it('submits, follows logs incrementally and reports SUCCEEDED with the exit code', async () => {
    const id = uid('ok')
    expect(await client.submit({entrypoint: 'echo one; sleep 0.5; echo two', submission_id: id})).toBe(id)
    const chunks: string[] = []
    const result = await followJob(client, id, {intervalMs: 100, onLogs: (c) => chunks.push(c)})
    expect(result.job.status).toBe('SUCCEEDED')
    expect(result.job.driver_exit_code).toBe(0)
    expect(result.job.end_time).toBeGreaterThanOrEqual(result.job.start_time!)
    expect(chunks.join('')).toBe('one\ntwo\n')
    expect(result.logs).toBe('one\ntwo\n')
  })

  it('rejects a duplicate submission id (HTTP 500 "Please use a different submission_id"), even after the job ended', async () => {
    const id = uid('dup')
    await client.submit({entrypoint: 'true', submission_id: id})
    await followJob(client, id, {intervalMs: 100})
    const error = await client.submit({entrypoint: 'true', submission_id: id}).catch((e) => e)
    expect(error).toBeInstanceOf(GymError)
    expect(error.code).toBe('E_RAY_DUPLICATE_SUBMISSION')
    const rejected = (await ray.requests()).filter((r) => r.method === 'POST' && r.path === '/api/jobs/' && r.submission_id === id)
    expect(rejected.map((r) => r.status)).toEqual([200, 500])
  })

  it('honours runtime_env.env_vars and does not leak the submitter environment into the job', async () => {
    const id = uid('env')
    process.env.GR_SUBMITTER_ONLY = 'leak'
    try {
      await client.submit({
        entrypoint: 'echo "A=$GR_A ID=$RAY_JOB_SUBMISSION_ID LEAK=${GR_SUBMITTER_ONLY:-none}"',
        submission_id: id,
        runtime_env: {env_vars: {GR_A: 'from-runtime-env'}},
        metadata: {'gymrecipe.recipe': 'test'},
      })
    } finally {
      delete process.env.GR_SUBMITTER_ONLY
    }
    const result = await followJob(client, id, {intervalMs: 100})
    expect(result.logs.trim()).toBe(`A=from-runtime-env ID=${id} LEAK=none`)
    expect(result.job.metadata).toEqual({'gymrecipe.recipe': 'test'})
  })

  it('reports FAILED with the exit code, error type and log tail in the message', async () => {
    const id = uid('fail')
    await client.submit({entrypoint: 'echo boom >&2; exit 7', submission_id: id})
    const result = await followJob(client, id, {intervalMs: 100})
    expect(result.job.status).toBe('FAILED')
    expect(result.job.driver_exit_code).toBe(7)
    expect(result.job.error_type).toBe('JOB_ENTRYPOINT_COMMAND_ERROR')
    expect(result.job.message).toContain('exit code 7')
    expect(logTail(result.logs)).toEqual(['boom'])
  })

  it('stops a job by id: its whole process group ends, STOPPED, a second stop answers false', async () => {
    const id = uid('stop')
    const other = uid('other')
    await client.submit({entrypoint: 'sleep 60 & echo child=$!; wait', submission_id: id})
    await client.submit({entrypoint: 'sleep 60', submission_id: other})
    const logs = await waitFor(() => client.logs(id), (l) => /child=\d+/.test(l), 10_000, 'child pid')
    const childPid = Number(/child=(\d+)/.exec(logs)![1])
    expect(pidAlive(childPid)).toBe(true)
    expect(await client.stop(id)).toBe(true)
    const stopped = await waitFor(() => client.status(id), (j) => j.status === 'STOPPED', 10_000, 'STOPPED')
    expect(stopped.message).toBe('Job was intentionally stopped.')
    await waitFor(async () => pidAlive(childPid), (alive) => !alive, 5000, 'grandchild gone')
    expect(await client.stop(id)).toBe(false)
    // Only that job: the other one still runs.
    expect((await client.status(other)).status).toBe('RUNNING')
    expect(await client.stop(other)).toBe(true)
  })

  it('lists jobs as an array and 404s an unknown id', async () => {
    const jobs = await client.list()
    expect(Array.isArray(jobs)).toBe(true)
    expect(jobs.length).toBeGreaterThan(0)
    const error = await client.status('no-such-job').catch((e) => e)
    expect(error.code).toBe('E_RAY_JOB_NOT_FOUND')
  })

  it('reports an unreachable dashboard (loopback port nobody listens on) as E_RAY_UNREACHABLE', async () => {
    const dead = rayJobsClient('http://127.0.0.1:9', {timeoutMs: 3000})
    const error = await dead.version().catch((e) => e)
    expect(error.code).toBe('E_RAY_UNREACHABLE')
  })
})

describe('token headers', () => {
  let secured: FakeRay
  beforeAll(async () => {
    secured = await startFakeRay({requireHeaders: ['x-ray-authorization=Bearer s3cret-token']})
  })
  afterAll(async () => {
    await secured?.stop()
  })

  it('sends RAY_JOB_HEADERS with every request and never puts the value in an error', async () => {
    const anonymous = await rayJobsClient(secured.url).version().catch((e) => e)
    expect(anonymous.code).toBe('E_RAY_AUTH')
    expect(JSON.stringify({m: anonymous.message, h: anonymous.hint, d: anonymous.details})).not.toContain('s3cret')
    const headers = rayJobHeadersFromEnv({RAY_JOB_HEADERS: '{"x-ray-authorization": "Bearer s3cret-token"}'})
    expect((await rayJobsClient(secured.url, {headers}).version()).ray_version).toBeTruthy()
    const bad = (() => {
      try {
        rayJobHeadersFromEnv({RAY_JOB_HEADERS: '{not json s3cret'})
        return undefined
      } catch (error: any) {
        return error
      }
    })()
    expect(bad.code).toBe('E_RAY_HEADERS')
    expect(bad.message).not.toContain('s3cret')
  })
})

describe('dashboard address (same derivation as the training script)', () => {
  it.each([
    [{RAY_DASHBOARD_ADDRESS: 'http://h:1234'}, 'http://h:1234'],
    [{RAY_ADDRESS: 'http://10.0.0.5:8265'}, 'http://10.0.0.5:8265'],
    [{RAY_ADDRESS: '10.0.0.5:6379'}, 'http://10.0.0.5:8265'],
    [{RAY_ADDRESS: '10.0.0.5:6379', RAY_DASHBOARD_PORT: '28265'}, 'http://10.0.0.5:28265'],
    [{RAY_ADDRESS: 'auto'}, 'http://127.0.0.1:8265'],
    [{}, 'http://127.0.0.1:8265'],
  ])('%j → %s', (env, expected) => {
    expect(dashboardAddressFromEnv(env).address).toBe(expected)
  })
})

describe('redaction', () => {
  it('hides a password in a dashboard URL', () => {
    expect(redactUrl('http://admin:hunter2@10.0.0.5:8265')).toBe('http://<redacted>@10.0.0.5:8265')
    expect(redactUrl('http://10.0.0.5:8265')).toBe('http://10.0.0.5:8265')
  })
})

describe('run state', () => {
  it('round-trips under XDG_STATE_HOME keyed by the recipe dir, and ignores another dir', async () => {
    const env = {XDG_STATE_HOME: path.join(tmp, 'state'), HOME: tmp}
    const dir = path.join(tmp, 'relax', 'examples', 'nemo_gym_agentic', 'recipes', 'calendar')
    const state = {recipe: 'calendar', recipeDir: dir, submissionId: 's1', dashboardAddress: 'http://127.0.0.1:1', logFile: null, submittedAt: new Date().toISOString(), smoke: false}
    await writeRunState(state, env)
    expect(runStatePath(dir, env)).toMatch(new RegExp(`${env.XDG_STATE_HOME}/gymrecipe/runs/[0-9a-f]{16}\\.json$`))
    expect(await readRunState(dir, env)).toEqual(state)
    expect(await readRunState(path.join(tmp, 'other'), env)).toBeUndefined()
    // A file recording another dir under this key is never trusted.
    await writeFile(runStatePath(dir, env), JSON.stringify({...state, recipeDir: '/elsewhere'}))
    expect(await readRunState(dir, env)).toBeUndefined()
    expect(JSON.parse(await readFile(runStatePath(dir, env), 'utf8')).recipeDir).toBe('/elsewhere')
  })
})

describe('fake ray CLI', () => {
  async function rayCli(args: string[], env: Record<string, string> = {}) {
    const result = await execa(path.join(FAKE_RAY_BIN_DIR, 'ray'), args, {reject: false, env: {...ray.env(), ...env}, timeout: 30_000})
    return {exitCode: result.exitCode, stdout: String(result.stdout), stderr: String(result.stderr)}
  }

  it('waits and streams logs by default; exits 1 only for FAILED', async () => {
    const ok = await rayCli(['job', 'submit', `--submission-id=${uid('cli-ok')}`, `--address=${ray.url}`, '--', 'echo', 'hello world'])
    expect(ok.exitCode).toBe(0)
    expect(ok.stdout).toContain('Tailing logs until the job exits (disable with --no-wait):\nhello world\n')
    expect(ok.stdout).toMatch(/Job '.*' succeeded/)
    const failed = await rayCli(['job', 'submit', `--address=${ray.url}`, '--', 'sh', '-c', 'exit 3'])
    expect(failed.exitCode).toBe(1)
    expect(failed.stdout).toMatch(/Job '.*' failed/)
  })

  it('returns right after submission with --no-wait; STOPPED exits 0 like the real CLI', async () => {
    const id = uid('cli-nowait')
    const started = Date.now()
    const submitted = await rayCli(['job', 'submit', '--no-wait', `--submission-id=${id}`, `--address=${ray.url}`, '--', 'sleep', '30'])
    expect(submitted.exitCode).toBe(0)
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(submitted.stdout).not.toContain('Tailing logs')
    const stop = await rayCli(['job', 'stop', id, `--address=${ray.url}`])
    expect(stop.exitCode).toBe(0)
    expect(stop.stdout).toContain(`Job '${id}' was stopped`)
  })

  it('joins the entrypoint with list2cmdline so the server shell gets the original words back', async () => {
    const id = uid('cli-quote')
    const json = '{"actor":[1,8],"rollout":[1,8]}'
    const result = await rayCli(['job', 'submit', `--submission-id=${id}`, `--address=${ray.url}`, '--', 'python3', '-c', 'import sys; print(sys.argv[1:])', '--resource', json, '--agent-command', '. /x/run_agent_app.sh'])
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toContain(`['--resource', '${json}', '--agent-command', '. /x/run_agent_app.sh']`)
  })

  it('refuses a duplicate id with exit 1 and the server message; refuses `ray stop`', async () => {
    const id = uid('cli-dup')
    expect((await rayCli(['job', 'submit', `--submission-id=${id}`, `--address=${ray.url}`, '--', 'true'])).exitCode).toBe(0)
    const dup = await rayCli(['job', 'submit', `--submission-id=${id}`, `--address=${ray.url}`, '--', 'true'])
    expect(dup.exitCode).toBe(1)
    expect(dup.stderr).toContain('Please use a different submission_id')
    const broad = await rayCli(['stop', '--force'])
    expect(broad.exitCode).toBe(2)
    expect((await ray.cliCalls()).some((c) => c.argv[0] === 'stop')).toBe(true)
  })

  it('takes the address from RAY_ADDRESS when --address is absent', async () => {
    const result = await rayCli(['job', 'list'], {RAY_ADDRESS: ray.url})
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toContain(`Job submission server address: ${ray.url}`)
  })
})
