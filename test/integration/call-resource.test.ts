import {mkdir, readdir, readFile, writeFile} from 'node:fs/promises'
import path from 'node:path'
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import {isGymError} from '../../src/errors.js'
import {FAILURE_KINDS} from '../../src/gym/call/types.js'
import {type GymFixture, startGymFixture, startRecorder} from '../fixtures/call/services.js'
import {callRun, readAttempts, tempDir} from '../helpers/call.js'

let gym: GymFixture
let agent: GymFixture
let foreign: Awaited<ReturnType<typeof startRecorder>>

beforeAll(async () => {
  foreign = await startRecorder()
  gym = await startGymFixture({redirectTo: foreign.url, slowMs: 1500})
  agent = await startGymFixture()
})
afterAll(async () => {
  await gym.close()
  await agent.close()
  await foreign.close()
})
afterEach(() => {
  // every scenario must release every session it created
  expect(gym.liveSessions()).toBe(0)
  expect(agent.liveSessions()).toBe(0)
  gym.reset()
  agent.reset()
})

const execution = (extra = '') => `name: execution
endpoint: ${gym.url}
route: /execute
row_id_column: id
request_columns:
  sql: candidate.sql
  row: marker
  fault: fault
  hold_ms: hold_ms
  echo: echo
provenance_columns: [candidate.id, variant]
${extra}`

const sessionBlock = (cleanup = '[{route: /cleanup}]', init = '[{route: /seed_session, request_column: seed, response_headers: {X-Session-Token: token}}]') => `session:
  initialize: ${init}
  cleanup: ${cleanup}
  cleanup_timeout: 5
`

const row = (id: string | number, extra: Record<string, unknown> = {}) => ({
  id,
  marker: String(id),
  candidate: {id: `c-${id}`, sql: 'select id, name, price, big from items order by id'},
  variant: 'v1',
  fault: null,
  hold_ms: 0,
  echo: null,
  seed: {},
  ...extra,
})

describe('call resource: envelope', () => {
  it('writes the documented envelope with lossless JSON strings and keeps semantic failures inside the response', async () => {
    const run = await callRun('resource', execution(), [
      row(1),
      row(2, {candidate: {id: 'c-2', sql: 'select nope from items'}}),
      '{"id": 3, "marker": "3", "candidate": {"id": 12345678901234567890, "sql": "select 1 as one"}, "variant": null, "fault": null, "hold_ms": 0, "echo": 98765432109876543210, "seed": {}}',
    ])
    expect(run.summary).toMatchObject({rows: 3, finished: 3, completed: 3, failed: 0})
    const [first, second, third] = run.rows!.map((r) => r.execution)
    expect(Object.keys(first)).toEqual([
      'status',
      'row_id',
      'attempt_id',
      'artifact',
      'failure_kind',
      'failure_stage',
      'failure_route',
      'failure_reason',
      'provenance_json',
      'cleanup_errors_json',
      'response_json',
    ])
    expect(first).toMatchObject({status: 'completed', row_id: 1, failure_kind: null, failure_stage: null, failure_route: null, failure_reason: null, cleanup_errors_json: '[]'})
    expect(first.provenance_json).toBe('{"candidate.id":"c-1","variant":"v1"}')
    expect(typeof first.response_json).toBe('string')
    // SQLite's 9007199254740993 (2^53 + 1) survives as written
    expect(first.response_json).toContain('"big":9007199254740993')
    // HTTP success = completed; the SQL error stays inside the native response
    expect(second.status).toBe('completed')
    expect(JSON.parse(second.response_json).error).toContain('no such column: nope')
    // input integers above 2^53 survive in the input columns, provenance and response
    expect(run.lines![2]).toContain('"echo": 98765432109876543210')
    expect(third.provenance_json).toBe('{"candidate.id":12345678901234567890}')
    expect(third.response_json).toContain('"echo":98765432109876543210')
    // attempt ids are kept in artifacts, not injected into requests
    const executes = gym.requests.filter((r) => r.route === '/execute')
    expect(executes).toHaveLength(3)
    for (const [i, env] of [first, second, third].entries()) {
      expect(executes.some((r) => r.body.includes(env.attempt_id))).toBe(false)
      const artifact = await run.artifact(env)
      expect(artifact.attempt_id).toBe(env.attempt_id)
      expect(artifact.row_line).toBe(i + 1)
      expect(artifact.request.body.sql).toBeTypeOf('string')
      expect(artifact.response.http_status).toBe(200)
    }
  })

  it('keeps input order in the output although rows finish out of order', async () => {
    const rows = [row('a', {hold_ms: 150}), row('b', {hold_ms: 0}), row('c', {hold_ms: 60}), row('d')]
    const run = await callRun('resource', execution('max_parallel_requests: 4\n'), rows)
    expect(run.rows!.map((r) => r.id)).toEqual(['a', 'b', 'c', 'd'])
  })

  it('fails rows whose request cannot be built at the request stage without calling anything', async () => {
    const run = await callRun('resource', execution(), [{id: 'x', marker: 'x', variant: 1, candidate: {id: 1}}])
    expect(run.rows![0].execution).toMatchObject({
      status: 'failed',
      failure_kind: 'request_invalid',
      failure_stage: 'request',
      failure_route: '/execute',
      failure_reason: 'missing source path: candidate.sql',
      response_json: null,
    })
    expect(gym.requests).toHaveLength(0)
    expect((await run.artifact(run.rows![0].execution)).request).toBeNull()
  })
})

describe('call resource: failure kinds', () => {
  it('gives each fault a distinct failure kind and never retries a request', async () => {
    const closed = await startRecorder()
    const closedUrl = closed.url
    await closed.close()
    const run = await callRun('resource', execution('timeout: 0.5\nmax_parallel_requests: 8\n'), [
      row('ok'),
      row('slow', {fault: 'slow'}),
      row('4xx', {fault: '4xx'}),
      row('5xx', {fault: '5xx'}),
      row('reset', {fault: 'reset'}),
      row('malformed', {fault: 'malformed'}),
      row('empty', {fault: 'empty'}),
      row('redirect', {fault: 'redirect'}),
    ])
    const by = Object.fromEntries(run.rows!.map((r) => [r.id, r.execution]))
    expect(by.ok.status).toBe('completed')
    expect(by.slow).toMatchObject({status: 'failed', failure_kind: 'execution_timeout', failure_stage: 'execute', failure_route: '/execute'})
    expect(by['4xx']).toMatchObject({failure_kind: 'http_rejected', failure_stage: 'execute', failure_reason: expect.stringContaining('HTTP 422')})
    expect(by['5xx']).toMatchObject({failure_kind: 'server_failed', failure_stage: 'execute', failure_reason: expect.stringContaining('HTTP 503: upstream unavailable')})
    expect(by.reset).toMatchObject({failure_kind: 'transport_failed', failure_stage: 'execute'})
    expect(by.malformed).toMatchObject({failure_kind: 'malformed_response', failure_stage: 'execute', response_json: null})
    expect(by.empty).toMatchObject({failure_kind: 'malformed_response', failure_reason: expect.stringContaining('empty body')})
    // redirects are not followed: nothing reaches the foreign service
    expect(by.redirect).toMatchObject({failure_kind: 'http_rejected', failure_reason: expect.stringContaining(`a redirect to ${foreign.url}`)})
    expect(by.redirect.failure_reason).toContain('(redirects are not followed)')
    expect(foreign.hits()).toBe(0)
    // the malformed body is kept raw in the attempt artifact
    expect((await run.artifact(by.malformed)).response.body_text).toBe('{"rows": [1, 2')
    // no retries: every row reached the service exactly once
    for (const id of ['ok', 'slow', '4xx', '5xx', 'reset', 'malformed', 'empty', 'redirect']) expect(gym.callsFor('/execute', id)).toBe(1)
    expect(run.summary.failure_kinds).toEqual({execution_timeout: 1, http_rejected: 2, server_failed: 1, transport_failed: 1, malformed_response: 2})

    // connection refused is a transport failure too
    const refused = await callRun('resource', execution().replace(gym.url, closedUrl), [row('refused')])
    expect(refused.rows![0].execution).toMatchObject({failure_kind: 'transport_failed', failure_reason: expect.stringContaining('connection refused')})
    // the documented kinds are all distinct
    expect(new Set(FAILURE_KINDS).size).toBe(FAILURE_KINDS.length)
  })

  it('fails rows that wait longer than queue_timeout for admission (separate from timeout)', async () => {
    const run = await callRun('resource', execution('max_parallel_requests: 1\ntimeout: 30\nqueue_timeout: 0.3\n'), [row('first', {hold_ms: 800}), row('second'), row('third')])
    const [first, second, third] = run.rows!.map((r) => r.execution)
    expect(first.status).toBe('completed')
    for (const env of [second, third]) {
      expect(env).toMatchObject({status: 'failed', failure_kind: 'admission_timeout', failure_stage: 'admission', failure_route: null})
    }
    expect(gym.callsFor('/execute', 'second')).toBe(0)
  })
})

describe('call resource: gym-episode', () => {
  const episode = (extra = '') => `name: episode
endpoint: ${gym.url}
route: /run
row_id_column: id
request_column: task
response_protocol: gym-episode
${extra}`
  const task = (id: string, kind: string) => ({id, task: {responses_create_params: {input: []}, kind, row: id}})

  it('adds the episode fields; a returned result is completed even with reward 0 or a masked sample', async () => {
    const run = await callRun('resource', episode(), [task('r', 'result'), task('z', 'result_zero'), task('m', 'masked'), task('f', 'failure'), task('l', 'legacy_failure')])
    const by = Object.fromEntries(run.rows!.map((r) => [r.id, r.episode]))
    expect(by.r).toMatchObject({status: 'completed', episode_status: 'completed', reward: 1.0, mask_sample: false, episode_failure_kind: null})
    expect(run.lines![0]).toMatch(/"reward":1[,}]/)
    expect(by.z).toMatchObject({status: 'completed', episode_status: 'completed', reward: 0, mask_sample: false})
    expect(by.m).toMatchObject({status: 'completed', episode_status: 'completed', reward: 0.5, mask_sample: true})
    // an episode failure is still a completed call
    expect(by.f).toMatchObject({
      status: 'completed',
      failure_kind: null,
      episode_status: 'failed',
      episode_failure_kind: 'timeout',
      episode_failure_reason: 'user simulator timed out',
      episode_failure_stage: 'usersim',
      episode_terminal: true,
      reward: null,
      mask_sample: null,
    })
    expect(by.l).toMatchObject({episode_status: 'failed', episode_failure_kind: 'agent_error', episode_terminal: false})
    expect(run.summary.episodes).toEqual({completed: 3, failed: 2})
  })

  it('treats malformed outcome fields as a response failure and keeps the raw response', async () => {
    const run = await callRun('resource', episode(), [task('both', 'both'), task('neither', 'neither'), task('bad', 'bad_reward')])
    for (const r of run.rows!) {
      expect(r.episode).toMatchObject({status: 'failed', failure_kind: 'malformed_response', failure_stage: 'execute', episode_status: null, reward: null})
      expect(r.episode.response_json).not.toBeNull()
      const artifact = await run.artifact(r.episode)
      expect(artifact.response.body.episode_id).toEqual({rollout_id: 'r-1', attempt: 0})
    }
  })
})

describe('call resource: response_fields', () => {
  it('replaces the inline response_json by the projection, with null for missing paths; the artifact keeps the full response', async () => {
    const run = await callRun('resource', execution('response_fields:\n  count: row_count\n  first_name: rows.name\n  missing: nope.deeper\n'), [row(1)])
    const env = run.rows![0].execution
    expect(env.response_json).toBe('{"count":3,"first_name":null,"missing":null}')
    const artifact = await run.artifact(env)
    expect(artifact.response.body.rows).toHaveLength(3)

    const empty = await callRun('resource', execution('response_fields: {}\n'), [row(2)])
    expect(empty.rows![0].execution.response_json).toBe('{}')
  })
})

describe('call resource: sessions', () => {
  it('gives each row its own cookies and session token, used across initialize, execute and cleanup, over a bounded shared pool', async () => {
    const run = await callRun('resource', execution(`max_parallel_requests: 3\n${sessionBlock()}`), [row(1), row(2), row(3), row(4)])
    expect(run.summary.completed).toBe(4)
    const ids = run.rows!.map((r) => JSON.parse((r.execution.response_json as string).replace('"[redacted]"', '"x"')))
    expect(ids).toHaveLength(4)
    expect(gym.totalSessions()).toBe(4)
    expect(gym.calls('/seed_session')).toBe(4)
    expect(gym.calls('/cleanup')).toBe(4)
    // every execute carried a valid cookie + token pair (the fixture answers 401 otherwise)
    const executes = gym.requests.filter((r) => r.route === '/execute')
    expect(new Set(executes.map((r) => r.headers.cookie)).size).toBe(4)
    expect(new Set(executes.map((r) => r.headers['x-session-token'])).size).toBe(4)
    // connections are pooled per origin: never more than max_parallel_requests of them, reused across rows
    const ports = new Set(gym.requests.map((r) => r.remotePort))
    expect(ports.size).toBeLessThanOrEqual(3)
    expect(gym.requests).toHaveLength(12)
  })

  it('rows that share pooled connections never see each other\'s cookies or session headers', async () => {
    // 16 rows, 2 at a time, 3 requests each, over at most 2 sockets: rows take turns on the same connections.
    // Every 4th row's initialize returns no token, so that row fails initialize and cleans up with its cookie
    // alone: a session header left behind on a shared connection would show up on its cleanup.
    const yaml = execution(`max_parallel_requests: 2\n${sessionBlock('[{route: /cleanup, request_column: seed}]')}`)
    const rows = Array.from({length: 16}, (_, i) => row(`iso${i}`, {hold_ms: (i % 3) * 7, seed: i % 4 === 3 ? {row: `iso${i}`, fault: 'no_token'} : {row: `iso${i}`}}))
    const run = await callRun('resource', yaml, rows)
    expect(run.summary).toMatchObject({completed: 12, failed: 4, failure_kinds: {malformed_response: 4}})
    // 12 rows × (initialize, execute, cleanup) + 4 rows × (initialize, cleanup)
    expect(gym.requests).toHaveLength(44)
    expect(gym.requests.every((r) => r.marker !== undefined)).toBe(true)

    // the connections really were shared: at most 2, each carrying several rows
    const rowsByPort = new Map<number, Set<string>>()
    for (const r of gym.requests) rowsByPort.set(r.remotePort!, (rowsByPort.get(r.remotePort!) ?? new Set()).add(r.marker!))
    expect(rowsByPort.size).toBeLessThanOrEqual(2)
    expect(Math.max(...[...rowsByPort.values()].map((markers) => markers.size))).toBeGreaterThanOrEqual(8)

    const sessionOf = new Map<string, {id: string; token: string | undefined}>()
    for (const r of gym.requests.filter((q) => q.route === '/seed_session')) {
      // a row starts with an empty jar and no session headers, whoever used the connection before
      expect(r.headers.cookie).toBeUndefined()
      expect(r.headers['x-session-token']).toBeUndefined()
      sessionOf.set(r.marker!, {id: r.createdSession!, token: r.createdToken})
    }
    expect(new Set([...sessionOf.values()].map((s) => s.id)).size).toBe(16)
    for (const r of gym.requests.filter((q) => q.route !== '/seed_session')) {
      const own = sessionOf.get(r.marker!)!
      // exactly this row's cookie and this row's token (or none), never another row's
      expect(r.headers.cookie).toBe(`gym_session=${own.id}`)
      expect(r.headers['x-session-token']).toBe(own.token)
    }
    for (const [i, out] of run.rows!.entries()) {
      if (i % 4 === 3) {
        expect(out.execution).toMatchObject({failure_kind: 'malformed_response', failure_stage: 'initialize', cleanup_errors_json: '[]'})
      } else {
        // the service answered with the session of this row's cookie: it is redacted as this row's own
        // secret (a row only knows, and scrubs, its own cookie values)
        expect(JSON.parse(out.execution.response_json).session_id).toBe('[redacted]')
      }
    }
    expect(gym.calls('/cleanup')).toBe(16)
  })

  it('forwards cookies between the configured services and sends a bearer token only to its own endpoint', async () => {
    const yaml = `name: execution
endpoint: ${agent.url}
route: /execute
row_id_column: id
request_columns: {sql: candidate.sql, row: marker}
bearer_token_env: AGENT_TOKEN
session:
  initialize:
    - {endpoint: ${gym.url}, route: /seed_session, response_headers: {X-Session-Token: token}, bearer_token_env: RESOURCE_TOKEN}
  cleanup:
    - {endpoint: ${gym.url}, route: /cleanup}
`
    const run = await callRun('resource', yaml, [row(1)], {env: {AGENT_TOKEN: 'agent-token-123456', RESOURCE_TOKEN: 'resource-token-abcdef'}})
    // the agent saw the cookie and token the resource server set, so it rejected them as unknown (401): they were forwarded
    const agentExec = agent.requests.find((r) => r.route === '/execute')!
    expect(agentExec.headers.cookie).toMatch(/^gym_session=/)
    expect(agentExec.headers['x-session-token']).toMatch(/^[0-9a-f]{32}$/)
    expect(agentExec.headers.authorization).toBe('Bearer agent-token-123456')
    for (const r of gym.requests) expect(r.headers.authorization).toBe('Bearer resource-token-abcdef')
    expect(run.rows![0].execution.failure_kind).toBe('http_rejected')
    expect(foreign.hits()).toBe(0)
    const everything = await run.everything()
    expect(everything).not.toContain('agent-token-123456')
    expect(everything).not.toContain('resource-token-abcdef')
  })

  it('runs cleanup after partial initialization and keeps the initialize failure', async () => {
    const init = '[{route: /seed_session, response_headers: {X-Session-Token: token}}, {route: /seed_tools, request_column: seed}]'
    const run = await callRun('resource', execution(sessionBlock('[{route: /cleanup}]', init)), [row('p', {seed: {fault: 'fail'}})])
    expect(run.rows![0].execution).toMatchObject({status: 'failed', failure_kind: 'server_failed', failure_stage: 'initialize', failure_route: '/seed_tools', cleanup_errors_json: '[]'})
    expect(gym.calls('/cleanup')).toBe(1)
    expect(gym.calls('/execute')).toBe(0)
  })

  it('fails initialize when the mapped token is missing from its response, and still cleans up', async () => {
    const run = await callRun('resource', execution(sessionBlock()), [row('nt', {seed: {fault: 'no_token'}})])
    expect(run.rows![0].execution).toMatchObject({failure_kind: 'malformed_response', failure_stage: 'initialize', failure_route: '/seed_session', cleanup_errors_json: '[]'})
    expect(run.rows![0].execution.failure_reason).toContain('no string token at token for header X-Session-Token')
    // the cookie alone was enough for the service to release the session
    expect(gym.calls('/cleanup')).toBe(1)
    expect(gym.calls('/execute')).toBe(0)
  })

  it('runs cleanup after an execution timeout', async () => {
    const run = await callRun('resource', execution(`timeout: 0.4\n${sessionBlock()}`), [row('t', {fault: 'slow'})])
    expect(run.rows![0].execution).toMatchObject({failure_kind: 'execution_timeout', failure_stage: 'execute'})
    expect(gym.calls('/cleanup')).toBe(1)
  })

  it('bounds setup plus execution with one timeout', async () => {
    const run = await callRun('resource', execution(`timeout: 1\n${sessionBlock()}`), [row('t', {seed: {fault: 'slow', sleep_ms: 600}, fault: 'slow', sleep_ms: 600})])
    // 600 ms initialize + 600 ms execute > 1 s although each step alone fits
    expect(run.rows![0].execution).toMatchObject({failure_kind: 'execution_timeout', failure_stage: 'execute'})
  })

  it('keeps cleanup errors even when execute also failed', async () => {
    const run = await callRun('resource', execution(sessionBlock('[{route: /cleanup_audit}, {route: /cleanup}]')), [row('e', {fault: '5xx', seed: {cleanup_fault: 'fail'}})])
    const env = run.rows![0].execution
    expect(env).toMatchObject({status: 'failed', failure_kind: 'server_failed', failure_stage: 'execute'})
    expect(JSON.parse(env.cleanup_errors_json)).toEqual([
      {step: 0, endpoint: gym.url, route: '/cleanup_audit', kind: 'server_failed', http_status: 500, reason: 'POST /cleanup_audit answered HTTP 500: audit log unavailable'},
    ])
    // the remaining cleanup step still ran and released the session
    expect(gym.calls('/cleanup')).toBe(1)
  })

  it('marks the call failed when cleanup fails after a successful execute, keeping the response', async () => {
    const run = await callRun('resource', execution(sessionBlock('[{route: /cleanup_audit}, {route: /cleanup}]')), [row('c', {seed: {cleanup_fault: 'fail'}})])
    const env = run.rows![0].execution
    expect(env).toMatchObject({status: 'failed', failure_kind: 'cleanup_failed', failure_stage: 'cleanup', failure_route: '/cleanup_audit'})
    expect(env.response_json).toContain('"row_count":3')
  })

  it('bounds each cleanup step with cleanup_timeout', async () => {
    const yaml = execution(`session:
  initialize: [{route: /seed_session, response_headers: {X-Session-Token: token}}]
  cleanup: [{route: /cleanup_audit, request_column: audit}, {route: /cleanup}]
  cleanup_timeout: 0.3
`)
    const run = await callRun('resource', yaml, [row('ct', {audit: {fault: 'slow', sleep_ms: 1500}})])
    const env = run.rows![0].execution
    expect(env).toMatchObject({failure_kind: 'cleanup_failed', failure_stage: 'cleanup'})
    expect(JSON.parse(env.cleanup_errors_json)[0]).toMatchObject({route: '/cleanup_audit', kind: 'timeout'})
    expect(gym.calls('/cleanup')).toBe(1)
  })

  it('never writes initialize response bodies, tokens, cookies or bearer tokens anywhere', async () => {
    const run = await callRun('resource', execution(`bearer_token_env: GYM_TOKEN\n${sessionBlock()}`), [row('s1', {fault: 'echo_token'}), row('s2')], {env: {GYM_TOKEN: 'bearer-secret-value'}})
    expect(run.summary.completed).toBe(2)
    const everything = await run.everything()
    expect(everything).not.toContain('init-secret-')
    expect(everything).not.toContain('bearer-secret-value')
    for (const r of gym.requests.filter((q) => q.route === '/execute')) {
      expect(everything).not.toContain(r.headers['x-session-token'])
      expect(everything).not.toContain(String(r.headers.cookie).split('=')[1])
    }
    // the echoed token inside a response is scrubbed
    expect(run.rows![0].execution.response_json).toContain('token is [redacted]')
  })
})

describe('call resource: limits', () => {
  it('max_parallel_requests bounds whole row lifecycles including cleanup', async () => {
    const yaml = execution(`max_parallel_requests: 3\n${sessionBlock('[{route: /cleanup_audit, request_column: audit}, {route: /cleanup}]')}`)
    const rows = Array.from({length: 12}, (_, i) => row(`l${i}`, {hold_ms: 40, audit: {fault: 'slow', sleep_ms: 40}}))
    const run = await callRun('resource', yaml, rows)
    expect(run.summary.completed).toBe(12)
    // a session lives from initialize until cleanup: at most 3 at once, and the limit was used
    expect(gym.maxLiveSessions()).toBe(3)
    expect(gym.maxConcurrentExecutes()).toBeLessThanOrEqual(3)
  })
})

describe('call resource: evidence', () => {
  it('writes one attempt artifact per row, separate attempts for repeated row ids', async () => {
    const run = await callRun('resource', execution(), [row('same'), row('same'), row('other')])
    const envs = run.rows!.map((r) => r.execution)
    expect(new Set(envs.map((e) => e.attempt_id)).size).toBe(3)
    const attempts = await readAttempts(run.evidenceDir)
    expect(attempts.map((a) => a.attempt_id).sort()).toEqual(envs.map((e) => e.attempt_id).sort())
    for (const env of envs) {
      expect(env.artifact).toMatch(/^attempts\/\d{8}T\d{6}Z-\d+\.jsonl:[1-3]$/)
      expect((await run.artifact(env)).attempt_id).toBe(env.attempt_id)
    }
    expect((await readdir(path.join(run.evidenceDir, 'attempts'))).length).toBe(1)
    const journal = (await readFile(path.join(run.evidenceDir, 'journal.jsonl'), 'utf8')).trim().split('\n')
    expect(journal).toHaveLength(4)
    expect(JSON.parse(await readFile(path.join(run.evidenceDir, 'summary.json'), 'utf8'))).toMatchObject({rows: 3, completed: 3})
  })

  it('turns an unwritable attempts directory into artifact storage failures', async () => {
    const dir = await tempDir()
    const evidenceDir = path.join(dir, 'evidence')
    await mkdir(evidenceDir, {recursive: true})
    await writeFile(path.join(evidenceDir, 'attempts'), 'not a directory')
    const run = await callRun('resource', execution(sessionBlock()), [row(1)], {dir, evidenceDir})
    expect(run.rows![0].execution).toMatchObject({status: 'failed', failure_kind: 'artifact_storage_failed', failure_stage: 'storage', artifact: null})
    // the call itself completed and cleaned up
    expect(gym.calls('/cleanup')).toBe(1)
  })

  it('refuses an evidence directory that cannot be created, before calling anything', async () => {
    const dir = await tempDir()
    await writeFile(path.join(dir, 'file'), 'x')
    const error = await callRun('resource', execution(), [row(1)], {dir, evidenceDir: path.join(dir, 'file', 'evidence')}).catch((e) => e)
    expect(isGymError(error)).toBe(true)
    expect(error.code).toBe('E_CALL_EVIDENCE_UNWRITABLE')
    expect(error.exit).toBe(2)
    expect(gym.requests).toHaveLength(0)
  })

  it('refuses to reuse an evidence directory without --resume', async () => {
    const first = await callRun('resource', execution(), [row(1)])
    const error = await callRun('resource', execution(), [row(1)], {dir: first.dir}).catch((e) => e)
    expect(error.code).toBe('E_CALL_EVIDENCE_EXISTS')
    expect(error.hint).toContain('--resume')
  })
})

describe('call resource: cancellation and resume', () => {
  it('cancels in-flight rows, runs their cleanup, writes their evidence, and resume calls only unfinished rows in input order', async () => {
    const controller = new AbortController()
    const yaml = execution(`max_parallel_requests: 2\n${sessionBlock()}`)
    const rows = [row('r0'), row('r1'), row('r2', {fault: 'slow', sleep_ms: 5000}), row('r3', {fault: 'slow', sleep_ms: 5000}), row('r4'), row('r5')]
    const run = await callRun('resource', yaml, rows, {
      signal: controller.signal,
      onProgress: (p) => {
        if (p.finished === 2) setTimeout(() => controller.abort(), 300)
      },
    })
    expect(run.summary).toMatchObject({interrupted: true, finished: 2, cancelled: 2, not_started: 2})
    expect(run.lines).toBeUndefined()
    expect(gym.liveSessions()).toBe(0)
    expect(gym.calls('/cleanup')).toBe(4)
    const attempts = await readAttempts(run.evidenceDir)
    expect(attempts.filter((a) => a.status === 'cancelled').map((a) => a.row_id).sort()).toEqual(['r2', 'r3'])
    for (const a of attempts.filter((x) => x.status === 'cancelled')) expect(a.lifecycle.map((l: any) => l.stage)).toEqual(['initialize', 'execute', 'cleanup'])

    gym.reset()
    // resume with the slow rows fixed on the service side would still be the same input, so resume as-is with a short timeout
    const resumed = await callRun('resource', yaml.replace('max_parallel_requests: 2', 'max_parallel_requests: 4\ntimeout: 0.5'), rows, {dir: run.dir, resume: true})
    expect(resumed.summary).toMatchObject({interrupted: false, rows: 6, finished: 6, resumed: 2})
    expect(resumed.rows!.map((r) => r.id)).toEqual(['r0', 'r1', 'r2', 'r3', 'r4', 'r5'])
    expect(gym.callsFor('/execute', 'r0')).toBe(0)
    expect(gym.callsFor('/execute', 'r1')).toBe(0)
    for (const id of ['r2', 'r3', 'r4', 'r5']) expect(gym.callsFor('/execute', id)).toBe(1)
    // finished rows keep the envelope (and attempt) of the interrupted run
    const journal = await readFile(path.join(run.evidenceDir, 'journal.jsonl'), 'utf8')
    expect(journal).toContain(resumed.rows![0].execution.attempt_id)
  })

  it('refuses to resume with a different input or config', async () => {
    const first = await callRun('resource', execution(), [row(1)])
    const error = await callRun('resource', execution('response_fields: {n: row_count}\n'), [row(1)], {dir: first.dir, resume: true}).catch((e) => e)
    expect(error.code).toBe('E_CALL_RESUME_MISMATCH')
    expect(error.exit).toBe(2)
  })
})
