/**
 * Model servers a graph calls besides the policy: judges, user simulators, retrieval models.
 * Under Relax the policy model is the Gateway — the model being trained — so a judge or simulator
 * that names `policy_model` (or interpolates `${policy_base_url}`) silently grades or plays the
 * user with the model under training. Found by shape, never by server name: any
 * `{type: responses_api_models, name: …}` reference other than the agent's own `model_server`,
 * and flat `<role>_base_url` / `<role>_model` values.
 */
import type {GymAgent, GymGraph, GymServer} from './types.js'
import {resourcesServerOf} from './graph.js'
import {RELAX_GATEWAY_MODEL} from './relax-policy.js'

export type SecondModelRole = 'judge' | 'simulator' | 'model'

export interface SecondModel {
  role: SecondModelRole
  /** The server instance whose config names it. */
  owner: string
  /** Where inside the owner's implementation fields, dotted (e.g. judge_model_server). */
  key: string
  /** The model server it names; for flat values, the policy reference they interpolate (or null). */
  server: string | null
  /** It resolves to the policy model: under Relax, the model being trained. */
  policy: boolean
  /** False when a sibling switch turns it off (should_use_judge: false, use_judge: false). */
  enabled: boolean
  /** Whether a loaded config defines the server it names (always true for the policy). */
  defined: boolean
}

export const POLICY_MODEL = 'policy_model'
const OFF_SWITCHES = ['should_use_judge', 'use_judge', 'use_llm_judge', 'enable_judge']
const FLAT_POLICY = /\$\{\s*(policy_base_url|policy_model_name|policy_api_key)\s*\}/
/** The part of a flat endpoint value's key after its role (judge_base_url → base_url). */
export const ENDPOINT_PART = /_(base_url|model|model_name|api_key)$/

function roleOf(key: string): SecondModelRole {
  const last = key.split('.').at(-1) ?? key
  if (/judge|genrm|grader|reward_model|rubric/i.test(last)) return 'judge'
  if (/simulat|user_model|^user/i.test(last)) return 'simulator'
  return 'model'
}

function isModelRef(value: unknown): value is {type: string; name: string} {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && (value as {type?: unknown}).type === 'responses_api_models' && typeof (value as {name?: unknown}).name === 'string'
}

function switchedOff(fields: Record<string, unknown>): boolean {
  return OFF_SWITCHES.some((k) => fields[k] === false)
}

function collect(server: GymServer, graph: GymGraph, skipKey: string | null): SecondModel[] {
  const found: SecondModel[] = []
  const defined = new Set(graph.models.map((m) => m.id))
  // Under Relax, a copy of policy_model (`_copy: policy_model`) is the Gateway too: the model being trained.
  const gatewayCopies = new Set(graph.models.filter((m) => m.implementation === RELAX_GATEWAY_MODEL).map((m) => m.id))
  const off = switchedOff(server.fields)
  const walk = (value: unknown, key: string): void => {
    if (isModelRef(value)) {
      if (key === skipKey) return
      const policy = value.name === POLICY_MODEL || gatewayCopies.has(value.name)
      found.push({role: roleOf(key), owner: server.id, key, server: value.name, policy, enabled: !off, defined: policy || defined.has(value.name)})
      return
    }
    if (typeof value === 'string') {
      const last = key.split('.').at(-1) ?? key
      const part = last.match(ENDPOINT_PART)?.[1]
      // One entry per role: its base_url, model and api_key name one endpoint (the key alone names none).
      if (part && part !== 'api_key' && FLAT_POLICY.test(value) && !found.some((f) => f.key.replace(ENDPOINT_PART, '') === key.replace(ENDPOINT_PART, ''))) {
        found.push({role: roleOf(last.replace(ENDPOINT_PART, '')), owner: server.id, key, server: null, policy: true, enabled: !off, defined: true})
      }
      return
    }
    if (Array.isArray(value)) value.forEach((item, i) => walk(item, `${key}.${i}`))
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, key ? `${key}.${k}` : k)
  }
  walk(server.fields, '')
  return found
}

/** The second models of the agent and its resources server. */
export function secondModels(graph: GymGraph, agent: GymAgent): SecondModel[] {
  const resource = resourcesServerOf(graph, agent)
  return [...collect(agent, graph, 'model_server'), ...(resource ? collect(resource, graph, null) : [])]
}
