import {FieldError, findNonFiniteInText, isPlainRecord, locate, parseObjectLine, rawMembers, readJsonlLines, withJsonlOutput} from '../json.js'
import {isEncodableId, taskIndexOf} from './identity.js'
import {checkGymTask} from './task.js'

/**
 * Scenario bundle → Gym-native task: the task's own members (top-level nulls
 * dropped, `responses_create_params` and `agent_ref` first), then `id` (only
 * when the task has none), `_ng_task_index`, `_dd_scenario_id` and
 * `_dd_provenance` (only when non-empty). Member values are copied as their
 * exact source text, so numbers are never re-spelled.
 */

const BUNDLE_FIELDS = ['schema_version', 'scenario_id', 'task', 'provenance']

function checkBundle(bundle: Record<string, unknown>): asserts bundle is {scenario_id: string; task: Record<string, unknown>; provenance?: Record<string, unknown>} {
  const unknown = Object.keys(bundle).find((key) => !BUNDLE_FIELDS.includes(key))
  if (unknown !== undefined) throw new FieldError(unknown, `unknown field; a scenario bundle has only ${BUNDLE_FIELDS.join(', ')}`)
  if (Object.hasOwn(bundle, 'schema_version') && bundle.schema_version !== '1') throw new FieldError('schema_version', 'must be the string "1"')
  if (!Object.hasOwn(bundle, 'scenario_id')) throw new FieldError('scenario_id', 'is required')
  if (typeof bundle.scenario_id !== 'string') throw new FieldError('scenario_id', 'must be a string')
  if (bundle.scenario_id === '') throw new FieldError('scenario_id', 'must not be empty')
  if (!isEncodableId(bundle.scenario_id)) throw new FieldError('scenario_id', 'must be valid Unicode (it contains a lone surrogate)')
  if (!Object.hasOwn(bundle, 'task')) throw new FieldError('task', 'is required')
  checkGymTask(bundle.task, 'task')
  if (Object.hasOwn(bundle, 'provenance') && !isPlainRecord(bundle.provenance)) throw new FieldError('provenance', 'must be a JSON object')
}

function member(key: string, rawValue: string): string {
  return `${JSON.stringify(key)}:${rawValue}`
}

/** Export one bundle line; `bundle` is the line parsed with JSON.parse. Throws FieldError. */
export function exportBundle(text: string, bundle: Record<string, unknown>): string {
  checkBundle(bundle)
  const bundleMembers = rawMembers(text)
  const taskText = bundleMembers.get('task') as string
  const provenanceText = bundleMembers.get('provenance')
  const nonFinite = findNonFiniteInText(taskText, 'task') ?? (provenanceText === undefined ? undefined : findNonFiniteInText(provenanceText, 'provenance'))
  if (nonFinite) throw new FieldError(nonFinite, 'must be a finite number (NaN and Infinity are not JSON)')

  const {task, scenario_id: scenarioId} = bundle
  const taskMembers = rawMembers(taskText)
  const members: string[] = []
  const keys = new Set(['responses_create_params', 'agent_ref', ...taskMembers.keys()])
  for (const key of keys) {
    if (taskMembers.has(key) && task[key] !== null) members.push(member(key, taskMembers.get(key) as string))
  }
  const index = taskIndexOf(scenarioId).toString()
  if (!Object.hasOwn(task, 'id') || task.id === null) members.push(member('id', index))
  members.push(member('_ng_task_index', index), member('_dd_scenario_id', JSON.stringify(scenarioId)))
  if (bundle.provenance && Object.keys(bundle.provenance).length > 0) members.push(member('_dd_provenance', provenanceText as string))
  return `{${members.join(',')}}`
}

export interface ExportSummary {
  input: string
  output: string
  dryRun: boolean
  tasks: number
}

/** Stream scenarios.jsonl into Gym tasks, same order; nothing is written unless every bundle is valid. */
export async function exportTasks(options: {input: string; output: string; dryRun: boolean}): Promise<ExportSummary> {
  const {input, output, dryRun} = options
  const tasks = await withJsonlOutput(output, dryRun, async (out) => {
    for await (const line of readJsonlLines(input, 'SCENARIOS')) {
      const bundle = parseObjectLine(line, input)
      let task: string
      try {
        task = exportBundle(line.text, bundle)
      } catch (error) {
        throw locate(error, 'E_BUNDLE_INVALID', input, line.line, 'Scenario bundles come from `gymrecipe tasks build`.')
      }
      await out.write(task)
    }
    return out.lines
  })
  return {input, output, dryRun, tasks}
}
