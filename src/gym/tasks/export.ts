import {POLICY_MESSAGES} from '../input-policy.js'
import {FieldError, jsonKind, locate, nonFiniteField, rawString, type ReadProgress, readJsonlBatches, type ScannedObject, scanObjectLine, withJsonlOutput} from '../json.js'
import {isEncodableId, taskIndexOf} from './identity.js'
import {checkGymTask, kindsOfRaw} from './task.js'

/**
 * Scenario bundle → Gym-native task: the task's own members (top-level nulls
 * dropped, `responses_create_params` and `agent_ref` first), then `id` (only
 * when the task has none), `_ng_task_index`, `_dd_scenario_id` and
 * `_dd_provenance` (only when non-empty). Member values are copied as their
 * exact source text, so numbers are never re-spelled.
 */

const BUNDLE_FIELDS = ['schema_version', 'scenario_id', 'task', 'provenance']
const EMPTY_OBJECT = /^\{\s*\}$/

function required(members: Map<string, string>, key: string): string {
  const raw = members.get(key)
  if (raw === undefined) throw new FieldError(key, 'is required')
  return raw
}

function scenarioIdOf(members: Map<string, string>): string {
  const raw = required(members, 'scenario_id')
  if (jsonKind(raw) !== 'string') throw new FieldError('scenario_id', 'must be a string')
  const id = rawString(raw)
  if (id === '') throw new FieldError('scenario_id', 'must not be empty')
  if (!isEncodableId(id)) throw new FieldError('scenario_id', 'must be valid Unicode (it contains a lone surrogate)')
  return id
}

function taskOf(task: Map<string, string> | undefined): Map<string, string> {
  checkGymTask(task && kindsOfRaw(task), 'task')
  return task as Map<string, string>
}

function member(key: string, rawValue: string): string {
  return `,${JSON.stringify(key)}:${rawValue}`
}

/** True when the task text already has the plugin's member order and no top-level null. */
function isDumped(task: Map<string, string>): boolean {
  let position = 0
  for (const [key, raw] of task) {
    if (raw === 'null' || (position === 0 && key !== 'responses_create_params') || (key === 'agent_ref' && position !== 1)) return false
    position++
  }
  return true
}

/** The task's members as the plugin dumps them (declared fields first, top-level nulls dropped), without braces. */
function dumpedMembers(task: Map<string, string>, taskText: string): string {
  if (isDumped(task)) return taskText.slice(taskText.indexOf('{') + 1, taskText.lastIndexOf('}'))
  let out = member('responses_create_params', task.get('responses_create_params') as string)
  const agentRef = task.get('agent_ref')
  if (agentRef !== undefined && agentRef !== 'null') out += member('agent_ref', agentRef)
  for (const [key, raw] of task) {
    if (key !== 'responses_create_params' && key !== 'agent_ref' && raw !== 'null') out += member(key, raw)
  }
  return out.slice(1)
}

/** Export one bundle line, scanned with its task's members split (scanObjectLine(line, file, 'task')). Throws FieldError. */
export function exportBundle({members: bundle, hasNonFinite, nested}: ScannedObject): string {
  for (const key of bundle.keys()) {
    if (!BUNDLE_FIELDS.includes(key)) throw new FieldError(key, `unknown field; a scenario bundle has only ${BUNDLE_FIELDS.join(', ')}`)
  }
  const version = bundle.get('schema_version')
  if (version !== undefined && (jsonKind(version) !== 'string' || rawString(version) !== '1')) throw new FieldError('schema_version', 'must be the string "1"')
  const scenarioId = scenarioIdOf(bundle)
  const taskText = required(bundle, 'task')
  const task = taskOf(nested)
  const provenance = bundle.get('provenance')
  if (provenance !== undefined && jsonKind(provenance) !== 'object') throw new FieldError('provenance', 'must be a JSON object')
  // The bundle's other members are strings, so a non-finite number is in the task or the provenance.
  if (hasNonFinite) {
    const field = nonFiniteField(taskText, 'task') ?? nonFiniteField(provenance as string, 'provenance')
    throw new FieldError(field, POLICY_MESSAGES.nonFinite)
  }

  const index = taskIndexOf(scenarioId).toString()
  const id = task.get('id')
  let out = `{${dumpedMembers(task, taskText)}`
  if (id === undefined || id === 'null') out += `,"id":${index}`
  out += `,"_ng_task_index":${index},"_dd_scenario_id":${bundle.get('scenario_id')}`
  if (provenance !== undefined && !EMPTY_OBJECT.test(provenance)) out += `,"_dd_provenance":${provenance}`
  return `${out}}`
}

export interface ExportSummary {
  input: string
  /** The file written; null on a dry run without --output. */
  output: string | null
  dryRun: boolean
  tasks: number
}

/** Stream scenarios.jsonl into Gym tasks, same order; nothing is written unless every bundle is valid. */
export async function exportTasks(options: {input: string; output: string; dryRun: boolean; onProgress?: (progress: ReadProgress) => void}): Promise<ExportSummary> {
  const {input, output, dryRun} = options
  const tasks = await withJsonlOutput(output, dryRun, async (out) => {
    for await (const batch of readJsonlBatches(input, 'SCENARIOS', options.onProgress)) {
      const exported: string[] = new Array(batch.length)
      for (let n = 0; n < batch.length; n++) {
        const line = batch[n]
        const bundle = scanObjectLine(line, input, 'task')
        try {
          exported[n] = exportBundle(bundle)
        } catch (error) {
          throw locate(error, 'E_BUNDLE_INVALID', input, line.line, 'Scenario bundles come from `gymrecipe tasks build`.')
        }
      }
      await out.writeLines(exported)
    }
    return out.lines
  })
  return {input, output: output || null, dryRun, tasks}
}
