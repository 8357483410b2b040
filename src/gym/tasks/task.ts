import {FieldError, type JsonKind, type JsonObject, jsonKind, setMember, valueKind} from '../../json/index.js'

/**
 * The Gym task rules shared by build, export and ingest (the plugin's GymTask):
 * `responses_create_params` is a required object, `agent_ref` an object or
 * null, everything else passes through unchanged.
 */

/** Keys export adds to a task; a task must not bring its own. */
export const MANAGED_TASK_FIELDS = ['_dd_provenance', '_dd_scenario_id', '_ng_rollout_index', '_ng_task_index']

/** The kind of a task member, or undefined when absent; works on parsed and on raw tasks alike. */
export type MemberKind = (key: string) => JsonKind | undefined

export function kindsOfValue(task: JsonObject): MemberKind {
  return (key) => (Object.hasOwn(task, key) ? valueKind(task[key]) : undefined)
}

export function kindsOfRaw(members: Map<string, string>): MemberKind {
  return (key) => {
    const raw = members.get(key)
    return raw === undefined ? undefined : jsonKind(raw)
  }
}

/** Check a task against the GymTask rules; `kindOf` is undefined when the task is not an object. */
export function checkGymTask(kindOf: MemberKind | undefined, field: string): void {
  if (!kindOf) throw new FieldError(field, 'must be a JSON object (a Gym task)')
  const managed = MANAGED_TASK_FIELDS.filter((key) => kindOf(key) !== undefined)
  if (managed.length > 0) throw new FieldError(field, `Gym task contains plugin-managed fields: ${managed.join(', ')}`)
  const params = kindOf('responses_create_params')
  if (params === undefined) throw new FieldError(`${field}.responses_create_params`, 'is required')
  if (params !== 'object') throw new FieldError(`${field}.responses_create_params`, 'must be a JSON object')
  const agentRef = kindOf('agent_ref')
  if (agentRef !== undefined && agentRef !== 'null' && agentRef !== 'object') throw new FieldError(`${field}.agent_ref`, 'must be a JSON object or null')
}

/**
 * The task as the plugin dumps it for hashing and export: top-level null
 * members dropped (nested nulls kept), `responses_create_params` and
 * `agent_ref` first, other members in their original order.
 */
export function dumpTask(task: JsonObject): JsonObject {
  const dumped: JsonObject = {}
  for (const key of taskKeyOrder(Object.keys(task))) {
    if (task[key] !== null) setMember(dumped, key, task[key])
  }
  return dumped
}

const DECLARED_FIELDS = ['responses_create_params', 'agent_ref']

/** The plugin's member order: declared fields first, extras as they came. */
export function taskKeyOrder(keys: string[]): string[] {
  return [...DECLARED_FIELDS.filter((key) => keys.includes(key)), ...keys.filter((key) => !DECLARED_FIELDS.includes(key))]
}
