/**
 * A scripted model that stands in for the Relax model API during a deterministic trial
 *: the Gateway forwards the agent's model calls here, and every reply is
 * the next scripted turn. It speaks one protocol — Responses (`/v1/responses`), Chat
 * Completions (`/v1/chat/completions`, JSON or SSE) or Anthropic Messages
 * (`/v1/messages`, JSON or SSE) — and refuses everything else:
 *
 * - `Authorization: Bearer <api_key>` must name a registered session (401 otherwise);
 * - only the protocol's path is served (404 otherwise);
 * - the n-th callback of a session gets the n-th turn; a callback past the end of the
 *   script gets 400 (a scripted-turn mismatch the trial then reports).
 *
 * For every callback it records how many tool results the request carried
 * (`function_call_output` items, `tool` messages, or `tool_result` blocks): the
 * tool-result history that proves results are fed back (e.g. `[0, 1, 2]`).
 * The bearer tokens never appear in records, errors or logs.
 */
import {randomBytes} from 'node:crypto'
import http from 'node:http'
import type {AddressInfo} from 'node:net'
import {objectFields} from './http.js'

export type CallbackProtocol = 'responses' | 'chat_completions' | 'messages'

export interface ScriptedTurn {
  tool_call?: {name: string; arguments: Record<string, unknown>}
  text?: string
}

/** One request the scripted model received (never holds the bearer token). */
export interface CallbackRecord {
  /** Position in the session (0-based), or -1 for a request no session accepted. */
  index: number
  path: string
  /** HTTP status the scripted model answered with. */
  status: number
  /** Tool results the request carried. */
  toolResults: number
  /** Length of the request's `tools` list (-1 when absent). */
  tools: number
  stream: boolean
  /** Why the request was refused, when it was. */
  error?: string
  at: number
}

export const PROTOCOL_PATHS: Record<CallbackProtocol, string> = {
  responses: '/v1/responses',
  chat_completions: '/v1/chat/completions',
  messages: '/v1/messages',
}

export interface ScriptedSession {
  readonly callbacks: CallbackRecord[]
  /** Tool results per answered (or attempted) callback, in order. */
  history(): number[]
  /** Resolves when the callback at `holdAt` has arrived and is being held. */
  readonly held: Promise<void>
  /** Answer a held callback (with 400 "trial aborted"); no-op when nothing is held. */
  release(): void
}

export interface ScriptedModel {
  host: string
  port: number
  /** `http://<host>:<port>/v1`: what a trial sends as model_endpoint.base_url. */
  baseUrl: string
  protocol: CallbackProtocol
  /** Register a session; the returned api key is what the trial sends as model_endpoint.api_key. */
  addSession(turns: ScriptedTurn[], options?: {holdAt?: number; apiKey?: string}): {apiKey: string; session: ScriptedSession}
  /** Requests no session accepted (wrong or missing bearer token). */
  readonly rejected: CallbackRecord[]
  close(): Promise<void>
}

function hex(bytes: number): string {
  return randomBytes(bytes).toString('hex')
}

/** A request body is whatever the agent sent: lists and objects are read field by field. */
function listOf(value: unknown): Array<Record<string, unknown>> {
  return Array.isArray(value) ? value.map(objectFields) : []
}

/** Count the tool results a request carries, per protocol. */
export function countToolResults(protocol: CallbackProtocol, body: unknown): number {
  const request = objectFields(body)
  if (protocol === 'responses') return listOf(request.input).filter((item) => item.type === 'function_call_output').length
  const messages = listOf(request.messages)
  if (protocol === 'chat_completions') return messages.filter((m) => m.role === 'tool').length
  return messages.reduce((count, m) => count + listOf(m.content).filter((block) => block.type === 'tool_result').length, 0)
}

function responsesReply(turn: ScriptedTurn, model: string): unknown {
  const item = turn.tool_call
    ? {type: 'function_call', id: `fc_${hex(8)}`, call_id: `call_${hex(8)}`, name: turn.tool_call.name, arguments: JSON.stringify(turn.tool_call.arguments ?? {}), status: 'completed'}
    : {type: 'message', id: `msg_${hex(8)}`, role: 'assistant', status: 'completed', content: [{type: 'output_text', text: turn.text ?? '', annotations: []}]}
  return {
    id: `resp_${hex(12)}`,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    model,
    status: 'completed',
    incomplete_details: null,
    output: [item],
    parallel_tool_calls: false,
    tool_choice: 'auto',
    tools: [],
    usage: {input_tokens: 1, output_tokens: 1, total_tokens: 2},
  }
}

interface ChatMessage {
  role: 'assistant'
  content: string | null
  tool_calls?: Array<{id: string; type: 'function'; function: {name: string; arguments: string}}>
}

function chatMessage(turn: ScriptedTurn): {message: ChatMessage; finish: string} {
  if (turn.tool_call) {
    return {
      message: {role: 'assistant', content: null, tool_calls: [{id: `call_${hex(8)}`, type: 'function', function: {name: turn.tool_call.name, arguments: JSON.stringify(turn.tool_call.arguments ?? {})}}]},
      finish: 'tool_calls',
    }
  }
  return {message: {role: 'assistant', content: turn.text ?? ''}, finish: 'stop'}
}

function chatReply(turn: ScriptedTurn, model: string): unknown {
  const {message, finish} = chatMessage(turn)
  return {
    id: `chatcmpl-${hex(12)}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{index: 0, message, finish_reason: finish}],
    usage: {prompt_tokens: 1, completion_tokens: 1, total_tokens: 2},
  }
}

function chatStream(turn: ScriptedTurn, model: string): string {
  const id = `chatcmpl-${hex(12)}`
  const created = Math.floor(Date.now() / 1000)
  const chunk = (delta: unknown, finish: string | null) => `data: ${JSON.stringify({id, object: 'chat.completion.chunk', created, model, choices: [{index: 0, delta, finish_reason: finish}]})}\n\n`
  const {message, finish} = chatMessage(turn)
  const parts = [chunk({role: 'assistant', content: ''}, null)]
  if (message.tool_calls) {
    const call = message.tool_calls[0]
    parts.push(chunk({tool_calls: [{index: 0, id: call.id, type: 'function', function: {name: call.function.name, arguments: call.function.arguments}}]}, null))
  } else {
    parts.push(chunk({content: message.content}, null))
  }
  parts.push(chunk({}, finish), 'data: [DONE]\n\n')
  return parts.join('')
}

type MessagesBlock = {type: 'tool_use'; id: string; name: string; input: unknown} | {type: 'text'; text: string}

function messagesBlock(turn: ScriptedTurn): {block: MessagesBlock; stop: string} {
  if (turn.tool_call) return {block: {type: 'tool_use', id: `toolu_${hex(8)}`, name: turn.tool_call.name, input: turn.tool_call.arguments ?? {}}, stop: 'tool_use'}
  return {block: {type: 'text', text: turn.text ?? ''}, stop: 'end_turn'}
}

function messagesReply(turn: ScriptedTurn, model: string): unknown {
  const {block, stop} = messagesBlock(turn)
  return {id: `msg_${hex(12)}`, type: 'message', role: 'assistant', model, content: [block], stop_reason: stop, stop_sequence: null, usage: {input_tokens: 1, output_tokens: 1}}
}

function messagesStream(turn: ScriptedTurn, model: string): string {
  const {block, stop} = messagesBlock(turn)
  const event = (name: string, data: unknown) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`
  const start = block.type === 'tool_use' ? {type: 'tool_use', id: block.id, name: block.name, input: {}} : {type: 'text', text: ''}
  const delta = block.type === 'tool_use' ? {type: 'input_json_delta', partial_json: JSON.stringify(block.input)} : {type: 'text_delta', text: block.text}
  return [
    event('message_start', {type: 'message_start', message: {id: `msg_${hex(12)}`, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: {input_tokens: 1, output_tokens: 0}}}),
    event('content_block_start', {type: 'content_block_start', index: 0, content_block: start}),
    event('content_block_delta', {type: 'content_block_delta', index: 0, delta}),
    event('content_block_stop', {type: 'content_block_stop', index: 0}),
    event('message_delta', {type: 'message_delta', delta: {stop_reason: stop, stop_sequence: null}, usage: {output_tokens: 1}}),
    event('message_stop', {type: 'message_stop'}),
  ].join('')
}

interface SessionState extends ScriptedSession {
  turns: ScriptedTurn[]
  holdAt?: number
  pending?: () => void
  markHeld: () => void
}

/** One callback of a trial: checked (bearer token, route, body), recorded, then answered with the session's next scripted turn, or held. */
function answerCallback(
  scripted: {protocol: CallbackProtocol; servedPath: string; sessions: Map<string, SessionState>; rejected: CallbackRecord[]},
  req: http.IncomingMessage,
  res: http.ServerResponse,
  raw: string,
): void {
  const {protocol, servedPath, sessions, rejected} = scripted
  let body: unknown
  try {
    body = raw ? JSON.parse(raw) : undefined
  } catch {
    body = undefined
  }
  const request = objectFields(body)
  const path = (req.url ?? '').split('?')[0]
  const stream = request.stream === true
  const record: CallbackRecord = {
    index: -1,
    path,
    status: 0,
    toolResults: countToolResults(protocol, body),
    tools: Array.isArray(request.tools) ? request.tools.length : -1,
    stream,
    at: Date.now(),
  }
  const sendJson = (status: number, payload: unknown) => {
    record.status = status
    if (!res.headersSent) {
      res.writeHead(status, {'content-type': 'application/json'})
      res.end(JSON.stringify(payload))
    }
  }
  const sendSse = (text: string) => {
    record.status = 200
    res.writeHead(200, {'content-type': 'text/event-stream', 'cache-control': 'no-cache'})
    res.end(text)
  }

  const auth = req.headers.authorization
  const token = typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice('Bearer '.length) : undefined
  const session = token === undefined ? undefined : sessions.get(token)
  if (!session) {
    record.error = auth === undefined ? 'missing Authorization header' : 'bearer token does not match any scripted session'
    rejected.push(record)
    return sendJson(401, {error: {message: 'invalid bearer token', type: 'authentication_error'}})
  }
  record.index = session.callbacks.length
  session.callbacks.push(record)
  // A held callback keeps the trial mid-flight until release() (whatever it asks for).
  if (session.holdAt !== undefined && record.index === session.holdAt) {
    session.pending = () => {
      record.error = 'held by gymrecipe, then refused: the trial was aborted'
      sendJson(400, {error: {message: 'trial aborted by gymrecipe', type: 'invalid_request_error'}})
    }
    session.markHeld()
    return
  }
  if (req.method !== 'POST' || path !== servedPath) {
    record.error = `only POST ${servedPath} is served (${protocol} protocol)`
    return sendJson(404, {error: {message: `not found: ${req.method} ${path}`, type: 'not_found'}})
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    record.error = 'request body is not a JSON object'
    return sendJson(400, {error: {message: 'request body must be a JSON object', type: 'invalid_request_error'}})
  }
  const answer = () => {
    const turn = session.turns[record.index]
    if (!turn) {
      record.error = `no scripted turn ${record.index} (the script has ${session.turns.length})`
      return sendJson(400, {error: {message: `scripted model has no turn ${record.index}`, type: 'invalid_request_error'}})
    }
    const model = typeof request.model === 'string' ? request.model : 'model'
    if (protocol === 'responses') return sendJson(200, responsesReply(turn, model))
    if (protocol === 'chat_completions') return stream ? sendSse(chatStream(turn, model)) : sendJson(200, chatReply(turn, model))
    return stream ? sendSse(messagesStream(turn, model)) : sendJson(200, messagesReply(turn, model))
  }
  answer()
}

/**
 * Start a scripted model on host:port (port 0 = any free port). Close it when done;
 * held callbacks are answered on close.
 */
export async function startScriptedModel(options: {host: string; port?: number; protocol: CallbackProtocol}): Promise<ScriptedModel> {
  const {protocol} = options
  const servedPath = PROTOCOL_PATHS[protocol]
  const sessions = new Map<string, SessionState>()
  const rejected: CallbackRecord[] = []

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      answerCallback({protocol, servedPath, sessions, rejected}, req, res, Buffer.concat(chunks).toString('utf8'))
    })
  })

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen({host: options.host, port: options.port ?? 0}, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address() as AddressInfo
  const hostForUrl = options.host.includes(':') ? `[${options.host}]` : options.host

  return {
    host: options.host,
    port: address.port,
    baseUrl: `http://${hostForUrl}:${address.port}/v1`,
    protocol,
    rejected,
    addSession(turns, sessionOptions = {}) {
      const apiKey = sessionOptions.apiKey ?? `gymrecipe-${hex(24)}`
      let markHeld: () => void = () => undefined
      const held = new Promise<void>((resolve) => {
        markHeld = resolve
      })
      const state: SessionState = {
        turns,
        holdAt: sessionOptions.holdAt,
        callbacks: [],
        held,
        markHeld,
        history() {
          return state.callbacks.map((c) => c.toolResults)
        },
        release() {
          const pending = state.pending
          state.pending = undefined
          pending?.()
        },
      }
      sessions.set(apiKey, state)
      return {apiKey, session: state}
    },
    async close() {
      for (const state of sessions.values()) state.release()
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
    },
  }
}
