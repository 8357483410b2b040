import {isJsonObject} from '../../json/index.js'

export type HarnessOutcome =
  | {kind: 'answer'; answer: string; toolTrace: unknown[]}
  | {kind: 'unfinished'; reason: string; toolTrace: unknown[]}
  | {kind: 'malformed'; reason: string}

/** Items the client would have to execute; without a matching *_output item they are pending. */
const CLIENT_EXECUTED_CALLS = new Set(['function_call', 'custom_tool_call', 'computer_call', 'local_shell_call', 'shell_call', 'apply_patch_call'])

/**
 * The harness terminal-message rules. The answer is the text of the last output
 * item when that item is a completed assistant message with text. Pending tool
 * calls, commentary, refusals without text, incomplete or failed responses
 * give no answer. An unset top-level status is accepted only together with
 * that terminal message and nothing pending. There is no caller-side tool
 * loop: a pending call is reported, never executed.
 */
export function harnessOutcome(response: unknown): HarnessOutcome {
  if (!isJsonObject(response)) return {kind: 'malformed', reason: 'harness response is not a JSON object'}
  const output = response.output
  if (!Array.isArray(output)) return {kind: 'malformed', reason: 'harness response has no `output` array'}
  const toolTrace = output.filter((item) => isJsonObject(item) && typeof item.type === 'string' && /_call(_output)?$|^mcp_/u.test(item.type))
  const unfinished = (reason: string): HarnessOutcome => ({kind: 'unfinished', reason, toolTrace})

  if (response.incomplete_details !== undefined && response.incomplete_details !== null) {
    const reason = isJsonObject(response.incomplete_details) ? response.incomplete_details.reason : undefined
    return unfinished(`response is incomplete${typeof reason === 'string' ? ` (${reason})` : ''}`)
  }
  const status = response.status
  if (status !== undefined && status !== null && status !== 'completed') return unfinished(`response status is ${JSON.stringify(status)}`)
  if (response.error !== undefined && response.error !== null) return unfinished('response carries an error')

  const pending = pendingCalls(output)
  if (pending.length > 0) return unfinished(`pending tool call${pending.length > 1 ? 's' : ''}: ${pending.slice(0, 5).join(', ')} (no caller-side tool loop; use a service-side completed-loop adapter)`)

  if (output.length === 0) return unfinished('response has no output items')
  const last = output[output.length - 1]
  if (!isJsonObject(last)) return unfinished('last output item is not an object')
  if (last.type !== 'message') return unfinished(`last output item is a ${JSON.stringify(last.type)}, not an assistant message`)
  if (last.role !== 'assistant') return unfinished(`last output message has role ${JSON.stringify(last.role)}, not assistant`)
  if (last.status !== 'completed') return unfinished(`last assistant message status is ${JSON.stringify(last.status ?? null)}, not "completed"`)
  if (last.phase === 'commentary' || last.channel === 'commentary') return unfinished('last assistant message is commentary, not a final answer')

  let text = ''
  let refusal = false
  if (typeof last.content === 'string') {
    text = last.content
  } else if (Array.isArray(last.content)) {
    for (const part of last.content) {
      if (!isJsonObject(part)) continue
      if (part.type === 'output_text' && typeof part.text === 'string') text += part.text
      if (part.type === 'refusal') refusal = true
    }
  }
  if (text.trim() === '') return unfinished(refusal ? 'last assistant message is a refusal without text' : 'last assistant message has no text')
  return {kind: 'answer', answer: text, toolTrace}
}

function pendingCalls(output: unknown[]): string[] {
  const answered = new Set<string>()
  for (const item of output) {
    if (isJsonObject(item) && typeof item.type === 'string' && item.type.endsWith('_output') && typeof item.call_id === 'string') answered.add(item.call_id)
  }
  const pending: string[] = []
  for (const item of output) {
    if (!isJsonObject(item) || typeof item.type !== 'string') continue
    const label = `${item.type}${typeof item.name === 'string' ? ` ${item.name}` : ''}`
    if (CLIENT_EXECUTED_CALLS.has(item.type)) {
      if (typeof item.call_id !== 'string' || !answered.has(item.call_id)) pending.push(label)
    } else if (item.type.endsWith('_call') && item.status !== undefined && item.status !== null && item.status !== 'completed') {
      pending.push(label)
    } else if (item.type === 'mcp_approval_request') {
      pending.push(label)
    }
  }
  return pending
}
