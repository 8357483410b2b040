import {type ByteMembers, KeySlots, scanObjectBytes} from '../../json/byte-scan.js'
import {FieldError, jsonKind, type LineBuilder, trimJsonBytes} from '../../json/index.js'
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

/** The top-level keys a join reads: its own fields and the first segment of every source. */
const OWN_FIELDS = ['_ng_task_index', '_ng_rollout_index', 'reward', 'agent_ref', '_ng_failure_class', '_ng_failure_terminal'] as const
const TOP_KEYS = [...new Set<string>([...OWN_FIELDS, ...Object.values(FIELD_SOURCES).flatMap((paths) => paths.map((path) => path[0]))])]
const TOP_SLOTS = new KeySlots(TOP_KEYS)
const slotOf = (key: string) => TOP_KEYS.indexOf(key)
const TASK_INDEX = slotOf('_ng_task_index')
const ROLLOUT_INDEX = slotOf('_ng_rollout_index')
const REWARD = slotOf('reward')
const AGENT_REF = slotOf('agent_ref')
const FAILURE_CLASS = slotOf('_ng_failure_class')
const FAILURE_TERMINAL = slotOf('_ng_failure_terminal')
/** Each added field's sources in output order, their first segment as a slot. */
const OUTPUT_ORDER: readonly (keyof typeof FIELD_SOURCES)[] = ['failure_reason', 'failure_stage', 'rollout_id', 'attempt', 'task_id', 'environment_server']
const SOURCES = OUTPUT_ORDER.map((name) => ({
  prefix: Buffer.from(`,${JSON.stringify(name)}:`),
  paths: FIELD_SOURCES[name].map((path) => ({slot: slotOf(path[0]), rest: path.slice(1)})),
}))

const text = (value: string) => Buffer.from(value)
const NULL = text('null')
const FALSE = text('false')
const ROLLOUT_INDEX_KEY = text(',"rollout_index":')
const STATUS_AND_REWARD_KEY = {completed: text(',"status":"completed","reward":'), failed: text(',"status":"failed","reward":')}
const AGENT_REF_KEY = text(',"agent_ref":')
const FAILURE_CLASS_KEY = text(',"failure_class":')
const FAILURE_TERMINAL_KEY = text(',"failure_terminal":')
const RECORD_END = text('}')

function writeValue(out: LineBuilder, members: ByteMembers, m: number): void {
  out.bytes(members.bytes, members.valueStart(m), members.valueEnd(m))
}

/** The member at a path of nested objects below the member at m, with the object holding it; undefined when absent or null. */
function nestedMember(members: ByteMembers, m: number, rest: readonly string[]): {level: ByteMembers; m: number} | undefined {
  let level = members
  for (const key of rest) {
    if (!level.isObjectAt(m)) return undefined
    // the value was validated with its line: it scans as an object
    level = (scanObjectBytes(level.bytes.subarray(level.valueStart(m), level.valueEnd(m))) as {members: ByteMembers}).members
    m = level.indexOf(key)
    if (m === -1 || level.isNullAt(m)) return undefined
  }
  return {level, m}
}

/** The first non-null source of a field, or null. */
function writeFirstOf(out: LineBuilder, members: ByteMembers, slots: Int32Array, source: (typeof SOURCES)[number]): void {
  out.bytes(source.prefix)
  for (const {slot, rest} of source.paths) {
    const m = slots[slot]
    if (m === -1 || members.isNullAt(m)) continue
    if (rest.length === 0) return writeValue(out, members, m)
    const found = nestedMember(members, m, rest)
    if (found) return writeValue(out, found.level, found.m)
  }
  out.bytes(NULL)
}

function findTask(members: ByteMembers, slots: Int32Array, tasks: Map<string, TaskEntry>): TaskEntry {
  const m = slots[TASK_INDEX]
  if (m === -1) throw new FieldError('_ng_task_index', 'missing, so the record cannot be joined to a task')
  const first = members.bytes[members.valueStart(m)]
  // a number is ASCII; anything else is decoded for the message
  const raw = members.bytes.toString(first === 0x2d || (first >= 0x30 && first <= 0x39) ? 'latin1' : 'utf8', members.valueStart(m), members.valueEnd(m))
  const key = indexKey(raw)
  const task = key === undefined ? undefined : tasks.get(key)
  if (key === undefined || !task) {
    const kind = jsonKind(raw) === 'string' ? ' (a string; task indices are integers)' : ''
    throw new FieldError('_ng_task_index', `rollout references unknown task index: ${key ?? raw}${kind}`)
  }
  return task
}

const slots = new Int32Array(TOP_KEYS.length)

/**
 * Append the normalized JSONL line of one record, given as its line's bytes and their members
 * (scanObjectBytes): the task and the rollout are copied as the bytes they were read as, every
 * field as its exact source bytes. Throws FieldError.
 */
export function writeNormalized(out: LineBuilder, line: Buffer, members: ByteMembers, tasks: Map<string, TaskEntry>, status: RolloutStatus): void {
  TOP_SLOTS.locate(members, slots)
  const task = findTask(members, slots, tasks)
  const own = (slot: number, absent: Buffer) => {
    const m = slots[slot]
    if (m === -1) out.bytes(absent)
    else writeValue(out, members, m)
  }
  out.bytes(task.pieces.head)
  out.bytes(ROLLOUT_INDEX_KEY)
  own(ROLLOUT_INDEX, NULL)
  out.bytes(STATUS_AND_REWARD_KEY[status])
  own(REWARD, NULL)
  out.bytes(task.pieces.provenance)
  out.bytes(AGENT_REF_KEY)
  own(AGENT_REF, task.agentRef ?? NULL)
  out.bytes(FAILURE_CLASS_KEY)
  own(FAILURE_CLASS, NULL)
  out.bytes(FAILURE_TERMINAL_KEY)
  own(FAILURE_TERMINAL, FALSE)
  for (const source of SOURCES) writeFirstOf(out, members, slots, source)
  out.bytes(task.pieces.task)
  out.bytes(trimJsonBytes(line))
  out.bytes(RECORD_END)
  out.endLine()
}
