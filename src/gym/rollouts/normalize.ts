import {FieldError, jsonKind, type MemberTexts, rawMembers, trimJsonBytes} from '../json.js'
import {indexKey, type TaskEntry} from './task-table.js'

/**
 * One rollout (or failure-sidecar) record joined to its task. Every output
 * field is copied from an explicit source as exact JSON text; a field with no
 * source stays null and is never inferred.
 */

export type RolloutStatus = 'completed' | 'failed'

/**
 * Where each added field comes from, first non-null source wins. Explicit
 * fields come before Gym's native `_ng_*` keys, which come before the nested
 * envelopes of newer Gym versions.
 */
export const FIELD_SOURCES = {
  rollout_id: [['_ng_rollout_id'], ['_ng_episode_id', 'rollout_id'], ['_ng_failure_record', 'episode_id', 'rollout_id']],
  attempt: [['_ng_attempt_index'], ['_ng_episode_id', 'attempt'], ['_ng_failure_record', 'episode_id', 'attempt']],
  task_id: [['_ng_task_id']],
  environment_server: [['_ng_environment_server']],
  failure_reason: [['failure_reason'], ['_ng_failure_message'], ['_ng_failure_record', 'failure', 'failure_reason']],
  failure_stage: [['failure_stage'], ['_ng_failure_stage'], ['_ng_failure_record', 'failure', 'stage']],
} as const

/** Exact JSON text at a path of nested objects, or undefined when absent or null. */
function rawAt(members: MemberTexts, path: readonly string[]): string | undefined {
  let level: MemberTexts = members
  for (const [i, key] of path.entries()) {
    const raw = level.get(key)
    if (raw === undefined || raw === 'null') return undefined
    if (i === path.length - 1) return raw
    if (jsonKind(raw) !== 'object') return undefined
    level = rawMembers(raw)
  }
  return undefined
}

function firstOf(members: MemberTexts, sources: readonly (readonly string[])[]): string {
  for (const path of sources) {
    const raw = rawAt(members, path)
    if (raw !== undefined) return raw
  }
  return 'null'
}

function findTask(members: MemberTexts, tasks: Map<string, TaskEntry>): {key: string; task: TaskEntry} {
  const raw = members.get('_ng_task_index')
  if (raw === undefined) throw new FieldError('_ng_task_index', 'missing, so the record cannot be joined to a task')
  const key = indexKey(raw)
  const task = key === undefined ? undefined : tasks.get(key)
  if (key === undefined || !task) {
    const kind = jsonKind(raw) === 'string' ? ' (a string; task indices are integers)' : ''
    throw new FieldError('_ng_task_index', `rollout references unknown task index: ${key ?? raw}${kind}`)
  }
  return {key, task}
}

/**
 * Append the normalized JSONL line of one record, given as its raw members (scanObjectByteLine) and
 * its line's bytes, to `pieces` for JsonlOutput.writePieces (newline included): the task and the
 * rollout are copied as the bytes they were read as. Throws FieldError.
 */
export function normalizedPieces(bytes: Buffer, members: MemberTexts, tasks: Map<string, TaskEntry>, status: RolloutStatus, pieces: (string | Uint8Array)[]): void {
  const {task} = findTask(members, tasks)
  const own = (name: string, absent: string) => members.get(name) ?? absent
  const field = (name: keyof typeof FIELD_SOURCES) => firstOf(members, FIELD_SOURCES[name])
  pieces.push(
    task.pieces.head,
    `,"rollout_index":${own('_ng_rollout_index', 'null')},"status":"${status}","reward":${own('reward', 'null')}`,
    task.pieces.provenance,
    `,"agent_ref":${members.get('agent_ref') ?? task.agentRef ?? 'null'}` +
      `,"failure_class":${own('_ng_failure_class', 'null')}` +
      `,"failure_terminal":${own('_ng_failure_terminal', 'false')}` +
      `,"failure_reason":${field('failure_reason')}` +
      `,"failure_stage":${field('failure_stage')}` +
      `,"rollout_id":${field('rollout_id')}` +
      `,"attempt":${field('attempt')}` +
      `,"task_id":${field('task_id')}` +
      `,"environment_server":${field('environment_server')}`,
    task.pieces.task,
    trimJsonBytes(bytes),
    RECORD_END,
  )
}

const RECORD_END = Buffer.from('}\n')
