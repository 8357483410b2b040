/**
 * The Ray Jobs REST client (src/runtime/ray-jobs.ts) against the fixture Ray Jobs server, which
 * behaves like Ray 2.58's dashboard (its browser guard and token auth included), and the `ray` CLI
 * against the same server: Ray 2.58's real CLI where installed, and the fake one (test/fixtures/ray).
 * Everything on 127.0.0.1, OS-chosen ports.
 */
import {execa} from 'execa'
import http from 'node:http'
import {mkdir, mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import type {AddressInfo} from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {GymError} from '../../src/errors.js'
import {
  followJob,
  type JobDetails,
  rayCredentials,
  rayJobsClient,
  type RayJobsClient,
  redactUrl,
  resolveJobsEndpoint,
} from '../../src/runtime/ray-jobs.js'
import {readRunState, runStatePath, writeRunState} from '../../src/runtime/run-state.js'
import {pidAlive} from '../helpers/processes.js'
import {FAKE_RAY_BIN_DIR, type FakeRay, RAY_VERSION, realRay, REAL_RAY_BIN_DIR, startFakeRay, waitFor} from '../helpers/ray-fixture.js'
import {writeEndlessBody} from '../helpers/endless-body.js'

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

/** Follow a job to its end, collecting the whole log text it streamed. */
async function run(c: RayJobsClient, id: string): Promise<{job: JobDetails; text: string}> {
  let text = ''
  const result = await followJob(c, id, {intervalMs: 100, onLogs: (chunk) => (text += chunk)})
  return {job: result.job, text}
}

/** The driver's own lines, without the two lines Ray writes before the entrypoint runs. */
function driverLines(text: string): string {
  return text
    .split('\n')
    .filter((l) => !/Runtime env is setting up\.$/.test(l) && !l.startsWith('Running entrypoint for job '))
    .join('\n')
}

describe('the fixture answers as Ray 2.58 does', () => {
  it('/api/version: version "4" and a real release (every real client parses both)', async () => {
    const version = await client.version()
    expect(version.version).toBe('4')
    expect(version.ray_version).toBe(RAY_VERSION)
    expect(version.ray_commit).toMatch(/^[0-9a-f]{40}$/)
  })

  it('starts the driver log with Ray\'s own lines, sets RAY_ADDRESS but never RAY_JOB_SUBMISSION_ID, keeps the submitter environment out', async () => {
    const id = uid('env')
    process.env.GR_SUBMITTER_ONLY = 'leak'
    try {
      await client.submit({
        entrypoint: 'echo "A=$GR_A ID=${RAY_JOB_SUBMISSION_ID:-unset} ADDR=${RAY_ADDRESS:-unset} LEAK=${GR_SUBMITTER_ONLY:-none}"',
        submission_id: id,
        runtime_env: {env_vars: {GR_A: 'from-runtime-env'}},
        metadata: {'gymrecipe.recipe': 'test'},
      })
    } finally {
      delete process.env.GR_SUBMITTER_ONLY
    }
    const {job, text} = await run(client, id)
    const lines = text.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\tINFO job_manager\.py:\d+ -- Runtime env is setting up\.$/)
    expect(lines[1]).toBe(`Running entrypoint for job ${id}: ${job.entrypoint}`)
    expect(lines[2]).toBe('A=from-runtime-env ID=unset ADDR=127.0.0.1:6379 LEAK=none')
    expect(job.metadata).toEqual({'gymrecipe.recipe': 'test'})
  })

  it('returns null, not {}, for metadata and runtime_env a submission left out', async () => {
    const id = uid('bare')
    await client.submit({entrypoint: 'true', submission_id: id})
    const {job} = await run(client, id)
    expect(job.metadata).toBeNull()
    expect(job.runtime_env).toBeNull()
  })

  it('FAILED: exit code, error type, and the last 10 log lines in the message', async () => {
    const id = uid('fail')
    await client.submit({entrypoint: 'for i in $(seq 1 15); do echo line$i; done; echo boom >&2; exit 7', submission_id: id})
    const {job} = await run(client, id)
    expect(job.status).toBe('FAILED')
    expect(job.driver_exit_code).toBe(7)
    expect(job.error_type).toBe('JOB_ENTRYPOINT_COMMAND_ERROR')
    const [head, ...tail] = String(job.message).split('\n')
    expect(head).toBe('Job entrypoint command failed with exit code 7, last available logs (truncated to 20,000 chars):')
    expect(tail.filter(Boolean)).toEqual(['line7', 'line8', 'line9', 'line10', 'line11', 'line12', 'line13', 'line14', 'line15', 'boom'])
  })

  it('kills what the entrypoint left in its process group when the job ends', async () => {
    const id = uid('bg')
    await client.submit({entrypoint: 'sleep 60 & echo child=$!', submission_id: id})
    const {job, text} = await run(client, id)
    expect(job.status).toBe('SUCCEEDED')
    const child = Number(/child=(\d+)/.exec(text)![1])
    await waitFor(async () => pidAlive(child), (alive) => !alive, 5000, 'the background child to die with the job')
  })

  it('stops a job by id: its whole process group ends, STOPPED with a null exit code, a second stop answers false', async () => {
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
    expect(stopped.driver_exit_code).toBeNull()
    await waitFor(async () => pidAlive(childPid), (alive) => !alive, 5000, 'grandchild gone')
    expect(await client.stop(id)).toBe(false)
    // Only that job: the other one still runs.
    expect((await client.status(other)).status).toBe('RUNNING')
    expect(await client.stop(other)).toBe(true)
  })

  it('a working_dir fails the runtime env (RUNTIME_ENV_SETUP_FAILURE)', async () => {
    const id = uid('wd')
    await client.submit({entrypoint: 'true', submission_id: id, runtime_env: {working_dir: '/tmp'}})
    const {job} = await run(client, id)
    expect(job.status).toBe('FAILED')
    expect(job.error_type).toBe('RUNTIME_ENV_SETUP_FAILURE')
    expect(job.message).toMatch(/^runtime_env setup failed: /)
  })

  it('a PENDING job can fail: supervisor start timeout, unschedulable', async () => {
    for (const [pendingFail, errorType] of [['timeout', 'JOB_SUPERVISOR_ACTOR_START_TIMEOUT'], ['unschedulable', 'JOB_SUPERVISOR_ACTOR_UNSCHEDULABLE']] as const) {
      const stuck = await startFakeRay({pendingS: 0.3, pendingFail, cli: 'fake'})
      try {
        const c = rayJobsClient(stuck.url)
        const id = uid(pendingFail)
        await c.submit({entrypoint: 'echo never', submission_id: id})
        expect((await c.status(id)).status).toBe('PENDING')
        const {job, text} = await run(c, id)
        expect(job.status).toBe('FAILED')
        expect(job.error_type).toBe(errorType)
        expect(job.driver_exit_code).toBeNull()
        expect(text).not.toContain('never')
      } finally {
        await stuck.stop()
      }
    }
  })

  it('lists jobs as an array at /api/jobs/ only: without the slash it is 404', async () => {
    expect(Array.isArray(await client.list())).toBe(true)
    const answer = await fetch(`${ray.url}/api/jobs`)
    expect(answer.status).toBe(404)
    const error = await client.status('no-such-job').catch((e) => e)
    expect(error.code).toBe('E_RAY_JOB_NOT_FOUND')
  })

  it('refuses a POST that carries browser headers (Sec-Fetch-*, Origin, Referer, a Mozilla agent), as Ray 2.58 does', async () => {
    for (const headers of [{'sec-fetch-mode': 'cors'}, {origin: 'http://evil.example'}, {referer: 'http://x/'}, {'user-agent': 'Mozilla/5.0'}]) {
      const answer = await new Promise<{status: number; text: string}>((resolve, reject) => {
        const req = http.request(`${ray.url}/api/jobs/`, {method: 'POST', headers: {'content-type': 'application/json', ...headers}}, (res) => {
          let text = ''
          res.on('data', (c) => (text += c))
          res.on('end', () => resolve({status: res.statusCode ?? 0, text}))
        })
        req.on('error', reject)
        req.end(JSON.stringify({entrypoint: 'true'}))
      })
      expect(answer).toEqual({status: 405, text: "'POST' method not allowed for browser traffic."})
    }
    // Node's own fetch is such a browser: this is why gymrecipe does not use it for Ray.
    const viaFetch = await fetch(`${ray.url}/api/jobs/`, {method: 'POST', body: JSON.stringify({entrypoint: 'true'}), headers: {'content-type': 'application/json'}})
    expect(viaFetch.status).toBe(405)
    // Reads stay allowed to browsers.
    expect((await fetch(`${ray.url}/api/version`)).status).toBe(200)
  })
})

describe("gymrecipe's client behind the browser guard", () => {
  it('submits, follows, stops: every request goes through, and none carries a browser header', async () => {
    const before = (await ray.requests()).length
    const id = uid('guard')
    await client.submit({entrypoint: 'echo one; sleep 0.3; echo two', submission_id: id})
    const {job, text} = await run(client, id)
    expect(job.status).toBe('SUCCEEDED')
    expect(driverLines(text)).toBe('one\ntwo\n')
    const running = uid('guard-stop')
    await client.submit({entrypoint: 'sleep 30', submission_id: running})
    await waitFor(() => client.status(running), (j) => j.status === 'RUNNING', 10_000, 'RUNNING')
    expect(await client.stop(running)).toBe(true)
    const mine = (await ray.requests()).slice(before)
    expect(mine.filter((r) => r.method === 'POST').map((r) => r.status)).toEqual([200, 200, 200])
    for (const request of mine) {
      expect(request.headers.filter((h: string) => /^(?:sec-fetch-|origin$|referer$|access-control-)/.test(h))).toEqual([])
    }
  })
})

describe('following a log: one stream, flat memory', () => {
  it('streams over the websocket and never downloads the whole log while following', async () => {
    const id = uid('stream')
    await client.submit({entrypoint: 'for i in $(seq 1 30); do echo line$i; sleep 0.02; done', submission_id: id})
    const before = (await ray.requests()).length
    const {text} = await run(client, id)
    expect(driverLines(text).trim().split('\n')).toEqual(Array.from({length: 30}, (_, i) => `line${i + 1}`))
    const paths = (await ray.requests()).slice(before).map((r) => r.path)
    expect(paths).toContain(`/api/jobs/${id}/logs/tail`)
    expect(paths).not.toContain(`/api/jobs/${id}/logs`)
  })

  it('a dropped stream is reopened where it broke: every line once, none twice', async () => {
    const flaky = await startFakeRay({dropTailAfterS: 0.4, cli: 'fake'})
    try {
      const c = rayJobsClient(flaky.url)
      const id = uid('drop')
      await c.submit({entrypoint: 'for i in $(seq 1 40); do echo line$i; sleep 0.05; done', submission_id: id})
      const {job, text} = await run(c, id)
      expect(job.status).toBe('SUCCEEDED')
      expect(driverLines(text).trim().split('\n')).toEqual(Array.from({length: 40}, (_, i) => `line${i + 1}`))
      const tails = (await flaky.requests()).filter((r) => r.path === `/api/jobs/${id}/logs/tail`)
      expect(tails.length).toBeGreaterThan(1)
    } finally {
      await flaky.stop()
    }
  })

  it('keeps only the last lines of a long log', async () => {
    const id = uid('long')
    await client.submit({entrypoint: 'seq 1 200000', submission_id: id})
    let chars = 0
    const result = await followJob(client, id, {intervalMs: 100, onLogs: (chunk) => (chars += chunk.length)})
    expect(result.job.status).toBe('SUCCEEDED')
    expect(chars).toBeGreaterThan(1_200_000)
    expect(result.tail.last(3)).toEqual(['199998', '199999', '200000'])
    expect(result.tail.last(10_000).length).toBeLessThanOrEqual(200)
  })
})

describe("Ray's token auth (RAY_AUTH_MODE=token)", () => {
  let secured: FakeRay
  const token = 'rAy-tok-3n-4242'
  beforeAll(async () => {
    secured = await startFakeRay({authToken: token, cli: 'fake'})
  })
  afterAll(async () => {
    await secured?.stop()
  })

  function clientFor(env: NodeJS.ProcessEnv): RayJobsClient {
    const {headers, auth} = rayCredentials(env)
    return rayJobsClient(secured.url, {headers, auth})
  }

  it('without a token: 401 and a hint that names where Ray looks for one, never a token', async () => {
    const error = await clientFor({HOME: tmp}).version().catch((e) => e)
    expect(error.code).toBe('E_RAY_AUTH')
    expect(error.message).toContain('HTTP 401: Unauthorized: Missing authentication token')
    expect(error.hint).toMatch(/RAY_AUTH_MODE=token and RAY_AUTH_TOKEN/)
    const missing = await clientFor({HOME: tmp, RAY_AUTH_MODE: 'token'}).version().catch((e) => e)
    expect(missing.hint).toContain('no token was found in RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH')
  })

  it('a wrong token: 403, and the token is not in the error', async () => {
    const error = await clientFor({HOME: tmp, RAY_AUTH_MODE: 'token', RAY_AUTH_TOKEN: 'wrong-token-123'}).version().catch((e) => e)
    expect(error.code).toBe('E_RAY_AUTH')
    expect(error.message).toContain('HTTP 403: Forbidden: Invalid authentication token')
    expect(JSON.stringify({m: error.message, h: error.hint, d: error.details})).not.toContain('wrong-token-123')
  })

  it('finds the token where Ray does: RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token; submit, status, tail and stop all pass', async () => {
    const home = path.join(tmp, 'home-with-token')
    await mkdir(path.join(home, '.ray'), {recursive: true})
    await writeFile(path.join(home, '.ray', 'auth_token'), `${token}\n`)
    const file = path.join(tmp, 'token-file')
    await writeFile(file, `  ${token}  \n`)
    for (const env of [
      {HOME: tmp, RAY_AUTH_MODE: 'token', RAY_AUTH_TOKEN: token},
      {HOME: tmp, RAY_AUTH_MODE: 'TOKEN', RAY_AUTH_TOKEN_PATH: file},
      {HOME: home, RAY_AUTH_MODE: 'token'},
    ]) {
      const c = clientFor(env)
      const id = uid('auth')
      await c.submit({entrypoint: 'echo authorized; sleep 30', submission_id: id})
      const seen = await waitFor(() => c.status(id), (j) => j.status === 'RUNNING', 10_000, 'RUNNING')
      expect(seen.submission_id).toBe(id)
      let text = ''
      const following = followJob(c, id, {intervalMs: 100, onLogs: (chunk) => (text += chunk)})
      await waitFor(async () => text, (t) => t.includes('authorized'), 10_000, 'the log over the websocket')
      expect(await c.stop(id)).toBe(true)
      expect((await following).job.status).toBe('STOPPED')
    }
  })

  it('an unreadable RAY_AUTH_TOKEN_PATH is refused before any request, as by Ray\'s client', () => {
    let error: GymError | undefined
    try {
      rayCredentials({HOME: tmp, RAY_AUTH_MODE: 'token', RAY_AUTH_TOKEN_PATH: path.join(tmp, 'missing')})
    } catch (caught) {
      error = caught as GymError
    }
    expect(error?.code).toBe('E_RAY_AUTH')
    expect(error?.exit).toBe(3)
  })

  it("the user's own Authorization header (RAY_JOB_HEADERS) wins over the token, as in Ray's client", async () => {
    const env = {HOME: tmp, RAY_AUTH_MODE: 'token', RAY_AUTH_TOKEN: 'ignored-token-1', RAY_JOB_HEADERS: JSON.stringify({Authorization: `Bearer ${token}`})}
    expect(rayCredentials(env).headers).toEqual({Authorization: `Bearer ${token}`})
    expect((await clientFor(env).version()).version).toBe('4')
    // X-Ray-Authorization, for proxies, is read too.
    expect((await clientFor({HOME: tmp, RAY_JOB_HEADERS: JSON.stringify({'x-ray-authorization': `Bearer ${token}`})}).version()).version).toBe('4')
  })
})

describe('RAY_JOB_HEADERS (a proxy in front of the dashboard)', () => {
  let secured: FakeRay
  beforeAll(async () => {
    secured = await startFakeRay({requireHeaders: ['x-api-key=s3cret-key-99'], cli: 'fake'})
  })
  afterAll(async () => {
    await secured?.stop()
  })

  it('sends the headers with every request and never puts a value in an error', async () => {
    const anonymous = await rayJobsClient(secured.url).version().catch((e) => e)
    expect(anonymous.code).toBe('E_RAY_AUTH')
    const {headers, auth} = rayCredentials({RAY_JOB_HEADERS: '{"x-api-key": "s3cret-key-99"}'})
    expect(auth.how).toBe('RAY_JOB_HEADERS (x-api-key)')
    expect((await rayJobsClient(secured.url, {headers}).version()).ray_version).toBe(RAY_VERSION)
    let bad: GymError | undefined
    try {
      rayCredentials({RAY_JOB_HEADERS: '{not json s3cret'})
    } catch (error) {
      bad = error as GymError
    }
    expect(bad?.code).toBe('E_RAY_HEADERS')
    expect(bad?.message).not.toContain('s3cret')
  })
})

describe('hostile dashboards', () => {
  const servers: http.Server[] = []
  async function serve(handler: http.RequestListener): Promise<{url: string; seen: http.IncomingHttpHeaders[]}> {
    const seen: http.IncomingHttpHeaders[] = []
    const server = http.createServer((req, res) => {
      seen.push(req.headers)
      handler(req, res)
    })
    servers.push(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    return {url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen}
  }
  afterAll(async () => {
    for (const server of servers) {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('a redirect is not followed and the credentials never reach the other origin', async () => {
    const elsewhere = await serve((_req, res) => res.end('{"version": "4", "ray_version": "2.58.0"}'))
    const redirecting = await serve((req, res) => {
      res.writeHead(307, {location: `${elsewhere.url}${req.url}`})
      res.end()
    })
    const {headers, auth} = rayCredentials({RAY_JOB_HEADERS: '{"X-Api-Key": "k3y-never-moved"}', RAY_AUTH_MODE: 'token', RAY_AUTH_TOKEN: 'tok-never-moved'})
    const c = rayJobsClient(redirecting.url, {headers, auth})
    for (const call of [() => c.version(), () => c.submit({entrypoint: 'true'}), () => c.stop('x'), () => c.tail('x', {onText: () => undefined})]) {
      const error = await call().catch((e) => e)
      expect(error.code).toBe('E_RAY_REDIRECT')
      expect(error.message).toContain(`a redirect to ${elsewhere.url}`)
      expect(JSON.stringify({m: error.message, h: error.hint})).not.toMatch(/never-moved/)
    }
    expect(redirecting.seen.length).toBe(4)
    expect(redirecting.seen.every((h) => h['x-api-key'] === 'k3y-never-moved')).toBe(true)
    expect(elsewhere.seen).toEqual([])
  })

  it('an endless answer is cut at the byte cap and said so', async () => {
    const endless = await serve((_req, res) => writeEndlessBody(res))
    const rss = process.memoryUsage().rss
    const error = await rayJobsClient(endless.url, {timeoutMs: 60_000}).version().catch((e) => e)
    expect(error.code).toBe('E_RAY_PROTOCOL')
    expect(error.message).toContain('byte limit')
    expect(process.memoryUsage().rss - rss).toBeLessThan(200 * 1024 * 1024)
  })

  it('an answer that never ends is bounded by the deadline and said so', async () => {
    const slow = await serve((_req, res) => {
      res.writeHead(200, {'content-type': 'application/json'})
      res.write('{')
    })
    const error = await rayJobsClient(slow.url, {timeoutMs: 500}).version().catch((e) => e)
    expect(error.code).toBe('E_RAY_UNREACHABLE')
    expect(error.message).toContain('no complete answer within 0.5 s')
  })
})

describe('the Jobs endpoint: one resolution, as Ray\'s CLI takes it', () => {
  it.each([
    [{RAY_API_SERVER_ADDRESS: 'http://api:1', RAY_DASHBOARD_ADDRESS: 'http://h:1234', RAY_ADDRESS: 'http://r:2'}, 'http://api:1', 'RAY_API_SERVER_ADDRESS'],
    [{RAY_DASHBOARD_ADDRESS: 'http://h:1234', RAY_ADDRESS: 'http://r:2'}, 'http://h:1234', 'RAY_DASHBOARD_ADDRESS'],
    [{RAY_ADDRESS: 'http://10.0.0.5:8265'}, 'http://10.0.0.5:8265', 'RAY_ADDRESS'],
    [{RAY_ADDRESS: '10.0.0.5:6379'}, 'http://10.0.0.5:8265', 'RAY_ADDRESS host + RAY_DASHBOARD_PORT (8265)'],
    [{RAY_ADDRESS: '10.0.0.5:6379', RAY_DASHBOARD_PORT: '28265'}, 'http://10.0.0.5:28265', 'RAY_ADDRESS host + RAY_DASHBOARD_PORT (28265)'],
    [{RAY_ADDRESS: 'auto'}, 'http://127.0.0.1:8265', 'the default, since RAY_ADDRESS "auto" is not host:port'],
    [{}, 'http://127.0.0.1:8265', 'the default: none of RAY_API_SERVER_ADDRESS, RAY_DASHBOARD_ADDRESS, RAY_ADDRESS is set'],
  ])('%j → %s', (env, address, source) => {
    expect(resolveJobsEndpoint(env)).toMatchObject({address, source})
  })

  it('refuses a Ray Client address, which names no Jobs API', () => {
    expect(() => resolveJobsEndpoint({RAY_ADDRESS: 'ray://head:10001'})).toThrow(/Ray Client address/)
  })

  it('hides userinfo and the query of a dashboard URL', () => {
    expect(redactUrl('http://admin:hunter2@10.0.0.5:8265')).toBe('http://<redacted>@10.0.0.5:8265')
    expect(redactUrl('http://10.0.0.5:8265/?token=abc')).toBe('http://10.0.0.5:8265/?<redacted>')
    expect(redactUrl('http://10.0.0.5:8265')).toBe('http://10.0.0.5:8265')
  })
})

describe('run state', () => {
  it('round-trips under XDG_STATE_HOME keyed by the recipe dir, and ignores another dir', async () => {
    const env = {XDG_STATE_HOME: path.join(tmp, 'state'), HOME: tmp}
    const dir = path.join(tmp, 'relax', 'examples', 'nemo_gym_agentic', 'recipes', 'calendar')
    const state = {recipe: 'calendar', recipeDir: dir, submissionId: 's1', dashboardAddress: 'http://127.0.0.1:1', dashboardSource: 'RAY_DASHBOARD_ADDRESS', logFile: null, submittedAt: new Date().toISOString(), smoke: false}
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

// The same behaviour from Ray 2.58's real CLI (where installed) and the fake one.
const clis: Array<'real' | 'fake'> = realRay() ? ['real', 'fake'] : ['fake']

describe.each(clis)('the %s ray CLI against the fixture', (cli) => {
  const bin = path.join(cli === 'real' ? REAL_RAY_BIN_DIR : FAKE_RAY_BIN_DIR, 'ray')
  async function rayCli(args: string[], env: Record<string, string> = {}, server: FakeRay = ray) {
    const result = await execa(bin, args, {reject: false, env: {...server.env(), GYMRECIPE_REAL_RAY: realRay() ?? '', HOME: tmp, RAY_ADDRESS: '', RAY_API_SERVER_ADDRESS: '', ...env}, timeout: 60_000})
    return {exitCode: result.exitCode, stdout: String(result.stdout), stderr: String(result.stderr)}
  }

  it('waits and streams the log over the websocket; exits 1 only for FAILED', async () => {
    const ok = await rayCli(['job', 'submit', `--submission-id=${uid('cli-ok')}`, `--address=${ray.url}`, '--', 'echo', 'hello world'])
    expect(ok.exitCode).toBe(0)
    expect(ok.stdout).toMatch(/Tailing logs until the job exits \(disable with --no-wait\):\n.*Runtime env is setting up\.\nRunning entrypoint for job .*\nhello world\n/)
    expect(ok.stdout).toMatch(/Job '.*' succeeded/)
    const failed = await rayCli(['job', 'submit', `--address=${ray.url}`, '--', 'sh', '-c', 'exit 3'])
    expect(failed.exitCode).toBe(1)
    expect(failed.stdout).toMatch(/Job '.*' failed/)
  })

  it('exits 1 when the log stream drops, while the job runs on', async () => {
    const flaky = await startFakeRay({dropTailAfterS: 1, cli})
    try {
      const id = uid('cli-drop')
      const result = await rayCli(['job', 'submit', `--submission-id=${id}`, `--address=${flaky.url}`, '--', 'sleep', '60'], {}, flaky)
      expect(result.exitCode).toBe(1)
      expect(result.stderr).toContain('WebSocket connection closed unexpectedly with close code 1006')
      expect((await rayJobsClient(flaky.url).status(id)).status).toBe('RUNNING')
      const status = await rayCli(['job', 'status', id, `--address=${flaky.url}`], {}, flaky)
      expect(status.stdout).toMatch(new RegExp(`Status for job '${id}': RUNNING`))
      await rayJobsClient(flaky.url).stop(id)
    } finally {
      await flaky.stop()
    }
  })

  it('returns right after submission with --no-wait; STOPPED exits 0', async () => {
    const id = uid('cli-nowait')
    const submitted = await rayCli(['job', 'submit', '--no-wait', `--submission-id=${id}`, `--address=${ray.url}`, '--', 'sleep', '30'])
    expect(submitted.exitCode).toBe(0)
    expect(submitted.stdout).not.toContain('Tailing logs')
    const stop = await rayCli(['job', 'stop', id, `--address=${ray.url}`])
    expect(stop.exitCode).toBe(0)
    expect(stop.stdout).toContain(`Job '${id}' was stopped`)
  })

  it('joins the entrypoint with shlex.join: spaces, $, ;, quotes and backticks reach the job unchanged', async () => {
    const words = ['{"actor":[1,8],"rollout":[1,8]}', '. /x/run_agent_app.sh', 'a b', '$HOME', 'x;y', "it's", '`id`', 'back\\slash']
    const result = await rayCli(['job', 'submit', `--address=${ray.url}`, '--', 'python3', '-c', 'import json, sys; print("ARGS=" + json.dumps(sys.argv[1:], separators=(",", ":")))', ...words])
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toContain(`ARGS=${JSON.stringify(words)}`)
  })

  it('takes RAY_API_SERVER_ADDRESS, then RAY_ADDRESS, before --address', async () => {
    const viaRayAddress = await rayCli(['job', 'list', '--address=http://127.0.0.1:9'], {RAY_ADDRESS: ray.url})
    expect(viaRayAddress.exitCode).toBe(0)
    expect(viaRayAddress.stdout).toContain(`Job submission server address: ${ray.url}`)
    const viaApiServer = await rayCli(['job', 'list', '--address=http://127.0.0.1:9'], {RAY_ADDRESS: 'http://127.0.0.1:9', RAY_API_SERVER_ADDRESS: ray.url})
    expect(viaApiServer.exitCode).toBe(0)
    expect(viaApiServer.stdout).toContain(`Job submission server address: ${ray.url}`)
  })

  it('sends Ray\'s token from RAY_AUTH_TOKEN; without it the dashboard refuses', async () => {
    const secured = await startFakeRay({authToken: 'cli-tok-777', cli})
    try {
      const refused = await rayCli(['job', 'list', `--address=${secured.url}`], {}, secured)
      expect(refused.exitCode).toBe(1)
      expect(refused.stderr).toContain('Unauthorized: Missing authentication token')
      const allowed = await rayCli(['job', 'submit', `--address=${secured.url}`, '--', 'echo', 'tok-ok'], {RAY_AUTH_MODE: 'token', RAY_AUTH_TOKEN: 'cli-tok-777'}, secured)
      expect(allowed.exitCode).toBe(0)
      expect(allowed.stdout).toContain('tok-ok')
    } finally {
      await secured.stop()
    }
  })

  it('refuses a duplicate id with exit 1 and the server message; a broad `ray stop` is refused and recorded', async () => {
    const id = uid('cli-dup')
    expect((await rayCli(['job', 'submit', `--submission-id=${id}`, `--address=${ray.url}`, '--', 'true'])).exitCode).toBe(0)
    const dup = await rayCli(['job', 'submit', `--submission-id=${id}`, `--address=${ray.url}`, '--', 'true'])
    expect(dup.exitCode).toBe(1)
    expect(dup.stderr).toContain('Please use a different submission_id')
    const broad = await rayCli(['stop', '--force'])
    expect(broad.exitCode).toBe(2)
    expect((await ray.cliCalls()).some((c) => c.argv[0] === 'stop')).toBe(true)
  })
})

describe('the fake CLI as older Ray joins an entrypoint (list2cmdline)', () => {
  it('hands /bin/sh words it changes: why the generated script refuses such arguments', async () => {
    const result = await execa(path.join(FAKE_RAY_BIN_DIR, 'ray'), ['job', 'submit', `--address=${ray.url}`, '--', 'echo', 'a$RAY_ADDRESS', 'x;echo', 'injected'], {
      reject: false,
      env: {...ray.env(), FAKE_RAY_ENTRYPOINT_JOIN: 'list2cmdline'},
      timeout: 30_000,
    })
    expect(result.exitCode).toBe(0)
    expect(String(result.stdout)).toContain('a127.0.0.1:6379 x\ninjected')
  })
})
