import {POLICY_MESSAGES} from '../input-policy.js'
import {FieldError, inputError, integerText, jsonKind, locate, nonFiniteField, parseJson, rawString, readJsonlBatches, type ScannedObject, scanObjectLine, trimJsonBytes} from '../json.js'
import {canonicalJson} from '../tasks/identity.js'

/**
 * The exported tasks, keyed by task index, holding what a rollout join copies into its output as
 * exact JSON bytes (UTF-8). This table is the only thing ingest keeps in memory: bytes take half
 * the room of the decoded text and hold no reference to the chunk the task was read from.
 */
export interface TaskEntry {
  line: number
  /** The task line as read, without surrounding whitespace (a view into pieces.task). */
  text: Buffer
  /** The pieces of a joined record that come from the task alone (see writeNormalized). */
  pieces: {
    /** `{"scenario_id":<_dd_scenario_id>,"task_index":<index>` */
    head: Buffer
    /** `,"provenance":<_dd_provenance>` (`{}` when absent) */
    provenance: Buffer
    /** `,"task":<the task line>,"rollout":` */
    task: Buffer
  }
  /** `agent_ref` as exact JSON bytes when the task has the key. */
  agentRef?: Buffer
}

export interface TaskTable {
  entries: Map<string, TaskEntry>
  /** Task lines read. */
  lines: number
  /** Lines that repeated an earlier task exactly. */
  identicalDuplicates: number
}

/**
 * A raw index value as its exact integer in canonical decimal (`5.0`, `5e0` and `5` are all
 * `5`, 60-bit values exact), or undefined when it is not a whole JSON number. The table is keyed
 * by this text rather than a BigInt, which would be one more allocation per rollout.
 */
export function indexKey(rawValue: string): string | undefined {
  return jsonKind(rawValue) === 'number' ? integerText(rawValue) : undefined
}

interface ParsedTask {
  key: string
  indexField: '_ng_task_index' | 'id'
  entry: TaskEntry
}

function taskEntry(text: string, bytes: Buffer, {members: task, hasNonFinite}: ScannedObject, line: number): ParsedTask {
  const indexField = task.has('_ng_task_index') ? '_ng_task_index' : 'id'
  const rawIndex = task.get(indexField)
  if (rawIndex === undefined || rawIndex === 'null') throw new FieldError(indexField, 'every task must contain _ng_task_index or id')
  const key = indexKey(rawIndex)
  if (key === undefined) throw new FieldError(indexField, `task index must be an integer, got ${rawIndex}`)
  const scenarioId = task.get('_dd_scenario_id')
  if (scenarioId === undefined || jsonKind(scenarioId) !== 'string' || rawString(scenarioId) === '') {
    throw new FieldError('_dd_scenario_id', `task ${key} does not contain _dd_scenario_id`)
  }
  const provenance = task.get('_dd_provenance') ?? 'null'
  if (provenance !== 'null' && jsonKind(provenance) !== 'object') throw new FieldError('_dd_provenance', 'must be a JSON object')
  if (hasNonFinite) throw new FieldError(nonFiniteField(text, ''), POLICY_MESSAGES.nonFinite)
  const agentRef = task.get('agent_ref')
  // the line's bytes are the reader's: copied once, into the piece that holds them
  const taskPiece = Buffer.concat([TASK_OPEN, trimJsonBytes(bytes), ROLLOUT_OPEN])
  return {
    key: detached(key),
    indexField,
    entry: {
      line,
      text: taskPiece.subarray(TASK_OPEN.length, taskPiece.length - ROLLOUT_OPEN.length),
      pieces: {
        head: Buffer.from(`{"scenario_id":${scenarioId},"task_index":${key}`),
        provenance: Buffer.from(`,"provenance":${provenance === 'null' ? '{}' : provenance}`),
        task: taskPiece,
      },
      agentRef: agentRef === undefined ? undefined : Buffer.from(agentRef),
    },
  }
}

/** A copy of text, not a slice of the line it came from that would keep the line's chunk alive. */
function detached(text: string): string {
  return Buffer.from(text).toString()
}

const TASK_OPEN = Buffer.from(',"task":')
const ROLLOUT_OPEN = Buffer.from(',"rollout":')

/** Same JSON value, whatever the key order or spacing. */
function sameJson(a: string, b: string): boolean {
  return a === b || canonicalJson(parseJson(a)) === canonicalJson(parseJson(b))
}

/** Read the exported tasks; a second task with the same index must be identical to the first. */
export async function loadTaskTable(file: string): Promise<TaskTable> {
  const table: TaskTable = {entries: new Map(), lines: 0, identicalDuplicates: 0}
  const hint = 'Tasks for ingest come from `gymrecipe tasks export`.'
  for await (const batch of readJsonlBatches(file, '--tasks', undefined, {bytes: true})) {
    for (const line of batch) {
      table.lines++
      const task = scanObjectLine(line, file)
      let parsed: ParsedTask
      try {
        parsed = taskEntry(line.text, line.bytes!, task, line.line)
      } catch (error) {
        throw locate(error, 'E_TASK_INVALID', file, line.line, hint)
      }
      const existing = table.entries.get(parsed.key)
      if (!existing) {
        table.entries.set(parsed.key, parsed.entry)
      } else if (existing.text.equals(parsed.entry.text) || sameJson(existing.text.toString(), line.text)) {
        table.identicalDuplicates++
      } else {
        throw inputError('E_TASK_CONFLICT', `conflicting tasks share task index ${parsed.key}: this task differs from the one on line ${existing.line}`, {file, line: line.line, field: parsed.indexField}, 'Each task index must identify one task; remove or fix one of the two.')
      }
    }
  }
  return table
}
