/**
 * A deterministic OpenAI-compatible model for the examples: POST /v1/chat/completions
 * (JSON or, with `stream: true`, server-sent events), answering from a script instead of
 * weights. Loopback only.
 *
 *   node --import tsx examples/lib/scripted-model.ts --script script.json [--port 0] [--log requests.jsonl]
 *
 * The script maps the conversation's last user message to steps:
 *   {"model": "scripted", "rules": [{"user": "How many ...?", "steps": [
 *       {"tool": "run_sql", "arguments": {"sql": "SELECT ..."}},
 *       {"answer": "{{first_value}} customers.", "delay_ms": 0}]}]}
 * The step taken is the number of tool calls the model already made since that user message,
 * so each request of an agent's tool loop gets the next step. Answers may use
 *   {{tool_output}}     the last tool result, as sent
 *   {{first_value}}     the first value of the first row when that result is JSON with `rows`
 *   {{earlier_user}}    the earlier user messages of the conversation, ` | `-joined ("none")
 *   {{turn}}            how many user messages the conversation holds
 * A message no rule matches is answered 422, so a missing script line is never papered over.
 * GET /stats: {"requests": n, "unscripted": n}.
 */
import {appendFileSync, readFileSync} from 'node:fs'
import type http from 'node:http'
import {parseArgs} from 'node:util'
import {announceAndStopOnSignals, isMain, reply, sendJson, serveJson} from './json-service.js'

interface Step {
  tool?: string
  arguments?: Record<string, unknown>
  answer?: string
  delay_ms?: number
}
interface Rule {
  user: string
  steps: Step[]
}
interface Script {
  model?: string
  rules: Rule[]
}
interface ChatMessage {
  role: string
  content?: unknown
  tool_calls?: unknown[]
}

export function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  if (Array.isArray(content)) return content.map((part) => (part && typeof part === 'object' && typeof (part as any).text === 'string' ? (part as any).text : '')).join('')
  return ''
}

/** The step a conversation is at, or why there is none. */
export function nextStep(script: Script, messages: ChatMessage[]): {step: Step; rule: Rule} | {error: string} {
  let lastUser = -1
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === 'user') {
      lastUser = i
      break
    }
  }
  if (lastUser < 0) return {error: 'the conversation has no user message'}
  const question = textOf(messages[lastUser].content).trim()
  const rule = script.rules.find((r) => r.user.trim() === question)
  if (!rule) return {error: `no scripted answer for ${JSON.stringify(question.slice(0, 200))}`}
  const toolCallsSoFar = messages.slice(lastUser + 1).filter((m) => m.role === 'assistant' && Array.isArray(m.tool_calls) && m.tool_calls.length > 0).length
  const step = rule.steps[Math.min(toolCallsSoFar, rule.steps.length - 1)]
  return {step, rule}
}

export function fillAnswer(template: string, messages: ChatMessage[]): string {
  const users = messages.filter((m) => m.role === 'user').map((m) => textOf(m.content).trim())
  const tools = messages.filter((m) => m.role === 'tool')
  const toolOutput = tools.length > 0 ? textOf(tools[tools.length - 1].content) : ''
  let firstValue = ''
  try {
    const parsed = JSON.parse(toolOutput)
    const row = Array.isArray(parsed?.rows) ? parsed.rows[0] : undefined
    const value = Array.isArray(row) ? row[0] : row && typeof row === 'object' ? Object.values(row)[0] : undefined
    if (value !== undefined) firstValue = String(value)
  } catch {
    // not JSON: {{first_value}} stays empty
  }
  return template
    .replaceAll('{{tool_output}}', toolOutput)
    .replaceAll('{{first_value}}', firstValue)
    .replaceAll('{{earlier_user}}', users.length > 1 ? users.slice(0, -1).join(' | ') : 'none')
    .replaceAll('{{turn}}', String(users.length))
}

export async function startScriptedModel(script: Script, options: {port?: number; log?: string} = {}): Promise<{url: string; close(): Promise<void>}> {
  const model = script.model ?? 'scripted'
  let requests = 0
  let unscripted = 0
  let calls = 0
  const service = await serveJson(({method, route, body}) => {
    if (method === 'GET' && route === '/stats') return reply(200, {requests, unscripted})
    if (method === 'GET' && route === '/v1/models') return reply(200, {object: 'list', data: [{id: model, object: 'model'}]})
    if (method !== 'POST' || route !== '/v1/chat/completions') return reply(404, {error: {message: `no route ${method} ${route}`}})
    requests++
    const messages: ChatMessage[] = Array.isArray(body?.messages) ? body.messages : []
    if (options.log) {
      appendFileSync(options.log, `${JSON.stringify({at: new Date().toISOString(), messages: messages.map((m) => ({role: m.role, text: textOf(m.content).slice(0, 500), tool_calls: m.tool_calls?.length ?? 0}))})}\n`)
    }
    const found = nextStep(script, messages)
    if ('error' in found) {
      unscripted++
      return reply(422, {error: {message: found.error, type: 'invalid_request_error'}})
    }
    const {step} = found
    const id = `chatcmpl-${requests}`
    const message: Record<string, unknown> = {role: 'assistant', content: null}
    let finish = 'stop'
    if (step.tool !== undefined) {
      calls++
      message.tool_calls = [{id: `call_${calls}`, type: 'function', function: {name: step.tool, arguments: JSON.stringify(step.arguments ?? {})}}]
      finish = 'tool_calls'
    } else {
      message.content = fillAnswer(step.answer ?? '', messages)
    }
    const usage = {prompt_tokens: 0, completion_tokens: 0, total_tokens: 0}
    const answer = (res: http.ServerResponse) => {
      if (res.destroyed) return
      if (body.stream !== true) {
        return sendJson(res, 200, {id, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model, choices: [{index: 0, message, finish_reason: finish}], usage})
      }
      const base = {id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model}
      res.writeHead(200, {'content-type': 'text/event-stream', 'cache-control': 'no-cache'})
      const delta = step.tool !== undefined ? {role: 'assistant', tool_calls: (message.tool_calls as any[]).map((call, index) => ({index, ...call}))} : {role: 'assistant', content: message.content}
      res.write(`data: ${JSON.stringify({...base, choices: [{index: 0, delta, finish_reason: null}]})}\n\n`)
      res.write(`data: ${JSON.stringify({...base, choices: [{index: 0, delta: {}, finish_reason: finish}], usage})}\n\n`)
      res.end('data: [DONE]\n\n')
    }
    return (res) => {
      if (step.delay_ms) setTimeout(() => answer(res), step.delay_ms)
      else answer(res)
    }
  }, options.port)
  return {url: `${service.url}/v1`, close: service.close}
}

if (isMain(import.meta.url)) {
  const {values} = parseArgs({options: {script: {type: 'string'}, port: {type: 'string', default: '0'}, log: {type: 'string'}}})
  if (!values.script) {
    process.stderr.write('usage: scripted-model.ts --script script.json [--port 0] [--log requests.jsonl]\n')
    process.exit(2)
  }
  const script = JSON.parse(readFileSync(values.script, 'utf8')) as Script
  announceAndStopOnSignals(await startScriptedModel(script, {port: Number(values.port), log: values.log}), {model: script.model ?? 'scripted'})
}
