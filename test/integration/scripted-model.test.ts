/**
 * The scripted model (src/runtime/scripted-model.ts): bearer check, protocol path, scripted
 * turns and tool-result counting in the three protocols, directly and through the fixture
 * Gateway's callback routes (Chat Completions JSON, Anthropic Messages over SSE).
 */
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {type ScriptedModel, startScriptedModel} from '../../src/runtime/scripted-model.js'
import {CALENDAR_GRAPH, type HostGym, makeRelaxCheckout, startHostGym} from '../helpers/relax-fixture.js'
import {hostLayout} from '../helpers/trial-helpers.js'

const HOST = '127.0.0.1'

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{status: number; type: string; text: string; json: any}> {
  const response = await fetch(url, {method: 'POST', headers: {'content-type': 'application/json', ...headers}, body: JSON.stringify(body)})
  const text = await response.text()
  let json: any
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return {status: response.status, type: response.headers.get('content-type') ?? '', text, json}
}

/** Parse an SSE body into [{event, data}]. */
function sseEvents(text: string): Array<{event: string; data: any}> {
  return text.split('\n\n').filter((block) => block.trim()).map((block) => {
    const event = /^event: (.*)$/m.exec(block)?.[1] ?? ''
    const raw = /^data: (.*)$/m.exec(block)?.[1] ?? ''
    let data: any = raw
    try {
      data = JSON.parse(raw)
    } catch {
      // [DONE]
    }
    return {event, data}
  })
}

const toolTurn = {tool_call: {name: 'Bash', arguments: {command: "python3 -c 'print(2 + 2)'"}}}

describe('scripted model, direct', () => {
  let models: ScriptedModel[] = []
  afterAll(async () => {
    for (const m of models) await m.close()
    models = []
  })
  const start = async (protocol: 'responses' | 'chat_completions' | 'messages') => {
    const m = await startScriptedModel({host: HOST, protocol})
    models.push(m)
    return m
  }

  it('Responses: 401 without the session bearer token, 404 off its path, turns in order, function_call_output counted', async () => {
    const m = await start('responses')
    expect(m.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/)
    const {apiKey, session} = m.addSession([{tool_call: {name: 'email_search_emails', arguments: {query: 'x'}}}, {text: 'Done.'}])
    expect((await post(`${m.baseUrl}/responses`, {input: []})).status).toBe(401)
    expect((await post(`${m.baseUrl}/responses`, {input: []}, {authorization: 'Bearer nope'})).status).toBe(401)
    expect((await post(`${m.baseUrl}/responses`, {input: []}, {authorization: apiKey})).status).toBe(401) // no "Bearer "
    expect(m.rejected.map((r) => r.error)).toEqual(['missing Authorization header', 'bearer token does not match any scripted session', 'bearer token does not match any scripted session'])
    const auth = {authorization: `Bearer ${apiKey}`}
    expect((await post(`${m.baseUrl}/chat/completions`, {messages: []}, auth)).status).toBe(404)
    // The 404 used turn 0's slot: a new session shows the clean sequence.
    const second = m.addSession([{tool_call: {name: 'email_search_emails', arguments: {query: 'x'}}}, {text: 'Done.'}])
    const a2 = {authorization: `Bearer ${second.apiKey}`}
    const first = await post(`${m.baseUrl}/responses`, {input: [{role: 'user', content: 'hi'}], tools: [{type: 'function', name: 'email_search_emails'}]}, a2)
    expect(first.status).toBe(200)
    expect(first.json.output[0]).toMatchObject({type: 'function_call', name: 'email_search_emails', arguments: '{"query":"x"}'})
    const call = first.json.output[0]
    const final = await post(`${m.baseUrl}/responses`, {input: [{role: 'user', content: 'hi'}, call, {type: 'function_call_output', call_id: call.call_id, output: '[]'}]}, a2)
    expect(final.json.output[0]).toMatchObject({type: 'message', role: 'assistant', content: [{type: 'output_text', text: 'Done.'}]})
    const beyond = await post(`${m.baseUrl}/responses`, {input: []}, a2)
    expect(beyond.status).toBe(400)
    expect(second.session.history()).toEqual([0, 1, 0])
    expect(second.session.callbacks.map((c) => c.tools)).toEqual([1, -1, -1])
    expect(second.session.callbacks[2].error).toBe('no scripted turn 2 (the script has 2)')
    expect(session.callbacks[0]).toMatchObject({status: 404, path: '/v1/chat/completions'})
    expect(JSON.stringify([m.rejected, session.callbacks, second.session.callbacks])).not.toContain(apiKey)
  })

  it('Chat Completions: JSON and SSE replies, tool messages counted', async () => {
    const m = await start('chat_completions')
    const {apiKey, session} = m.addSession([toolTurn, {text: '<answer>4</answer>'}])
    const auth = {authorization: `Bearer ${apiKey}`}
    const first = await post(`${m.baseUrl}/chat/completions`, {messages: [{role: 'user', content: 'q'}]}, auth)
    expect(first.json).toMatchObject({object: 'chat.completion', choices: [{finish_reason: 'tool_calls', message: {role: 'assistant', tool_calls: [{type: 'function', function: {name: 'Bash'}}]}}]})
    const streamed = await post(`${m.baseUrl}/chat/completions`, {stream: true, messages: [{role: 'user', content: 'q'}, first.json.choices[0].message, {role: 'tool', tool_call_id: 'x', content: '4'}]}, auth)
    expect(streamed.type).toContain('text/event-stream')
    const chunks = sseEvents(streamed.text)
    expect(chunks.at(-1)!.data).toBe('[DONE]')
    expect(chunks.map((c) => c.data?.choices?.[0]?.delta?.content).filter(Boolean).join('')).toBe('<answer>4</answer>')
    expect(session.history()).toEqual([0, 1])
  })

  it('Messages: JSON and SSE (message_start … message_stop), tool_result blocks counted', async () => {
    const m = await start('messages')
    const {apiKey, session} = m.addSession([toolTurn, {text: '<answer>4</answer>'}])
    const auth = {authorization: `Bearer ${apiKey}`}
    const first = await post(`${m.baseUrl}/messages`, {stream: true, messages: [{role: 'user', content: 'q'}], tools: [{name: 'Bash'}]}, auth)
    const events = sseEvents(first.text)
    expect(events.map((e) => e.event)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop'])
    expect(events[1].data.content_block).toMatchObject({type: 'tool_use', name: 'Bash'})
    expect(JSON.parse(events[2].data.delta.partial_json)).toEqual(toolTurn.tool_call.arguments)
    expect(events[4].data.delta.stop_reason).toBe('tool_use')
    const toolUseId = events[1].data.content_block.id
    const second = await post(`${m.baseUrl}/messages`, {
      messages: [{role: 'user', content: 'q'}, {role: 'assistant', content: [{type: 'tool_use', id: toolUseId, name: 'Bash', input: {}}]}, {role: 'user', content: [{type: 'tool_result', tool_use_id: toolUseId, content: '4'}]}],
    }, auth)
    expect(second.json).toMatchObject({type: 'message', content: [{type: 'text', text: '<answer>4</answer>'}], stop_reason: 'end_turn'})
    expect(session.history()).toEqual([0, 1])
    expect(session.callbacks.map((c) => c.stream)).toEqual([true, false])
  })

  it('holds a callback until release(), then refuses it', async () => {
    const m = await start('responses')
    const {apiKey, session} = m.addSession([{text: 'x'}], {holdAt: 0})
    const pending = post(`${m.baseUrl}/responses`, {input: []}, {authorization: `Bearer ${apiKey}`})
    await session.held
    session.release()
    expect((await pending).status).toBe(400)
    expect(session.callbacks[0].error).toContain('held by gymrecipe')
  })
})

describe('scripted model through the fixture Gateway callback routes', () => {
  let tmp: string
  let gym: HostGym
  let gateway: string

  beforeAll(async () => {
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-scripted-model-'))
    const checkout = await makeRelaxCheckout(path.join(tmp, 'relax'))
    const layout = await hostLayout(23600)
    gateway = `http://${HOST}:${layout.gateway}`
    gym = await startHostGym(checkout, {
      layout,
      graph: CALENDAR_GRAPH,
      registration: {environment: 'calendar', config: 'calendar-v1', agentName: 'calendar_simple_agent'},
      env: {FIXTURE_GYM_DEBUG_ROUTES: '1'},
    })
    await gym.waitForOutput(/All 3 \/ 3 servers ready!/)
  })

  afterAll(async () => {
    if (gym) expect(await gym.stop()).toBe(0)
    if (tmp) await fs.rm(tmp, {recursive: true, force: true})
  })

  for (const protocol of ['messages', 'chat_completions'] as const) {
    it(`${protocol}: the Gateway forwards with the bearer token and the scripted turns come back (history [0, 1])`, async () => {
      const m = await startScriptedModel({host: HOST, protocol})
      // Turn 0 is the agent's own call, held so the trial stays active while the test drives the route.
      const {apiKey, session} = m.addSession([{text: 'held'}, toolTurn, {text: '<answer>4</answer>'}], {holdAt: 0})
      const id = `relax-scripted-${protocol}`
      try {
        const created = await post(`${gateway}/v1/trials`, {
          protocol_version: 'relax-nemo-gym/v1', request_id: id, session: {session_id: id, group_id: 'g', rollout_mode: 'eval', attempt: 1},
          environment: {name: 'calendar', config: 'calendar-v1', task: {messages: [{role: 'user', content: 'hi'}], metadata: {exp_cal_state: {}, tools: []}}},
          model_endpoint: {base_url: m.baseUrl, api_key: apiKey, model: 'model'}, interrupt_policy: 'protected', deadline_s: 60, lease_s: 60,
        })
        expect(created.status).toBe(202)
        await session.held
        const rid = (await (await fetch(`${gateway}/_fixture/trials/${id}/rollout_id`)).json()).rollout_id
        if (protocol === 'messages') {
          const first = await post(`${gateway}/ng-rollout/${rid}/v1/messages`, {stream: true, messages: [{role: 'user', content: 'q'}]})
          expect(first.type).toContain('text/event-stream')
          const events = sseEvents(first.text)
          expect(events[0].event).toBe('ping')
          expect(events.slice(1).map((e) => e.event)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop'])
          const second = await post(`${gateway}/ng-rollout/${rid}/v1/messages`, {
            stream: true,
            messages: [{role: 'user', content: 'q'}, {role: 'user', content: [{type: 'tool_result', tool_use_id: 't', content: '4'}]}],
          })
          expect(sseEvents(second.text).find((e) => e.event === 'content_block_delta')!.data.delta.text).toBe('<answer>4</answer>')
        } else {
          const first = await post(`${gateway}/ng-rollout/${rid}/v1/chat/completions`, {messages: [{role: 'user', content: 'q'}]})
          expect(first.json.choices[0].message.tool_calls[0].function.name).toBe('Bash')
          const second = await post(`${gateway}/ng-rollout/${rid}/v1/chat/completions`, {messages: [{role: 'user', content: 'q'}, {role: 'tool', tool_call_id: 't', content: '4'}]})
          expect(second.json.choices[0].message.content).toBe('<answer>4</answer>')
        }
        expect(session.history().slice(1)).toEqual([0, 1])
        expect(session.callbacks.slice(1).every((c) => c.status === 200)).toBe(true)
        expect(m.rejected).toEqual([])
      } finally {
        await post(`${gateway}/v1/trials/${id}/abort`, {})
        await m.close()
      }
    })
  }
})
