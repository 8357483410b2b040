import {FieldError, isPlainRecord, type JsonObject, setMember} from '../json.js'

/**
 * The Gym task rules shared by build, export and ingest (the plugin's GymTask):
 * `responses_create_params` is a required object, `agent_ref` an object or
 * null, everything else passes through unchanged.
 */

/** Keys export adds to a task; a task must not bring its own. */
export const MANAGED_TASK_FIELDS = ['_dd_provenance', '_dd_scenario_id', '_ng_rollout_index', '_ng_task_index']

/** Check the shape of a task, from JSON.parse or parseJson (only shapes are checked). */
export function checkGymTask(task: unknown, field: string): asserts task is Record<string, unknown> {
  if (!isPlainRecord(task)) throw new FieldError(field, 'must be a JSON object (a Gym task)')
  const managed = MANAGED_TASK_FIELDS.filter((key) => Object.hasOwn(task, key))
  if (managed.length > 0) throw new FieldError(field, `Gym task contains plugin-managed fields: ${managed.join(', ')}`)
  if (!Object.hasOwn(task, 'responses_create_params')) throw new FieldError(`${field}.responses_create_params`, 'is required')
  if (!isPlainRecord(task.responses_create_params)) throw new FieldError(`${field}.responses_create_params`, 'must be a JSON object')
  if (Object.hasOwn(task, 'agent_ref') && task.agent_ref !== null && !isPlainRecord(task.agent_ref)) {
    throw new FieldError(`${field}.agent_ref`, 'must be a JSON object or null')
  }
}

/**
 * The task as the plugin dumps it for hashing and export: top-level null
 * members dropped (nested nulls kept), `responses_create_params` and
 * `agent_ref` first, other members in their original order.
 */
export function dumpTask(task: JsonObject): JsonObject {
  const dumped: JsonObject = {}
  const keys = ['responses_create_params', 'agent_ref', ...Object.keys(task)]
  for (const key of new Set(keys)) {
    if (Object.hasOwn(task, key) && task[key] !== null) setMember(dumped, key, task[key])
  }
  return dumped
}
