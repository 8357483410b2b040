/**
 * The fixture NeMo Gym / Relax Gateway emulator, run on the host with python3
 * (no Docker): the fixed `ray start` + `gym env start` interface, the Gateway
 * contract of reference §5 and the workplace/calendar resources servers.
 */
import {execa} from 'execa'
import fs from 'node:fs/promises'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {repeatedRows} from '../helpers/recipes.js'

import {
  CALENDAR_GRAPH,
  type GymLayout,
  type HostGym,
  PINNED_GYM_COMMIT,
  type RelaxCheckout,
  SNAPSHOT_DIR,
  WORKPLACE_GRAPH,
  freePortBlock,
  gatewayEnvironmentsJson,
  gymEnvStartArgs,
  makeRelaxCheckout,
  rayStartArgs,
  runHostTool,
  startHostGym,
  waitForReadyz,
} from '../helpers/relax-fixture.js'

const PROTOCOL = 'relax-nemo-gym/v1'
const HOST = '127.0.0.1'

let tmp: string
let checkout: RelaxCheckout

beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-fixture-gym-'))
  checkout = await makeRelaxCheckout(path.join(tmp, 'relax'))
})

afterAll(async () => {
  if (tmp) await fs.rm(tmp, {recursive: true, force: true})
})

function layoutAt(base: number): GymLayout {
  return {host: HOST, bindHost: HOST, gateway: base, agent: base + 1, resource: base + 2, head: base + 3, rayPort: base + 4, rayDashboardPort: base + 5}
}

async function json(method: string, url: string, body?: unknown): Promise<{status: number; body: any}> {
  const response = await fetch(url, {
    method,
    headers: body === undefined ? {} : {'content-type': 'application/json'},
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  })
  const text = await response.text()
  let parsed: any = text
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {
    // keep the text
  }
  return {status: response.status, body: parsed}
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// ---------------------------------------------------------------- real data

interface WorkplaceRow {
  id: number
  responses_create_params: {input: any[]; tools: any[]; parallel_tool_calls?: boolean; temperature?: number}
  ground_truth: Array<{name: string; arguments: string}>
  category: string
  environment_name: string
}

async function firstWorkplaceRow(): Promise<WorkplaceRow> {
  const text = await fs.readFile(path.join(SNAPSHOT_DIR, 'resources_servers/workplace_assistant/data/example.jsonl'), 'utf8')
  return JSON.parse(text.split('\n')[0])
}

// ---------------------------------------------------------------- scripted model

interface CallbackRecord {
  path: string
  authorization: string | undefined
  toolResults: number
  tools: number
  model: unknown
  temperature: unknown
}

/**
 * A Relax-like Responses API that scripts its turns by the number of
 * function_call_output items it is sent. The api key (bearer token) picks a
 * behaviour: "workplace-ok" (the deterministic trial), "slow" (answers after
 * 4 s), "bad-model" (HTTP 400).
 */
async function startScriptedModel(port: number, replyArgs: {search: string; reply: string}) {
  const calls: Record<string, CallbackRecord[]> = {}
  const turn = (id: string, items: any[]) => ({
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    model: 'model',
    status: 'completed',
    incomplete_details: null,
    output: items,
    usage: {input_tokens: 10, output_tokens: 5, total_tokens: 15},
  })
  const server = http.createServer((req, res) => {
    let raw = ''
    req.on('data', (chunk) => (raw += chunk))
    req.on('end', () => {
      const auth = req.headers.authorization
      const key = auth?.replace(/^Bearer /, '') ?? ''
      let body: any = {}
      try {
        body = JSON.parse(raw)
      } catch {
        // leave empty
      }
      const input: any[] = Array.isArray(body.input) ? body.input : []
      const toolResults = input.filter((item) => item?.type === 'function_call_output').length
      ;(calls[key] ??= []).push({
        path: req.url ?? '',
        authorization: auth,
        toolResults,
        tools: Array.isArray(body.tools) ? body.tools.length : 0,
        model: body.model,
        temperature: body.temperature,
      })
      const send = (status: number, payload: unknown) => {
        res.writeHead(status, {'content-type': 'application/json'})
        res.end(JSON.stringify(payload))
      }
      if (!req.url?.endsWith('/v1/responses')) return send(404, {error: 'not found'})
      if (key === 'bad-model') return send(400, {error: {message: 'scripted bad request'}})
      if (key === 'slow') {
        setTimeout(() => send(200, turn('resp_slow', [{type: 'function_call', id: 'fc_s', call_id: 'call_s', name: 'email_search_emails', arguments: JSON.stringify({query: replyArgs.search}), status: 'completed'}])), 4000)
        return
      }
      if (toolResults === 0) {
        return send(200, turn('resp_1', [{type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'email_search_emails', arguments: JSON.stringify({query: replyArgs.search}), status: 'completed'}]))
      }
      if (toolResults === 1) {
        return send(200, turn('resp_2', [{type: 'function_call', id: 'fc_2', call_id: 'call_2', name: 'email_reply_email', arguments: replyArgs.reply, status: 'completed'}]))
      }
      return send(200, turn('resp_3', [{type: 'message', id: 'msg_3', role: 'assistant', status: 'completed', content: [{type: 'output_text', text: 'Done.', annotations: []}]}]))
    })
  })
  await new Promise<void>((resolve) => server.listen(port, HOST, resolve))
  return {calls, close: () => new Promise<void>((resolve) => server.close(() => resolve()))}
}

function trialPayload(requestId: string, overrides: Record<string, any> = {}): any {
  return {
    protocol_version: PROTOCOL,
    request_id: requestId,
    session: {session_id: `session-${requestId}`, group_id: 'group-1', rollout_mode: 'eval', attempt: 1},
    environment: {name: 'workplace_assistant', config: 'workplace-assistant-v1', task: overrides.task ?? {messages: [{role: 'user', content: 'hi'}], metadata: {}}},
    model_endpoint: {base_url: overrides.baseUrl, api_key: overrides.apiKey ?? 'workplace-ok', model: 'model'},
    generation: {responses_create_params: {}, sampling_params: {temperature: 0.25}},
    interrupt_policy: 'protected',
    deadline_s: overrides.deadline_s ?? 120,
    lease_s: overrides.lease_s ?? 30,
    metadata: {integration_test: true},
    ...(overrides.extra ?? {}),
  }
}

/** The converted Relax form of a raw row (what the thin client sends as environment.task). */
function relaxTask(row: WorkplaceRow): any {
  const {responses_create_params: rcp, ...fields} = row
  const {input, tools, parallel_tool_calls: ptc, ...rest} = rcp
  return {messages: input, metadata: {...fields, tools, parallel_tool_calls: ptc, responses_create_params: rest}}
}

async function pollTerminal(gateway: string, requestId: string, renew = true, timeoutMs = 30_000): Promise<any> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    const snapshot = await json('GET', `${gateway}/v1/trials/${requestId}`)
    expect(snapshot.status).toBe(200)
    if (['completed', 'truncated', 'aborted', 'failed'].includes(snapshot.body.status)) return snapshot.body
    if (renew) expect((await fetch(`${gateway}/v1/trials/${requestId}/renew`, {method: 'POST'})).status).toBe(204)
    await sleep(100)
  }
  throw new Error(`trial ${requestId} not terminal after ${timeoutMs} ms`)
}

// ================================================================== workplace

describe('workplace service on the host emulator', () => {
  let gym: HostGym
  let layout: GymLayout
  let gateway: string
  let model: Awaited<ReturnType<typeof startScriptedModel>>
  let modelBase: string
  let row: WorkplaceRow
  let replyArgs: string

  beforeAll(async () => {
    row = await firstWorkplaceRow()
    // The scripted turns must be correct for the real first row: its ground truth is one reply.
    expect(row.ground_truth).toHaveLength(1)
    expect(row.ground_truth[0].name).toBe('email_reply_email')
    replyArgs = row.ground_truth[0].arguments
    expect(JSON.parse(replyArgs)).toEqual({email_id: '00000057', body: 'Thanks for the update - I will get back to you tomorrow.'})

    const base = await freePortBlock(8, 21000)
    layout = layoutAt(base)
    gateway = `http://${HOST}:${layout.gateway}`
    model = await startScriptedModel(base + 6, {search: 'Carlos Task Update', reply: replyArgs})
    modelBase = `http://${HOST}:${base + 6}/v1`
    const main = JSON.parse(gatewayEnvironmentsJson(layout, {environment: 'workplace_assistant', config: 'workplace-assistant-v1', agentName: 'workplace_assistant_simple_agent', maxConcurrency: 8, cleanupUrls: true}))
    const tight = JSON.parse(gatewayEnvironmentsJson(layout, {environment: 'workplace_assistant', config: 'workplace-tight', agentName: 'workplace_assistant_simple_agent', maxConcurrency: 1, queueCapacity: 1, maxDeadlineS: 300, cleanupUrls: true}))
    gym = await startHostGym(checkout, {
      layout,
      graph: WORKPLACE_GRAPH,
      registration: {environment: 'workplace_assistant', config: 'workplace-assistant-v1', agentName: 'workplace_assistant_simple_agent'},
      env: {NEMO_GYM_GATEWAY_ENVIRONMENTS_JSON: JSON.stringify({...main, ...tight})},
    })
    await gym.waitForOutput(/All 3 \/ 3 servers ready!/)
  })

  afterAll(async () => {
    if (gym) expect(await gym.stop()).toBe(0)
    if (model) await model.close()
  })

  it('reports the /readyz and /healthz metadata', async () => {
    const ready = await waitForReadyz(gateway)
    expect(ready).toMatchObject({protocol_version: PROTOCOL, gym_commit: PINNED_GYM_COMMIT, trials: 0, active_trials: 0, terminal_trials: 0, janitor_healthy: true, ready: true})
    expect(ready.service_epoch).toMatch(/^[0-9a-f]{32}$/)
    expect(ready.config_fingerprint).toMatch(/^[0-9a-f]{64}$/)
    const health = await json('GET', `${gateway}/healthz`)
    expect(health.status).toBe(200)
    expect(health.body).not.toHaveProperty('ready')
    expect(health.body.service_epoch).toBe(ready.service_epoch)
    const instances = await json('GET', `http://${HOST}:${layout.head}/server_instances`)
    expect(instances.body.map((i: any) => i.process_name).sort()).toEqual(['policy_model', 'workplace_assistant', 'workplace_assistant_simple_agent'])
  })

  it('rejects bad create requests with the documented status codes', async () => {
    const post = (body: unknown) => json('POST', `${gateway}/v1/trials`, body)
    expect(await post('{not json')).toEqual({status: 400, body: {detail: 'request body must be valid JSON'}})
    const unregistered = trialPayload('r-unreg', {baseUrl: modelBase})
    unregistered.environment.config = 'nope-v1'
    expect(await post(unregistered)).toEqual({status: 400, body: {detail: 'environment/config is not registered'}})
    expect(await post(trialPayload('r-policy', {baseUrl: modelBase, extra: {interrupt_policy: 'resumable'}}))).toEqual({
      status: 400,
      body: {detail: 'interrupt_policy does not match the registered environment capability'},
    })
    expect(await post(trialPayload('r-deadline', {baseUrl: modelBase, deadline_s: 1801}))).toEqual({status: 400, body: {detail: 'deadline_s exceeds the registered environment maximum'}})
    expect(await post(trialPayload('r-allow', {baseUrl: 'http://localhost:1/v1'}))).toEqual({
      status: 400,
      body: {detail: 'model_endpoint.base_url host is not in the callback allowlist'},
    })
    const wrongProtocol = trialPayload('r-proto', {baseUrl: modelBase})
    wrongProtocol.protocol_version = 'relax-nemo-gym/v0'
    expect((await post(wrongProtocol)).status).toBe(422)
    const forbidden = trialPayload('r-header', {baseUrl: modelBase})
    forbidden.model_endpoint.headers = {Host: 'evil'}
    const forbiddenReply = await post(forbidden)
    expect(forbiddenReply.status).toBe(422)
    expect(forbiddenReply.body.detail).toContain('forbidden header')
    const override = trialPayload('r-override', {baseUrl: modelBase})
    override.model_endpoint.headers = {authorization: 'Bearer other'}
    expect((await post(override)).status).toBe(422)
    expect((await post({...trialPayload('r-lease', {baseUrl: modelBase}), lease_s: -1})).status).toBe(422)
    expect(await json('GET', `${gateway}/v1/trials/missing`)).toEqual({status: 404, body: {detail: 'trial not found'}})
    expect((await json('POST', `${gateway}/v1/trials/missing/renew`)).status).toBe(404)
    expect((await json('POST', `${gateway}/v1/trials/missing/abort`)).status).toBe(404)
    expect(await json('POST', `${gateway}/ng-rollout/${'ab'.repeat(16)}-0/v1/responses`, {input: []})).toEqual({
      status: 410,
      body: {detail: 'callback capability is unavailable'},
    })
    // The rows where the real Gateway differs from the old fixture (relax-gateway-observed.md).
    const {interrupt_policy: _policy, ...withoutPolicy} = trialPayload('r-no-policy', {baseUrl: modelBase})
    expect((await post(withoutPolicy)).status).toBe(422)
    expect((await post(trialPayload('r-ftp', {baseUrl: 'ftp://127.0.0.1/v1'}))).status).toBe(422)
    const rollout = `${gateway}/ng-rollout/${'cd'.repeat(16)}-0/v1`
    expect((await json('POST', `${rollout}/responses`, '[1, 2]')).status).toBe(422)
    expect((await json('POST', `${rollout}/responses`, '{not json')).status).toBe(400)
    const sse = await fetch(`${rollout}/messages`, {method: 'POST', headers: {'content-type': 'application/json'}, body: JSON.stringify({stream: true, messages: []})})
    expect(sse.status).toBe(200)
    expect(sse.headers.get('content-type')).toContain('text/event-stream')
    const events = await sse.text()
    expect(events).toMatch(/^event: ping\n/)
    expect(events).toMatch(/event: error\ndata: \{"type": "error", "error": \{"type": "api_error", "message": "callback capability is unknown or no longer active"\}\}/)
    expect((await json('POST', `${gateway}/v1/responses`, {input: []})).status).toBe(404)
    expect((await json('POST', `${gateway}/v1/chat/completions`, {messages: []})).status).toBe(404)
    for (const [method, url] of [['GET', `${gateway}/v1/trials`], ['GET', `${gateway}/v1/trials/x/renew`], ['POST', `${gateway}/readyz`], ['GET', `${rollout}/responses`]]) {
      expect({method, url, status: (await json(method, url)).status}).toEqual({method, url, status: 405})
    }
    expect((await json('GET', `${gateway}/`)).status).toBe(404)
    expect(await json('GET', `${gateway}/v1/trials/a%2Fb`)).toEqual({status: 404, body: {detail: 'Not Found'}})
    const ready = await json('GET', `${gateway}/readyz`)
    expect(ready.body.trials).toBe(0)
  })

  it('answers like the real workplace server: 400 without a session, 200 for an unknown tool, its cookie name, case-insensitive grading', async () => {
    const resource = `http://${HOST}:${layout.resource}`
    expect(await json('POST', `${resource}/email_search_emails`, {query: 'Carlos'})).toMatchObject({status: 400})
    const seeded = await fetch(`${resource}/seed_session`, {method: 'POST', headers: {'content-type': 'application/json'}, body: '{}'})
    const cookie = seeded.headers.get('set-cookie') ?? ''
    expect(cookie).toMatch(/^WorkbenchResourcesServer___workplace_assistant=[0-9a-f]+;/)
    const session = {cookie: cookie.split(';')[0], 'content-type': 'application/json'}
    const unknown = await fetch(`${resource}/no_such_tool`, {method: 'POST', headers: session, body: '{}'})
    expect(unknown.status).toBe(200)
    expect((await unknown.json()).output).toContain('unknown tool no_such_tool')
    expect((await json('GET', `${resource}/verify`)).status).toBe(405)
    expect(await json('POST', `${resource}/aggregate_metrics`, {verify_responses: []})).toEqual({status: 200, body: {}})
    // Reply bodies compare case-insensitively.
    const truth = JSON.parse(typeof row.ground_truth === 'string' ? row.ground_truth : JSON.stringify(row.ground_truth))
    const shouted = truth.map((c: any) => ({type: 'function_call', name: c.name, arguments: (typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments)).toUpperCase().replace(/"EMAIL_ID"/g, '"email_id"').replace(/"BODY"/g, '"body"')}))
    const graded = await json('POST', `${resource}/verify`, {...row, response: {output: shouted}})
    expect(graded).toMatchObject({status: 200, body: {reward: 1}})
  })

  it('runs the deterministic workplace trial on the first real row (reward 1.0, history [0,1,2])', async () => {
    const payload = trialPayload('relax-wa-trial-1', {baseUrl: modelBase, task: relaxTask(row)})
    const created = await json('POST', `${gateway}/v1/trials`, payload)
    expect(created.status).toBe(202)
    expect(created.body).toMatchObject({protocol_version: PROTOCOL, request_id: 'relax-wa-trial-1', reward: null, error: null})
    // Like the real Gateway, create answers before scheduling: queued, then running.
    expect(created.body.status).toBe('queued')
    // Idempotent create; a different payload under the same id is a conflict.
    expect((await json('POST', `${gateway}/v1/trials`, payload)).status).toBe(202)
    expect(await json('POST', `${gateway}/v1/trials`, {...payload, lease_s: 31})).toEqual({status: 409, body: {detail: 'request_id already exists with a different payload'}})

    const final = await pollTerminal(gateway, 'relax-wa-trial-1')
    expect(final).toMatchObject({status: 'completed', reward: 1, error: null, artifact_ref: null})
    expect(final.metrics).toMatchObject({tool_calls: 2, tool_outputs: 2, assistant_messages: 1, model_output_items: 5})
    const calls = model.calls['workplace-ok']
    expect(calls.map((c) => c.toolResults)).toEqual([0, 1, 2])
    for (const call of calls) {
      expect(call.authorization).toBe('Bearer workplace-ok')
      expect(call.path).toBe('/v1/responses')
      expect(call.tools).toBe(row.responses_create_params.tools.length)
      expect(call.model).toBe('model')
      expect(call.temperature).toBe(0.25) // sampling_params merged over the row's temperature
    }
    // Renew on a terminal trial is a no-op 204.
    expect((await fetch(`${gateway}/v1/trials/relax-wa-trial-1/renew`, {method: 'POST'})).status).toBe(204)
    const ready = await json('GET', `${gateway}/readyz`)
    expect(ready.body).toMatchObject({active_trials: 0, ready: true})
    expect(ready.body.trials).toBeGreaterThanOrEqual(1)
    // Secrets never reach the logs.
    expect(gym.output()).not.toContain('workplace-ok')
    expect(gym.output()).toMatch(/"POST \/ng-rollout\/[0-9a-f]{32}-0\/v1\/responses HTTP\/1.1" 200/)
  })

  it('scores a wrong reply body 0.0 (state equivalence on the real ground truth)', async () => {
    const wrong = await startScriptedModel(layout.gateway + 7, {search: 'Carlos Task Update', reply: JSON.stringify({email_id: '00000057', body: 'Sure.'})})
    try {
      const payload = trialPayload('relax-wa-wrong', {baseUrl: `http://${HOST}:${layout.gateway + 7}/v1`, task: relaxTask(row)})
      expect((await json('POST', `${gateway}/v1/trials`, payload)).status).toBe(202)
      const final = await pollTerminal(gateway, 'relax-wa-wrong')
      expect(final).toMatchObject({status: 'completed', reward: 0})
      expect(final.metrics.tool_calls).toBe(2)
    } finally {
      await wrong.close()
    }
  })

  it('aborts a running trial: cleanup confirmed by the probe, later callbacks get 410', async () => {
    const payload = trialPayload('relax-wa-abort', {baseUrl: modelBase, apiKey: 'slow', task: relaxTask(row)})
    expect((await json('POST', `${gateway}/v1/trials`, payload)).status).toBe(202)
    const deadline = Date.now() + 10_000
    while (!(model.calls.slow?.length >= 1) && Date.now() < deadline) await sleep(50)
    expect(model.calls.slow?.length).toBeGreaterThanOrEqual(1)
    const aborted = await json('POST', `${gateway}/v1/trials/relax-wa-abort/abort`)
    expect(aborted.status).toBe(202)
    // Asynchronous, like the real Gateway: the 202 carries the snapshot from before the cleanup.
    expect(aborted.body).toMatchObject({status: 'running', error: null})
    const final = await pollTerminal(gateway, 'relax-wa-abort', false, 10_000)
    expect(final).toMatchObject({status: 'aborted', error: {code: 'aborted'}})
    // Idempotent: aborting again returns the same terminal snapshot.
    expect((await json('POST', `${gateway}/v1/trials/relax-wa-abort/abort`)).body.status).toBe('aborted')
    // The slow reply arrives after the abort; the agent's next callback is refused with 410.
    await gym.waitForOutput(/"POST \/ng-rollout\/[0-9a-f]{32}-0\/v1\/responses HTTP\/1.1" (?:410|500)/, 15_000)
    // A callback cancelled in flight: the Gateway's CancelledError, and Gym's middleware twice, as the real service logs it.
    await gym.waitForOutput(/CancelledError[\s\S]*RuntimeError: No response returned\.[\s\S]*RuntimeError: No response returned\./, 15_000)
  })

  it('expires a trial whose lease is not renewed (aborted/lease_expired)', async () => {
    const payload = trialPayload('relax-wa-lease', {baseUrl: modelBase, apiKey: 'slow', lease_s: 0.5, task: relaxTask(row)})
    expect((await json('POST', `${gateway}/v1/trials`, payload)).status).toBe(202)
    const final = await pollTerminal(gateway, 'relax-wa-lease', false, 10_000)
    expect(final).toMatchObject({status: 'aborted', error: {code: 'lease_expired'}})
  })

  it('truncates a trial at its deadline (truncated/deadline_exceeded)', async () => {
    const payload = trialPayload('relax-wa-deadline', {baseUrl: modelBase, apiKey: 'slow', deadline_s: 1.5, task: relaxTask(row)})
    expect((await json('POST', `${gateway}/v1/trials`, payload)).status).toBe(202)
    const final = await pollTerminal(gateway, 'relax-wa-deadline', true, 10_000)
    expect(final).toMatchObject({status: 'truncated', reward: null, error: {code: 'deadline_exceeded'}})
  })

  it('answers 429 when the environment queue is full, and confirms cleanup of a queued trial', async () => {
    const tight = (id: string) => {
      const p = trialPayload(id, {baseUrl: modelBase, apiKey: 'slow', task: relaxTask(row)})
      p.environment.config = 'workplace-tight'
      return p
    }
    expect((await json('POST', `${gateway}/v1/trials`, tight('relax-tight-a'))).status).toBe(202)
    expect((await json('POST', `${gateway}/v1/trials`, tight('relax-tight-b'))).status).toBe(202)
    expect(await json('POST', `${gateway}/v1/trials`, tight('relax-tight-c'))).toEqual({status: 429, body: {detail: 'environment queue is full'}})
    expect((await json('GET', `${gateway}/v1/trials/relax-tight-b`)).body.status).toBe('queued')
    expect((await json('POST', `${gateway}/v1/trials/relax-tight-b/abort`)).status).toBe(202)
    expect(await pollTerminal(gateway, 'relax-tight-b', false, 10_000)).toMatchObject({status: 'aborted', error: {code: 'aborted'}})
    expect((await json('POST', `${gateway}/v1/trials/relax-tight-a/abort`)).status).toBe(202)
    expect((await pollTerminal(gateway, 'relax-tight-a', false, 10_000)).status).toBe('aborted')
  })

  it('fails a trial whose agent errors (failed/agent_error, traceback logged); /agentic_api base gets /v1 appended', async () => {
    const payload = trialPayload('relax-wa-agent-error', {baseUrl: `http://${HOST}:${layout.gateway + 6}/agentic_api`, apiKey: 'bad-model', task: relaxTask(row)})
    expect((await json('POST', `${gateway}/v1/trials`, payload)).status).toBe(202)
    const final = await pollTerminal(gateway, 'relax-wa-agent-error')
    // The real Gateway reports the code alone; the cause is only in its log.
    expect(final).toMatchObject({status: 'failed', reward: null, error: {code: 'agent_error'}})
    expect(final.error).toEqual({code: 'agent_error'})
    expect(model.calls['bad-model'][0].path).toBe('/agentic_api/v1/responses')
    await gym.waitForOutput(/NeMo Gym trial failed request_id=relax-wa-agent-error rollout_id=[0-9a-f]{32}-0/)
    expect(gym.output()).toContain('Traceback (most recent call last)')
    const ready = await json('GET', `${gateway}/readyz`)
    expect(ready.body.active_trials).toBe(0)
  })
  it('runs a sample through run_agent_app.sh and the thin client (reward written, failures exit non-zero)', async () => {
    const script = path.join(checkout.root, 'examples/nemo_gym_agentic/scripts/run_agent_app.sh')
    const io = await fs.mkdtemp(path.join(tmp, 'io-'))
    const input = path.join(io, 'input.json')
    const output = path.join(io, 'output.json')
    await fs.writeFile(input, JSON.stringify(relaxTask(row)))
    const env = {
      RELAX_INPUT_JSON: input, RELAX_OUTPUT_JSON: output, RELAX_SESSION_ID: 'thin-client-session', RELAX_SESSION_IO_DIR: io,
      RELAX_BASE_URL: modelBase, NEMO_GYM_URL: gateway, NEMO_GYM_ENVIRONMENT: 'workplace_assistant', NEMO_GYM_CONFIG: 'workplace-assistant-v1',
      NEMO_GYM_DEADLINE_S: '600', NEMO_GYM_LEASE_S: '60', NEMO_GYM_POLL_INTERVAL_S: '0.1', RELAX_PYTHON: checkout.python!,
    }
    const ok = await execa('bash', [script], {reject: false, env})
    expect(ok.stderr).toBe('')
    expect(ok.exitCode).toBe(0)
    const doc = JSON.parse(await fs.readFile(output, 'utf8'))
    expect(doc).toMatchObject({reward: 1, metadata: {nemo_gym: {status: 'completed', metrics: {tool_calls: 2, tool_outputs: 2}}}})
    expect(doc.metadata.nemo_gym.request_id).toMatch(/^relax-[0-9a-f]{64}$/)
    const failing = await execa('bash', [script], {reject: false, env: {...env, RELAX_SESSION_ID: 'bad-model', RELAX_OUTPUT_JSON: path.join(io, 'bad.json')}})
    expect(failing.exitCode).toBe(1)
    expect(failing.stderr).toContain('NeMo Gym thin client failed')
    expect(failing.stderr).toContain('agent_error')
    const {NEMO_GYM_URL: _omit, ...withoutUrl} = env
    const missing = await execa('bash', [script], {reject: false, env: withoutUrl, extendEnv: false})
    expect(missing.exitCode).not.toBe(0)
    expect(missing.stderr).toContain('NEMO_GYM_URL must be set')
  })
})

// ================================================================== calendar, start-up

describe('calendar service start-up on the host emulator', () => {
  let layout: GymLayout

  beforeAll(async () => {
    layout = layoutAt(await freePortBlock(6, 21300))
  })

  const calendarRegistration = {environment: 'calendar', config: 'calendar-v1', agentName: 'calendar_simple_agent'}

  function verifyBody(startTime: string) {
    return {
      responses_create_params: {input: [{role: 'system', content: 'Return the calendar as JSON.'}, {role: 'user', content: 'Schedule Planning at 10am for one hour.'}], tools: []},
      exp_cal_state: {'0': {event_id: 0, event_name: 'Planning', duration: 60, constraint: 'at 10am', min_time: '10:00', max_time: '16:00'}},
      response: {object: 'response', output: [{type: 'message', role: 'assistant', content: [{type: 'output_text', text: JSON.stringify([{event_id: 0, event_name: 'Planning', start_time: startTime, duration: 60}])}]}]},
    }
  }

  it('goes 503 -> 200 on /readyz (ready_delay_s), verifies 10:00 -> 1.0 and 11:00 -> 0.0; like real Gym a malformed /verify is a 422 without a traceback, a JSON body sent as text/plain a 500 with one', async () => {
    const faults = path.join(tmp, 'faults-delay.json')
    await fs.writeFile(faults, JSON.stringify({ready_delay_s: 2}))
    const gym = await startHostGym(checkout, {layout, graph: CALENDAR_GRAPH, registration: calendarRegistration, env: {FIXTURE_GYM_FAULTS_FILE: faults}})
    try {
      const gateway = `http://${HOST}:${layout.gateway}`
      await gym.waitForOutput(/Relax Gateway ready to register trials/)
      const early = await json('GET', `${gateway}/readyz`)
      expect(early.status).toBe(503)
      expect(early.body).toMatchObject({ready: false, protocol_version: PROTOCOL, trials: 0, janitor_healthy: true})
      const ready = await waitForReadyz(gateway, 20_000)
      expect(ready.ready).toBe(true)
      await gym.waitForOutput(/All 3 \/ 3 servers ready!/)
      const resource = `http://${HOST}:${layout.resource}`
      expect((await json('POST', `${resource}/verify`, verifyBody('10:00'))).body.reward).toBe(1)
      expect((await json('POST', `${resource}/verify`, verifyBody('11:00'))).body.reward).toBe(0)
      for (const malformed of [{response: 'not an object'}, {}, '[]', '{not json', '']) {
        const bad = await json('POST', `${resource}/verify`, malformed)
        expect({malformed, status: bad.status}).toEqual({malformed, status: 422})
      }
      await gym.waitForOutput(/Validation error on POST \/verify/)
      expect(gym.output()).not.toMatch(/Traceback \(most recent call last\)/)
      const asText = await fetch(`${resource}/verify`, {method: 'POST', headers: {'content-type': 'text/plain'}, body: '{}'})
      expect(asText.status).toBe(500)
      await gym.waitForOutput(/Traceback \(most recent call last\)/)
      expect(gym.output()).toMatch(/\(calendar\) TypeError: Object of type bytes is not JSON serializable/)
    } finally {
      expect(await gym.stop()).toBe(0)
    }
  })

  it("stock Gym (built without Relax's traceback patch): a failed inner-server call is a silent 500; its own validation handler still prints a traceback", async () => {
    const stock = await makeRelaxCheckout(path.join(tmp, 'relax-stock'), {tracebackPatch: false})
    expect(await fs.readFile(path.join(stock.gymRoot!, 'nemo_gym', 'server_utils.py'), 'utf8')).not.toContain('print(format_exc(), flush=True)')
    expect(await fs.readFile(path.join(checkout.gymRoot!, 'nemo_gym', 'server_utils.py'), 'utf8')).toContain('print(format_exc(), flush=True)')
    const stockLayout = layoutAt(await freePortBlock(6, 21600))
    const gym = await startHostGym(stock, {layout: stockLayout, graph: CALENDAR_GRAPH, registration: calendarRegistration})
    try {
      await waitForReadyz(`http://${HOST}:${stockLayout.gateway}`, 20_000)
      // The agent calls its model server with no trial behind it: 410, so the inner call fails.
      const run = await json('POST', `http://${HOST}:${stockLayout.agent}/run`, {...verifyBody('10:00'), response: undefined})
      expect(run.status).toBe(500)
      expect(run.body.detail).toMatch(/^exception calling an inner server: model call failed with HTTP \d{3}/)
      await gym.waitForOutput(/"POST \/run HTTP\/1.1" 500/)
      expect(gym.output()).not.toMatch(/Traceback \(most recent call last\)/)
      const asText = await fetch(`http://${HOST}:${stockLayout.resource}/verify`, {method: 'POST', headers: {'content-type': 'text/plain'}, body: '{}'})
      expect(asText.status).toBe(500)
      await gym.waitForOutput(/\(calendar\) TypeError: Object of type bytes is not JSON serializable/)
    } finally {
      expect(await gym.stop()).toBe(0)
    }
  })

  it('keeps /readyz at 503 when a readiness URL never answers (never_ready)', async () => {
    const faults = path.join(tmp, 'faults-never.json')
    await fs.writeFile(faults, JSON.stringify({never_ready: true, gym_commit: 'deadbeef', stale_trials: 2}))
    const gym = await startHostGym(checkout, {layout, graph: CALENDAR_GRAPH, registration: calendarRegistration, env: {FIXTURE_GYM_FAULTS_FILE: faults}})
    try {
      await gym.waitForOutput(/Relax Gateway ready to register trials/)
      await sleep(1500)
      const ready = await json('GET', `http://${HOST}:${layout.gateway}/readyz`)
      expect(ready.status).toBe(503)
      expect(ready.body).toMatchObject({ready: false, gym_commit: 'deadbeef', trials: 2, active_trials: 2})
      expect(gym.output()).not.toContain('servers ready!')
      expect(gym.output()).toContain('"POST /v1/trials HTTP/1.1" 202')
    } finally {
      expect(await gym.stop()).toBe(0)
    }
  })

  it('fails gym env start when an override names a wrong graph instance', async () => {
    const args = gymEnvStartArgs(layout, {...CALENDAR_GRAPH, agentName: 'calendar_agent'})
    const rayTmp = await fs.mkdtemp(path.join(tmp, 'ray-'))
    expect((await runHostTool(checkout, 'ray', rayStartArgs(layout, rayTmp))).exitCode).toBe(0)
    const result = await runHostTool(checkout, 'gym', args, {NEMO_GYM_GATEWAY_ENVIRONMENTS_JSON: gatewayEnvironmentsJson(layout, calendarRegistration)})
    expect(result.exitCode).not.toBe(0)
    expect(result.stdout + result.stderr).toContain("++calendar_agent.responses_api_agents.simple_agent.host")
    expect(result.stdout + result.stderr).toContain("'calendar_agent'")
  })

  it('fails the graph when the Gateway registration does not match it (validate_nemo_gym_graph)', async () => {
    const rayTmp = await fs.mkdtemp(path.join(tmp, 'ray-'))
    expect((await runHostTool(checkout, 'ray', rayStartArgs(layout, rayTmp))).exitCode).toBe(0)
    const wrongAgent = gatewayEnvironmentsJson({...layout, agent: layout.agent + 50}, calendarRegistration)
    const result = await runHostTool(checkout, 'gym', gymEnvStartArgs(layout, CALENDAR_GRAPH), {NEMO_GYM_GATEWAY_ENVIRONMENTS_JSON: wrongAgent})
    expect(result.exitCode).toBe(1)
    expect(result.stdout).toContain('does not match agent_url port')
    expect(result.stdout).toContain('Process policy_model finished unexpectedly!')
    const missing = await runHostTool(checkout, 'gym', gymEnvStartArgs(layout, CALENDAR_GRAPH), {NEMO_GYM_GATEWAY_ENVIRONMENTS_JSON: ''})
    expect(missing.stdout).toContain('NEMO_GYM_GATEWAY_ENVIRONMENTS_JSON must be set')
  })

  it('refuses gym env start without a private Ray head at ray_head_node_address', async () => {
    const result = await runHostTool(checkout, 'gym', gymEnvStartArgs({...layout, rayPort: layout.rayPort + 77}, CALENDAR_GRAPH), {
      NEMO_GYM_GATEWAY_ENVIRONMENTS_JSON: gatewayEnvironmentsJson(layout, calendarRegistration),
    })
    expect(result.exitCode).toBe(1)
    expect(result.stdout).toContain('Failed to connect to Ray cluster')
  })
})

// ================================================================== CLIs

describe('fixture Gym config loading, as real Gym reads it through Hydra', () => {
  const service = path.resolve('test/fixtures/relax-checkout/examples/nemo_gym_agentic/service')
  const load = (overrides: string[]) => execa('python3', ['-c', [
    'import json, sys',
    'from fixture_gym.config import build_global_config, ConfigError',
    'try:',
    '    cfg, _ = build_global_config(json.loads(sys.argv[1]), sys.argv[2])',
    '    print(json.dumps({k: v for k, v in cfg.items() if k.startswith(("gsm8k", "math_with_judge"))}))',
    'except ConfigError as e:',
    '    print(e); sys.exit(3)',
  ].join('\n'), JSON.stringify(['+config_paths=[benchmarks/gsm8k/config.yaml]', ...overrides]), SNAPSHOT_DIR], {cwd: service, reject: false})

  it('refuses a port set on an instance that _inherit_from another, and carries one set on its source', async () => {
    const own = await load(['++gsm8k_math_with_judge_resources_server.resources_servers.math_with_judge.port=24002'])
    expect(own.exitCode).toBe(3)
    expect(own.stdout).toBe("Key 'port' is not in struct\n    full_key: math_with_judge.resources_servers.math_with_judge.port\n    object_type=dict")
    const viaSource = await load(['++math_with_judge.resources_servers.math_with_judge.port=24002', '++math_with_judge.resources_servers.math_with_judge.host=127.0.0.1'])
    expect(viaSource.exitCode, viaSource.stdout).toBe(0)
    const config = JSON.parse(viaSource.stdout)
    expect(config.gsm8k_math_with_judge_resources_server.resources_servers.math_with_judge).toMatchObject({port: 24002, host: '127.0.0.1'})
    // The source is removed: only the inheriting instance is started.
    expect(config.math_with_judge).toBeUndefined()
  })
})

describe('fixture ray and gym CLIs', () => {
  it('ray start --head refuses when RAY_ADDRESS is set, and when the GCS port is taken', async () => {
    const layout = layoutAt(await freePortBlock(6, 21600))
    const rayTmp = await fs.mkdtemp(path.join(tmp, 'ray-'))
    const refused = await runHostTool(checkout, 'ray', rayStartArgs(layout, rayTmp), {RAY_ADDRESS: '127.0.0.1:6379'})
    expect(refused.exitCode).toBe(1)
    expect(refused.stderr).toContain('RAY_ADDRESS')
    const blocker = http.createServer()
    await new Promise<void>((resolve) => blocker.listen(layout.rayPort, HOST, resolve))
    try {
      const busy = await runHostTool(checkout, 'ray', rayStartArgs(layout, rayTmp))
      expect(busy.exitCode).toBe(1)
      expect(busy.stderr).toContain('already in use')
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()))
    }
    const ok = await runHostTool(checkout, 'ray', rayStartArgs(layout, rayTmp))
    expect(ok.exitCode).toBe(0)
    const record = JSON.parse(await fs.readFile(path.join(rayTmp, 'ray-start.json'), 'utf8'))
    expect(record.flags).toMatchObject({head: true, port: layout.rayPort, 'include-dashboard': 'false'})
    const stop = await runHostTool(checkout, 'ray', ['stop'])
    expect(stop.exitCode).toBe(2)
  })

  it('gym dataset download copies from the offline hub and names a missing artifact', async () => {
    const out = path.join(tmp, 'data', 'nested', 'calendar_train.jsonl')
    const ok = await runHostTool(checkout, 'gym', ['dataset', 'download', '--repo-id', 'nvidia/Nemotron-RL-agent-calendar_scheduling', '--artifact', 'train.jsonl', '--output', out])
    expect(ok.exitCode).toBe(0)
    expect(await fs.readFile(out, 'utf8')).toBe(await repeatedRows(path.join(SNAPSHOT_DIR, 'environments/calendar/data/example.jsonl')))
    const missing = await runHostTool(checkout, 'gym', ['dataset', 'download', '--repo-id', 'nvidia/nope', '--artifact', 'train.jsonl', '--output', out])
    expect(missing.exitCode).toBe(1)
    expect(missing.stderr).toContain('repo_id=nvidia/nope artifact=train.jsonl')
    expect((await runHostTool(checkout, 'gym', ['--help'])).stdout).toContain('env start')
  })

  it('convert_dataset.py converts the real calendar and workplace rows and rejects bad input', async () => {
    const script = path.join(checkout.root, 'examples/nemo_gym_agentic/scripts/convert_dataset.py')
    const out = path.join(tmp, 'conv', 'workplace_relax.jsonl')
    const ok = await execa(checkout.python!, [script, '--input', path.join(SNAPSHOT_DIR, 'resources_servers/workplace_assistant/data/example.jsonl'), '--output', out, '--limit', '2'])
    expect(ok.stdout).toBe(`Converted 2 NeMo Gym row(s) to ${out}`)
    const rows = (await fs.readFile(out, 'utf8')).trim().split('\n').map((line) => JSON.parse(line))
    const raw = await firstWorkplaceRow()
    expect(rows[0]).toEqual({
      input: raw.responses_create_params.input,
      metadata: {id: 0, ground_truth: raw.ground_truth, category: raw.category, environment_name: raw.environment_name, tools: raw.responses_create_params.tools, parallel_tool_calls: false, responses_create_params: {temperature: 1}},
    })
    const again = await execa(checkout.python!, [script, '--input', out, '--output', out], {reject: false})
    expect(again.exitCode).not.toBe(0)
    expect(again.stderr).toContain('Input and output must refer to different files')
    const bad = path.join(tmp, 'conv', 'bad.jsonl')
    await fs.writeFile(bad, '{"responses_create_params":{"input":[]}}\n[1,2]\n')
    const notObject = await execa(checkout.python!, [script, '--input', bad, '--output', path.join(tmp, 'conv', 'x.jsonl')], {reject: false})
    expect(notObject.stderr).toContain(`Expected an object at ${bad}:2`)
  })
})

// ================================================================== callback routing

describe('Gateway callback routing on the host emulator', () => {
  let gym: HostGym
  let layout: GymLayout
  let gateway: string
  let upstream: http.Server
  let upstreamPort: number
  const seen: Array<{path: string; scenario: string | undefined; apiKey: string | undefined; model: unknown}> = []
  const counts: Record<string, number> = {}
  let artifactRoot: string

  const calendarState = {'0': {event_id: 0, event_name: 'Planning', duration: 60, constraint: 'at 10am', min_time: '10:00', max_time: '16:00'}}

  beforeAll(async () => {
    const base = await freePortBlock(8, 21400)
    layout = layoutAt(base)
    gateway = `http://${HOST}:${layout.gateway}`
    upstreamPort = base + 6
    artifactRoot = path.join(tmp, 'artifacts')
    upstream = http.createServer((req, res) => {
      let raw = ''
      req.on('data', (chunk) => (raw += chunk))
      req.on('end', () => {
        let body: any = {}
        try {
          body = JSON.parse(raw)
        } catch {
          // keep {}
        }
        const scenario: string | undefined = body.scenario
        counts[scenario ?? 'agent'] = (counts[scenario ?? 'agent'] ?? 0) + 1
        seen.push({path: req.url ?? '', scenario, apiKey: req.headers['x-api-key'] as string | undefined, model: body.model})
        const send = (status: number, payload: unknown, type = 'application/json') => {
          res.writeHead(status, {'content-type': type})
          res.end(typeof payload === 'string' ? payload : JSON.stringify(payload))
        }
        const message = (text: string) => ({id: 'r', object: 'response', status: 'completed', output: [{type: 'message', role: 'assistant', content: [{type: 'output_text', text}]}], usage: {input_tokens: 1, output_tokens: 1, total_tokens: 2}})
        switch (scenario) {
          case 'fixups':
            return send(200, {id: 'r', object: 'response', output: [{type: 'reasoning', id: 'rs', content: [{type: 'reasoning_text', text: 'thinking'}]}], usage: {input_tokens: 1, output_tokens: 1, total_tokens: 2}})
          case 'retry-once':
            return counts['retry-once'] === 1 ? send(503, {error: 'warming up'}) : send(200, message('ok'))
          case 'render-error':
            return send(500, {error: {message: 'Internal error while rendering agentic response.'}})
          case 'non-json':
            return send(200, 'hello', 'text/plain')
          case 'sse':
            return send(200, 'event: message_start\ndata: {"type":"message_start"}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n', 'text/event-stream')
          case 'messages-json':
            return send(200, {id: 'm', type: 'message', role: 'assistant', content: [{type: 'text', text: 'hi'}]})
          case 'chat':
            return send(200, {id: 'c', object: 'chat.completion', choices: [{index: 0, message: {role: 'assistant', content: 'hi'}}]})
          default:
            if (req.headers['x-api-key'] === 'quick') return send(200, message(JSON.stringify([{event_id: 0, event_name: 'Planning', start_time: '10:00', duration: 60}])))
            // The agent's own call for the "hold" trial: keep the trial running.
            setTimeout(() => send(200, message('late')), 30_000)
        }
      })
    })
    await new Promise<void>((resolve) => upstream.listen(upstreamPort, HOST, resolve))
    gym = await startHostGym(checkout, {
      layout,
      graph: CALENDAR_GRAPH,
      registration: {environment: 'calendar', config: 'calendar-v1', agentName: 'calendar_simple_agent'},
      env: {FIXTURE_GYM_DEBUG_ROUTES: '1', NEMO_GYM_ARTIFACT_ROOT: artifactRoot, NEMO_GYM_VERBOSE: '1'},
    })
    await gym.waitForOutput(/All 3 \/ 3 servers ready!/)
  })

  afterAll(async () => {
    if (gym) expect(await gym.stop()).toBe(0)
    upstream?.closeAllConnections()
    if (upstream) await new Promise<void>((resolve) => upstream.close(() => resolve()))
  })

  function calendarTrial(id: string, apiKey: string, extra: Record<string, any> = {}) {
    const payload = trialPayload(id, {baseUrl: `http://${HOST}:${upstreamPort}/v1`, apiKey, task: {messages: [{role: 'user', content: 'Schedule Planning at 10am.'}], metadata: {exp_cal_state: calendarState, tools: []}}})
    payload.environment = {...payload.environment, name: 'calendar', config: 'calendar-v1'}
    payload.model_endpoint = {...payload.model_endpoint, api_key_header: 'X-Api-Key', api_key_prefix: ''}
    return {...payload, ...extra}
  }

  it('forwards Responses/Chat/Messages callbacks with fix-ups, retries, SSE and error mapping', async () => {
    expect((await json('POST', `${gateway}/v1/trials`, calendarTrial('relax-cb-hold', 'hold'))).status).toBe(202)
    const {body: {rollout_id: rid}} = await json('GET', `${gateway}/_fixture/trials/relax-cb-hold/rollout_id`)
    expect(rid).toMatch(/^[0-9a-f]{32}-0$/)
    const cb = (resource: string, body: unknown) => json('POST', `${gateway}/ng-rollout/${rid}/v1/${resource}`, body)

    const fixed = await cb('responses', {scenario: 'fixups', input: []})
    expect(fixed.status).toBe(200)
    expect(fixed.body).toMatchObject({parallel_tool_calls: true, tool_choice: 'auto', tools: [], usage: {input_tokens_details: {cached_tokens: 0}, output_tokens_details: {reasoning_tokens: 0}}})
    expect(fixed.body.output[0].summary).toEqual([{type: 'summary_text', text: 'thinking'}])
    const fixupCall = seen.find((s) => s.scenario === 'fixups')!
    expect(fixupCall).toMatchObject({path: '/v1/responses', apiKey: 'hold', model: 'model'})

    const retried = await cb('responses', {scenario: 'retry-once', input: []})
    expect(retried.status).toBe(200)
    expect(counts['retry-once']).toBe(2)
    expect(gym.output()).toMatch(/Retrying NeMo Gym model callback rollout_id=[0-9a-f]{32}-0 attempt=1 status=503/)

    expect((await cb('responses', {scenario: 'render-error'})).status).toBe(500)
    expect(counts['render-error']).toBe(1)
    expect((await cb('responses', {scenario: 'non-json'})).status).toBe(502)
    expect((await cb('responses', [1, 2])).status).toBe(422)

    const chat = await cb('chat/completions', {scenario: 'chat', messages: []})
    expect(chat.body.object).toBe('chat.completion')
    expect(seen.find((s) => s.scenario === 'chat')!.path).toBe('/v1/chat/completions')
    expect((await cb('messages', {scenario: 'messages-json', messages: []})).body.type).toBe('message')

    const sse = await fetch(`${gateway}/ng-rollout/${rid}/v1/messages`, {method: 'POST', headers: {'content-type': 'application/json'}, body: JSON.stringify({scenario: 'sse', stream: true, messages: []})})
    expect(sse.headers.get('content-type')).toContain('text/event-stream')
    const text = await sse.text()
    expect(text.startsWith('event: ping\n')).toBe(true)
    expect(text).toContain('event: message_start')

    // A stateless environment has no cleanup URLs: aborting a running trial cannot be verified.
    expect((await json('POST', `${gateway}/v1/trials/relax-cb-hold/abort`)).status).toBe(202)
    expect(await pollTerminal(gateway, 'relax-cb-hold', false, 10_000)).toMatchObject({status: 'failed', error: {code: 'cleanup_unverified', type: 'CleanupError', cause: 'aborted'}})
    expect(await cb('responses', {scenario: 'fixups'})).toEqual({status: 410, body: {detail: 'callback capability is unavailable'}})
    // Like the real Gateway, its log names rollout ids in clear; it never prints a bearer token.
    expect(gym.output()).toContain(rid)
    expect(gym.output()).toContain('nemo_gym_verbose event=trial_create')
    expect(gym.output()).not.toMatch(/"api_key":"hold"/)
  })

  it('writes an artifact when metadata.capture_artifacts is set', async () => {
    const payload = calendarTrial('relax-cb-artifact', 'quick', {metadata: {capture_artifacts: true}})
    expect((await json('POST', `${gateway}/v1/trials`, payload)).status).toBe(202)
    const final = await pollTerminal(gateway, 'relax-cb-artifact')
    expect(final).toMatchObject({status: 'completed', reward: 1, metrics: {tool_calls: 0, assistant_messages: 1}})
    // The real manifest: <root>/<request id>/artifact.json (0700 / 0600), no status/reward keys.
    expect(final.artifact_ref).toBe(path.join(artifactRoot, 'relax-cb-artifact', 'artifact.json'))
    const artifact = JSON.parse(await fs.readFile(final.artifact_ref, 'utf8'))
    expect(Object.keys(artifact).sort()).toEqual(['evaluation', 'files', 'openhands_result', 'protocol_version', 'request_id', 'response_output'])
    expect(artifact).toMatchObject({protocol_version: 'relax-nemo-gym/artifact-v1', request_id: 'relax-cb-artifact'})
    expect((await fs.stat(path.dirname(final.artifact_ref))).mode & 0o777).toBe(0o700)
    expect((await fs.stat(final.artifact_ref)).mode & 0o777).toBe(0o600)
  })

  it('maps an upstream transport error to 502 (agent then fails the trial)', async () => {
    const closedPort = layout.gateway + 7 // inside our free block, nothing listens there
    const payload = calendarTrial('relax-cb-transport', 'x')
    payload.model_endpoint.base_url = `http://${HOST}:${closedPort}/v1`
    expect((await json('POST', `${gateway}/v1/trials`, payload)).status).toBe(202)
    const final = await pollTerminal(gateway, 'relax-cb-transport')
    // No cleanup URLs here: the agent's failure is reported through the unconfirmed cleanup, as its cause.
    expect(final).toMatchObject({status: 'failed', error: {code: 'cleanup_unverified', type: 'CleanupError', cause: 'agent_error'}})
    expect(gym.output()).toMatch(/"POST \/ng-rollout\/[0-9a-f]{32}-0\/v1\/responses HTTP\/1.1" 502/)
  })
})
