import {
  FieldError,
  findNonFiniteInText,
  inputError,
  integerText,
  isPlainRecord,
  locate,
  parseJson,
  parseObjectLine,
  rawMembers,
  readJsonlLines,
} from '../json.js'
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
  entries: Map<string, TaskEntry>
  /** Task lines read. */
  lines: number
  /** Lines that repeated an earlier task exactly. */
  identicalDuplicates: number
}

/** The exact integer of an index value, or undefined when it is not a whole JSON number. */
export function indexKey(value: unknown, rawValue: string | undefined): string | undefined {
  return typeof value === 'number' && rawValue !== undefined ? integerText(rawValue) : undefined
}

interface ParsedTask {
  key: string
  indexField: '_ng_task_index' | 'id'
  entry: TaskEntry
}

function taskEntry(text: string, task: Record<string, unknown>, line: number): ParsedTask {
  const members = rawMembers(text)
  const indexField = Object.hasOwn(task, '_ng_task_index') ? '_ng_task_index' : 'id'
  if (task[indexField] === undefined || task[indexField] === null) throw new FieldError(indexField, 'every task must contain _ng_task_index or id')
  const key = indexKey(task[indexField], members.get(indexField))
  if (key === undefined) throw new FieldError(indexField, `task index must be an integer, got ${members.get(indexField)}`)
  if (typeof task._dd_scenario_id !== 'string' || task._dd_scenario_id === '') {
    throw new FieldError('_dd_scenario_id', `task ${key} does not contain _dd_scenario_id`)
  }
  const provenance = task._dd_provenance ?? {}
  if (!isPlainRecord(provenance)) throw new FieldError('_dd_provenance', 'must be a JSON object')
  const nonFinite = findNonFiniteInText(text, 'task')
  if (nonFinite) throw new FieldError(nonFinite, 'must be a finite number (NaN and Infinity are not JSON)')
  return {
    key,
    indexField,
    entry: {
      line,
      text: text.trim(),
      scenarioId: JSON.stringify(task._dd_scenario_id),
      provenance: task._dd_provenance ? (members.get('_dd_provenance') as string) : '{}',
      agentRef: members.get('agent_ref'),
    },
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
    const task = parseObjectLine(line, file)
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
