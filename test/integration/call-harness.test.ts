import {mkdir, writeFile} from 'node:fs/promises'
import path from 'node:path'
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'

import {type GymFixture, startGymFixture} from '../fixtures/call/services.js'
import {callRun, tempDir} from '../helpers/call.js'

let resources: GymFixture
let agent: GymFixture

beforeAll(async () => {
  resources = await startGymFixture()
  agent = await startGymFixture()
})
afterAll(async () => {
  await resources.close()
  await agent.close()
})
afterEach(() => {
  expect(resources.liveSessions()).toBe(0)
  expect(agent.liveSessions()).toBe(0)
  resources.reset()
  agent.reset()
})

const answer = (extra = '') => `name: answer
evidence_column: harness_evidence
endpoint: ${agent.url}
row_id_column: id
request_columns:
  input: question
  shape: shape
provenance_columns: [seed]
${extra}`

const row = (id: string, shape: string, extra: Record<string, unknown> = {}) => ({id, question: `q-${id}`, shape, seed: 7, ...extra})

describe('call harness', () => {
  it('writes only the final assistant text to the answer column and the envelope to the evidence column', async () => {
    const run = await callRun('harness', answer(), [row('a', 'final'), row('u', 'unset_status_final')])
    const [a, u] = run.rows!
    expect(a.answer).toBe('answer to q-a')
    expect(u.answer).toBe('answer to q-u')
    expect(Object.keys(a.harness_evidence)).toEqual([
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
      'tool_trace_json',
    ])
    expect(a.harness_evidence).toMatchObject({status: 'completed', row_id: 'a', failure_kind: null, provenance_json: '{"seed":7}', response_json: null})
    // the tool trace of the agent's own loop is kept as evidence
    expect(JSON.parse(a.harness_evidence.tool_trace_json).map((i: any) => i.type)).toEqual(['function_call', 'function_call_output'])
    expect(u.harness_evidence.tool_trace_json).toBeNull()
    // the default harness route is /v1/responses and the full native response is in the artifact
    expect(agent.calls('/v1/responses')).toBe(2)
    const artifact = await run.artifact(a.harness_evidence)
    expect(artifact.response.body.output).toHaveLength(3)
    expect(artifact.harness.answer).toBe('answer to q-a')
    expect(run.summary.answers).toEqual({answered: 2, unanswered: 0})
  })

  it.each([
    ['pending_tool', 'pending tool call'],
    ['unset_status_pending', 'pending tool call'],
    ['commentary', 'commentary'],
    ['refusal', 'refusal without text'],
    ['incomplete', 'incomplete'],
    ['in_progress_message', 'not "completed"'],
  ])('gives a null answer plus failure evidence for %s output, without a caller-side tool loop', async (shape, reason) => {
    const run = await callRun('harness', answer(), [row('x', shape)])
    const out = run.rows![0]
    expect(out.answer).toBeNull()
    expect(out.harness_evidence).toMatchObject({status: 'failed', failure_kind: 'unfinished_harness_output', failure_stage: 'execute', failure_route: '/v1/responses'})
    expect(out.harness_evidence.failure_reason).toContain(reason)
    // exactly one call: a pending tool call is reported, never executed or continued
    expect(agent.requests.map((r) => r.route)).toEqual(['/v1/responses'])
  })

  it('adds the projected response_json to the evidence column and leaves the answer unchanged', async () => {
    const run = await callRun('harness', answer('response_fields:\n  response_id: id\n  model: model\n  missing: usage.total_tokens\n'), [row('p', 'final')])
    expect(run.rows![0].answer).toBe('answer to q-p')
    expect(run.rows![0].harness_evidence.response_json).toBe('{"response_id":"resp_1","model":"policy","missing":null}')
  })

  it('forwards the resource session cookie to the agent and clears the answer when cleanup fails', async () => {
    const yaml = answer(`request_column: task
session:
  initialize:
    - {endpoint: ${resources.url}, route: /seed_session, request_column: seed_body, response_headers: {X-Session-Token: token}}
  cleanup:
    - {endpoint: ${resources.url}, route: /cleanup_audit}
    - {endpoint: ${resources.url}, route: /cleanup}
`).replace('request_columns:\n  input: question\n  shape: shape\n', '')
    const run = await callRun('harness', yaml, [
      {id: 'ok', seed: 1, task: {input: 'q-ok', shape: 'final'}, seed_body: {}},
      {id: 'bad-cleanup', seed: 2, task: {input: 'q-bad', shape: 'final'}, seed_body: {cleanup_fault: 'fail'}},
    ])
    const [ok, bad] = run.rows!
    // the agent received the resource server's cookie and token (it answers 401 to unknown ones, so the names were forwarded, not validated there)
    const agentCall = agent.requests.find((r) => r.marker === 'q-ok')!
    expect(agentCall.headers.cookie).toMatch(/^gym_session=/)
    expect(ok.harness_evidence.failure_kind).toBe('http_rejected')
    expect(bad.answer).toBeNull()
    expect(resources.calls('/cleanup')).toBe(2)
  })

  it('clears the answer when cleanup fails after a completed answer', async () => {
    // agent and resource sessions on the same service: the execute call is accepted
    const yaml = `name: answer
evidence_column: harness_evidence
endpoint: ${resources.url}
row_id_column: id
request_column: task
session:
  initialize: [{route: /seed_session, request_column: seed_body, response_headers: {X-Session-Token: token}}]
  cleanup: [{route: /cleanup_audit}, {route: /cleanup}]
`
    const run = await callRun('harness', yaml, [
      {id: 'fine', task: {input: 'q1', shape: 'final'}, seed_body: {}},
      {id: 'cleanup-fails', task: {input: 'q2', shape: 'final'}, seed_body: {cleanup_fault: 'fail'}},
    ])
    const [fine, failing] = run.rows!
    expect(fine.answer).toBe('answer to q1')
    expect(failing.answer).toBeNull()
    expect(failing.harness_evidence).toMatchObject({status: 'failed', failure_kind: 'cleanup_failed', failure_stage: 'cleanup', failure_route: '/cleanup_audit'})
    expect(await run.artifact(failing.harness_evidence)).toMatchObject({harness: {answer: null}})
  })

  it('clears the answer when the attempt artifact cannot be written', async () => {
    const dir = await tempDir()
    const evidenceDir = path.join(dir, 'evidence')
    await mkdir(evidenceDir, {recursive: true})
    await writeFile(path.join(evidenceDir, 'attempts'), '')
    const run = await callRun('harness', answer(), [row('s', 'final')], {dir, evidenceDir})
    expect(run.rows![0].answer).toBeNull()
    expect(run.rows![0].harness_evidence).toMatchObject({status: 'failed', failure_kind: 'artifact_storage_failed', failure_stage: 'storage', artifact: null})
  })

  it('reports a malformed harness response', async () => {
    const run = await callRun('harness', answer(), [row('m', 'no_output')])
    expect(run.rows![0].harness_evidence).toMatchObject({failure_kind: 'malformed_response', failure_reason: 'harness response has no `output` array'})
    expect(run.rows![0].answer).toBeNull()
  })
})
