import {POLICY_MESSAGES} from '../input-policy.js'
import {FieldError, inputError, integerText, jsonKind, locate, nonFiniteField, parseJson, rawString, readJsonlLines, type ScannedObject, scanObjectLine} from '../json.js'
import {canonicalJson} from '../tasks/identity.js'

/**
 * The exported tasks, keyed by task index, holding what a rollout join needs
 * as exact JSON text. This table is the only thing ingest keeps in memory.
 */
export interface TaskEntry {
  line: number
  /** The task line as read, without surrounding whitespace. */
  text: string
  /** `_dd_scenario_id` as JSON text. */
  scenarioId: string
  /** `_dd_provenance` as JSON text, `{}` when absent. */
  provenance: string
  /** `agent_ref` as JSON text when the task has the key. */
  agentRef?: string
}

export interface TaskTable {
  entries: Map<bigint, TaskEntry>
  /** Task lines read. */
  lines: number
  /** Lines that repeated an earlier task exactly. */
  identicalDuplicates: number
}

/** A raw index value as an exact integer, or undefined when it is not a whole JSON number. */
export function indexKey(rawValue: string): bigint | undefined {
  const integer = jsonKind(rawValue) === 'number' ? integerText(rawValue) : undefined
  return integer === undefined ? undefined : BigInt(integer)
}

interface ParsedTask {
  key: bigint
  indexField: '_ng_task_index' | 'id'
  entry: TaskEntry
}

function taskEntry(text: string, {members: task, hasNonFinite}: ScannedObject, line: number): ParsedTask {
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
  return {
    key,
    indexField,
    entry: {line, text: text.trim(), scenarioId, provenance: provenance === 'null' ? '{}' : provenance, agentRef: task.get('agent_ref')},
  }
}

/** Same JSON value, whatever the key order or spacing. */
function sameJson(a: string, b: string): boolean {
  return a === b || canonicalJson(parseJson(a)) === canonicalJson(parseJson(b))
}

/** Read the exported tasks; a second task with the same index must be identical to the first. */
export async function loadTaskTable(file: string): Promise<TaskTable> {
  const table: TaskTable = {entries: new Map(), lines: 0, identicalDuplicates: 0}
  const hint = 'Tasks for ingest come from `gymrecipe tasks export`.'
  for await (const line of readJsonlLines(file, '--tasks')) {
    table.lines++
    const task = scanObjectLine(line, file)
    let parsed: ParsedTask
    try {
      parsed = taskEntry(line.text, task, line.line)
    } catch (error) {
      throw locate(error, 'E_TASK_INVALID', file, line.line, hint)
    }
    const existing = table.entries.get(parsed.key)
    if (!existing) {
      table.entries.set(parsed.key, parsed.entry)
    } else if (sameJson(existing.text, parsed.entry.text)) {
      table.identicalDuplicates++
    } else {
      throw inputError('E_TASK_CONFLICT', `conflicting tasks share task index ${parsed.key}: this task differs from the one on line ${existing.line}`, {file, line: line.line, field: parsed.indexField}, 'Each task index must identify one task; remove or fix one of the two.')
    }
  }
  return table
}
