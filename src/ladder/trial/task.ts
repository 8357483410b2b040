/**
 * The trial's task: one raw Gym row (a JSONL file inside the Gym image, or under
 * --gym-root), converted the way training converts it and sent as the
 * thin client sends it (`environment.task = {messages, metadata}`), so the trial
 * exercises the same run-adapter path as a training sample.
 */
import {promises as fsp} from 'node:fs'
import path from 'node:path'

import {codeOf, GymError, messageOf, ExitCode} from '../../errors.js'

const GSM8K_PROMPT = 'Solve the following math problem. Make sure to put the answer (and only answer) inside \\boxed{}.\n\n'
const LIFTED_KEYS = new Set(['input', 'tools', 'parallel_tool_calls', 'instructions'])

export interface RelaxTask {
  messages: unknown[]
  metadata: Record<string, unknown>
}

/** One raw Gym row -> the converted Relax row, as `{messages, metadata}` (convert_dataset.py rules). */
export function toRelaxTask(row: Record<string, unknown>): RelaxTask {
  const metadata: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(row)) if (key !== 'responses_create_params') metadata[key] = value
  const rcp = row.responses_create_params
  if (rcp === null || typeof rcp !== 'object' || Array.isArray(rcp)) {
    if (typeof row.question === 'string' && 'expected_answer' in row) {
      metadata.expected_answer = String(row.expected_answer)
      return {messages: [{role: 'user', content: GSM8K_PROMPT + row.question}], metadata}
    }
    throw new Error('row has no responses_create_params object (and is not a question/expected_answer row)')
  }
  const params = rcp as Record<string, unknown>
  if (!('input' in params)) throw new Error('responses_create_params.input is required')
  let messages = params.input
  if (typeof messages === 'string') messages = [{role: 'user', content: messages}]
  if (!Array.isArray(messages)) throw new Error('responses_create_params.input must be a list of messages or a string')
  const rest: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(params)) if (!LIFTED_KEYS.has(key)) rest[key] = value
  for (const key of ['tools', 'parallel_tool_calls']) if (key in params) metadata[key] = params[key]
  if (params.instructions) metadata.developer_message = params.instructions
  if (messages.length === 0 && typeof row.problem_statement === 'string' && row.problem_statement) {
    messages = [{role: 'user', content: row.problem_statement}]
    rest.input = []
  }
  if (Object.keys(rest).length > 0) metadata.responses_create_params = rest
  return {messages: messages as unknown[], metadata}
}

/** The row-th non-empty line of a JSONL text, parsed. */
export function pickRow(text: string, row: number, where: string): Record<string, unknown> {
  const lines = text.split('\n').filter((line) => line.trim() !== '')
  if (row < 0 || row >= lines.length) {
    throw new GymError(`${where} has ${lines.length} row(s); trial.task.row ${row} does not exist`, {
      code: 'E_TRIAL_TASK',
      exit: ExitCode.failure,
      hint: 'Fix trial.task.row in recipe.yaml (0-based, blank lines are not counted).',
    })
  }
  let value: unknown
  try {
    value = JSON.parse(lines[row])
  } catch (error) {
    throw new GymError(`${where} row ${row} is not valid JSON: ${messageOf(error)}`, {code: 'E_TRIAL_TASK', exit: ExitCode.failure})
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new GymError(`${where} row ${row} is not a JSON object`, {code: 'E_TRIAL_TASK', exit: ExitCode.failure})
  }
  return value as Record<string, unknown>
}

/** Read a task file from a Gym checkout on this machine (path relative to the Gym root). */
export async function readTaskFromGymRoot(gymRoot: string, file: string): Promise<{text: string; where: string}> {
  const where = path.resolve(gymRoot, file)
  const text = await fsp.readFile(where, 'utf8').catch((error: unknown) => {
    throw new GymError(`cannot read the trial task ${where} (${codeOf(error) ?? messageOf(error)})`, {
      code: 'E_TRIAL_TASK',
      exit: ExitCode.failure,
      hint: 'trial.task.file is relative to the Gym root; check --gym-root or recipe.yaml.',
    })
  })
  return {text, where}
}
