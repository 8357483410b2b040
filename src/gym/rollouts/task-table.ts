import {POLICY_MESSAGES} from '../../json/input-policy.js'
import {KeySlots, type ScannedBytes} from '../../json/byte-scan.js'
import {type ByteLine, copyBytes, FieldError, inputError, integerText, jsonKind, locate, nonFiniteField, parseJson, readJsonlBatches, scanObjectByteLine, trimJsonBytes} from '../../json/index.js'
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

const TASK_KEYS = new KeySlots(['_ng_task_index', 'id', '_dd_scenario_id', '_dd_provenance', 'agent_ref'])
const taskSlots = new Int32Array(TASK_KEYS.keys.length)
const TASK_INDEX = 0
const ID = 1
const SCENARIO_ID = 2
const PROVENANCE = 3
const AGENT_REF = 4

const SLAB_BYTES = 1 << 20

/**
 * The table's bytes, carved out of large shared slabs: one allocation per megabyte instead of
 * several per task (small Buffers each cost an allocation and a slice of Node's pool).
 */
class ByteArena {
  private slab = Buffer.alloc(0)
  private used = 0

  /** `length` bytes for the caller to fill. */
  take(length: number): Buffer {
    if (this.used + length > this.slab.length) {
      this.slab = Buffer.allocUnsafe(Math.max(SLAB_BYTES, length))
      this.used = 0
    }
    const view = this.slab.subarray(this.used, this.used + length)
    this.used += length
    return view
  }
}

function taskEntry(line: ByteLine, {members: task, hasNonFinite}: ScannedBytes, arena: ByteArena): ParsedTask {
  TASK_KEYS.locate(task, taskSlots)
  const indexField = taskSlots[TASK_INDEX] === -1 ? 'id' : '_ng_task_index'
  const index = taskSlots[indexField === 'id' ? ID : TASK_INDEX]
  if (index === -1 || task.isNullAt(index)) throw new FieldError(indexField, 'every task must contain _ng_task_index or id')
  const rawIndex = task.valueAt(index)
  const key = indexKey(rawIndex)
  if (key === undefined) throw new FieldError(indexField, `task index must be an integer, got ${rawIndex}`)
  const scenarioId = taskSlots[SCENARIO_ID]
  // a JSON string is empty only when written as ""
  if (scenarioId === -1 || !task.isStringAt(scenarioId) || task.valueEnd(scenarioId) - task.valueStart(scenarioId) === 2) {
    throw new FieldError('_dd_scenario_id', `task ${key} does not contain _dd_scenario_id`)
  }
  const provenance = taskSlots[PROVENANCE] === -1 || task.isNullAt(taskSlots[PROVENANCE]) ? -1 : taskSlots[PROVENANCE]
  if (provenance !== -1 && !task.isObjectAt(provenance)) throw new FieldError('_dd_provenance', 'must be a JSON object')
  if (hasNonFinite) throw new FieldError(nonFiniteField(line.text, ''), POLICY_MESSAGES.nonFinite)

  // one view of the arena holds the head, the provenance, the task pieces and agent_ref, each
  // copied from the line
  const text = trimJsonBytes(line.bytes)
  const {bytes} = task
  const agentRef = taskSlots[AGENT_REF]
  const idStart = task.valueStart(scenarioId)
  const idEnd = task.valueEnd(scenarioId)
  const provenanceLength = provenance === -1 ? EMPTY_OBJECT.length : task.valueEnd(provenance) - task.valueStart(provenance)
  const agentRefLength = agentRef === -1 ? 0 : task.valueEnd(agentRef) - task.valueStart(agentRef)
  const view = arena.take(
    SCENARIO_OPEN.length + idEnd - idStart + INDEX_OPEN.length + key.length + PROVENANCE_OPEN.length + provenanceLength + TASK_OPEN.length + text.length + ROLLOUT_OPEN.length + agentRefLength,
  )
  let at = copyBytes(view, 0, SCENARIO_OPEN)
  at = copyBytes(view, at, bytes, idStart, idEnd)
  at = copyBytes(view, at, INDEX_OPEN)
  // the key is a decimal integer: ASCII
  for (let k = 0; k < key.length; k++) view[at++] = key.charCodeAt(k)
  const headEnd = at
  at = copyBytes(view, at, PROVENANCE_OPEN)
  at = provenance === -1 ? copyBytes(view, at, EMPTY_OBJECT) : copyBytes(view, at, bytes, task.valueStart(provenance), task.valueEnd(provenance))
  const provenanceEnd = at
  at = copyBytes(view, at, TASK_OPEN)
  const textStart = at
  at = copyBytes(view, at, text)
  const textEnd = at
  at = copyBytes(view, at, ROLLOUT_OPEN)
  const taskEnd = at
  if (agentRef !== -1) copyBytes(view, at, bytes, task.valueStart(agentRef), task.valueEnd(agentRef))
  return {
    key,
    indexField,
    entry: {
      line: line.line,
      text: view.subarray(textStart, textEnd),
      pieces: {head: view.subarray(0, headEnd), provenance: view.subarray(headEnd, provenanceEnd), task: view.subarray(provenanceEnd, taskEnd)},
      agentRef: agentRef === -1 ? undefined : view.subarray(taskEnd),
    },
  }
}

const SCENARIO_OPEN = Buffer.from('{"scenario_id":')
const INDEX_OPEN = Buffer.from(',"task_index":')
const PROVENANCE_OPEN = Buffer.from(',"provenance":')
const EMPTY_OBJECT = Buffer.from('{}')
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
  const arena = new ByteArena()
  for await (const batch of readJsonlBatches(file, '--tasks', undefined, {bytes: true, text: false})) {
    for (let line = batch.next(); line; line = batch.next()) {
      table.lines++
      const task = scanObjectByteLine(line, file)
      let parsed: ParsedTask
      try {
        parsed = taskEntry(line, task, arena)
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
