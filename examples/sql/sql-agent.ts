/**
 * A tool-using SQL agent in the shape of a Gym agent server, loopback only: the
 * service-side completed loop that `gymrecipe call harness` expects (the caller never runs tools).
 *
 *   node --import tsx examples/sql/sql-agent.ts --model-endpoint URL/v1 --model NAME --resource-endpoint URL [--port 0]
 *
 *   POST /sessions/initialize {"database": ...}   opens a session on the SQL resource service for
 *        this conversation and answers {"token"} (the caller sends it back as X-Session-Token)
 *   POST /v1/responses {"input": "question"}      runs the tool loop: asks the model (Chat
 *        Completions, tool `run_sql`), executes each tool call on the resource service within
 *        the session, feeds the result back, until the model answers; returns a Responses
 *        object whose output holds every function_call, its function_call_output and the final
 *        assistant message
 *   POST /sessions/cleanup                        ends the resource session, then its own
 *   GET  /stats -> {"active_sessions", "responses", "tool_calls"}
 * It prints one line {"url", "pid"} once listening and stops on SIGTERM or SIGINT.
 */
import {randomBytes, randomUUID} from 'node:crypto'
import {parseArgs} from 'node:util'
import {announceAndStopOnSignals, isMain, reply, serveJson} from '../lib/json-service.js'

const MAX_STEPS = 8
const RUN_SQL_TOOL = {
  type: 'function',
  function: {
    name: 'run_sql',
    description: 'Run one read-only SQLite query on the shop database and return its columns and rows as JSON.',
    parameters: {type: 'object', properties: {sql: {type: 'string', description: 'a single SELECT statement'}}, required: ['sql'], additionalProperties: false},
  },
}
const SYSTEM_PROMPT = 'You answer questions about a shop database. Use run_sql to look the answer up, then answer in one sentence.'

class UpstreamError extends Error {}

async function postJson(url: string, body: unknown, headers: Record<string, string> = {}, timeoutMs = 60_000): Promise<any> {
  let response: Response
  try {
    response = await fetch(url, {method: 'POST', headers: {'content-type': 'application/json', ...headers}, body: JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs)})
  } catch (error) {
    throw new UpstreamError(`POST ${url} failed: ${(error as Error).message}`)
  }
  const text = await response.text()
  if (!response.ok) throw new UpstreamError(`POST ${url} answered ${response.status}: ${text.slice(0, 300)}`)
  try {
    return JSON.parse(text)
  } catch {
    throw new UpstreamError(`POST ${url} answered a body that is not JSON`)
  }
}

export async function startSqlAgent(options: {modelEndpoint: string; model: string; resourceEndpoint: string; port?: number}) {
  // agent token -> resource session token
  const sessions = new Map<string, string>()
  let responses = 0
  let toolCalls = 0

  const respond = async (input: unknown, resourceToken: string) => {
    const question = typeof input === 'string' ? input : Array.isArray(input) ? input.map((m: any) => (typeof m?.content === 'string' ? m.content : '')).join('\n') : ''
    if (question.trim() === '') throw new RangeError('input must be a question (a string or a list of messages)')
    const messages: any[] = [
      {role: 'system', content: SYSTEM_PROMPT},
      {role: 'user', content: question},
    ]
    const output: unknown[] = []
    for (let step = 0; step < MAX_STEPS; step++) {
      const completion = await postJson(`${options.modelEndpoint}/chat/completions`, {model: options.model, messages, tools: [RUN_SQL_TOOL]})
      const message = completion?.choices?.[0]?.message
      if (!message) throw new UpstreamError('the model answered without a message')
      const calls: any[] = Array.isArray(message.tool_calls) ? message.tool_calls : []
      if (calls.length === 0) {
        output.push({type: 'message', id: `msg_${randomUUID()}`, role: 'assistant', status: 'completed', content: [{type: 'output_text', text: String(message.content ?? ''), annotations: []}]})
        return {id: `resp_${randomUUID()}`, object: 'response', created_at: Math.floor(Date.now() / 1000), model: options.model, status: 'completed', output}
      }
      messages.push({role: 'assistant', content: null, tool_calls: calls})
      for (const call of calls) {
        toolCalls++
        output.push({type: 'function_call', id: `fc_${randomUUID()}`, call_id: call.id, name: call.function?.name, arguments: call.function?.arguments ?? '{}', status: 'completed'})
        let result: unknown
        if (call.function?.name !== 'run_sql') {
          result = {error: `unknown tool ${JSON.stringify(call.function?.name)}`}
        } else {
          let args: any
          try {
            args = JSON.parse(call.function.arguments ?? '{}')
          } catch {
            args = undefined
          }
          result = typeof args?.sql === 'string' ? await postJson(`${options.resourceEndpoint}/execute`, {sql: args.sql}, {'x-session-token': resourceToken}) : {error: 'run_sql needs {"sql": "..."}'}
        }
        const text = JSON.stringify(result)
        output.push({type: 'function_call_output', call_id: call.id, output: text})
        messages.push({role: 'tool', tool_call_id: call.id, content: text})
      }
    }
    // the loop did not end: say so in the Responses way instead of inventing an answer
    return {id: `resp_${randomUUID()}`, object: 'response', model: options.model, status: 'incomplete', incomplete_details: {reason: 'max_tool_steps'}, output}
  }

  return await serveJson(async ({method, route, headers, body}) => {
    if (method === 'GET' && route === '/stats') return reply(200, {active_sessions: sessions.size, responses, tool_calls: toolCalls})
    if (method !== 'POST') return reply(405, {detail: `${method} ${route} is not served`})
    const token = headers['x-session-token']
    const resourceToken = typeof token === 'string' ? sessions.get(token) : undefined
    try {
      switch (route) {
        case '/sessions/initialize': {
          const opened = await postJson(`${options.resourceEndpoint}/sessions/initialize`, {database: body?.database})
          const own = randomBytes(16).toString('hex')
          sessions.set(own, opened.token)
          return reply(200, {token: own})
        }
        case '/v1/responses': {
          if (!resourceToken) return reply(401, {detail: 'initialize a session first and send its X-Session-Token'})
          responses++
          return reply(200, await respond(body?.input, resourceToken))
        }
        case '/sessions/cleanup': {
          if (!resourceToken) return reply(401, {detail: 'cleanup needs the X-Session-Token of a live session'})
          sessions.delete(token as string)
          await postJson(`${options.resourceEndpoint}/sessions/cleanup`, {}, {'x-session-token': resourceToken})
          return reply(200, {released: true})
        }
        default:
          return reply(404, {detail: `no route ${route}`})
      }
    } catch (error) {
      if (error instanceof RangeError) return reply(422, {detail: error.message})
      return reply(502, {detail: (error as Error).message})
    }
  }, options.port)
}

if (isMain(import.meta.url)) {
  const {values} = parseArgs({options: {'model-endpoint': {type: 'string'}, model: {type: 'string'}, 'resource-endpoint': {type: 'string'}, port: {type: 'string', default: '0'}}})
  if (!values['model-endpoint'] || !values.model || !values['resource-endpoint']) {
    process.stderr.write('usage: sql-agent.ts --model-endpoint URL/v1 --model NAME --resource-endpoint URL [--port 0]\n')
    process.exit(2)
  }
  announceAndStopOnSignals(await startSqlAgent({modelEndpoint: values['model-endpoint'].replace(/\/+$/u, ''), model: values.model, resourceEndpoint: values['resource-endpoint'].replace(/\/+$/u, ''), port: Number(values.port)}))
}
