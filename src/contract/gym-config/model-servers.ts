/**
 * Model servers gymrecipe adds to a graph for a judge or simulator that has none: a config that
 * names a server no loaded config defines (or leaves it ???), or one that would be the policy —
 * under Relax the model being trained — when the user asks for a server of its own instead.
 *
 * The server is an instance of one of the checkout's own model implementations, defined on the
 * `gym env start` command line (`++<name>.responses_api_models.<type>.<field>=…`, every field of
 * the implementation's config), its endpoint read from the container's environment
 * (`${oc.env:<PREFIX>_BASE_URL}` …): deployment values env.sh names, never copied into a file.
 */
import type {GymServer} from './types.js'
import {ENDPOINT_PART, type SecondModel} from './second-models.js'
import type {ModelServerField} from '../types.js'

export const MODEL_SERVER_TYPES = ['vllm_model', 'openai_model'] as const
export type ModelServerType = (typeof MODEL_SERVER_TYPES)[number]
export const DEFAULT_MODEL_SERVER_TYPE: ModelServerType = 'vllm_model'

export interface AddedModelServer {
  /** Instance id: the server the config names, or `<role>_model` when it named the policy or ???. */
  name: string
  type: string
  role: SecondModel['role']
  /** Variables holding its endpoint: <PREFIX>_BASE_URL, <PREFIX>_MODEL_NAME, <PREFIX>_API_KEY. */
  env_prefix: string
  /** The implementation's fields, endpoint values replaced by ${oc.env:…} references. */
  fields: Record<string, ModelServerField>
  /** Dotted override paths (…<key>.name) pointed at this server; empty when the config already names it. */
  binds: string[]
}

/** A server name that is also one Hydra key (no dots) and a shell-safe word. */
const INSTANCE_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/
const POLICY_REFERENCE = /\$\{\s*policy_(base_url|api_key|model_name)\s*\}/g

export function envPrefixOf(name: string): string {
  return name.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_+|_+$/g, '').toUpperCase()
}

export function endpointVariables(prefix: string): {baseUrl: string; model: string; apiKey: string} {
  return {baseUrl: `${prefix}_BASE_URL`, model: `${prefix}_MODEL_NAME`, apiKey: `${prefix}_API_KEY`}
}

/** The second models that cannot run as the config stands, unless gymrecipe adds a server. */
export function needsServer(m: SecondModel, serveRoles: readonly string[]): boolean {
  if (!m.enabled) return false
  if (!m.defined || m.server === '???') return m.server !== null
  return m.policy && m.server !== null && serveRoles.includes(m.role)
}

/** A flat judge or simulator (endpoint fields reading ${policy_…}) the user moved off the policy. */
export function needsEndpoint(m: SecondModel, serveRoles: readonly string[]): boolean {
  return m.enabled && m.server === null && m.policy && serveRoles.includes(m.role)
}

/**
 * The server to add for one second model. `template` is the checkout's config of the model
 * implementation (its one instance); `ownerPath` is `<owner>.<kind>.<implementation>`.
 * Returns a reason string when it cannot be expressed as command-line overrides.
 */
export function addedModelServer(m: SecondModel, ownerPath: string, template: GymServer, taken: ReadonlySet<string>): AddedModelServer | string {
  const named = m.defined || m.server === null || m.server === '???' ? null : m.server
  const name = named ?? freeName(`${m.role}_model`, taken)
  if (!INSTANCE_NAME.test(name)) return `model server name "${name}" cannot be defined on the command line (letters, digits, _ and - only)`
  const prefix = envPrefixOf(name)
  const vars = endpointVariables(prefix)
  const fields: AddedModelServer['fields'] = {}
  for (const [key, value] of Object.entries(template.fields)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) return `${template.implementation} field "${key}" cannot be set on the command line`
    if (typeof value === 'string') {
      fields[key] = policyToEnv(value, vars)
    } else if (value === null || typeof value === 'number' || typeof value === 'boolean') {
      fields[key] = value
    } else if (isEmpty(value)) {
      fields[key] = Array.isArray(value) ? [] : {}
    } else {
      return `${template.implementation} field "${key}" holds a nested value, which gymrecipe does not define on the command line`
    }
  }
  const wired = Object.values(fields).some((v) => typeof v === 'string' && v.includes(vars.baseUrl))
  if (!wired) return `${template.implementation}'s config takes its endpoint from no \${policy_base_url}, so gymrecipe cannot point it at ${vars.baseUrl}`
  return {name, type: template.implementation, role: m.role, env_prefix: prefix, fields, binds: named ? [] : [`${ownerPath}.${m.key}.name`]}
}

export interface AddedEndpoint {
  role: SecondModel['role']
  owner: string
  env_prefix: string
  overrides: Record<string, string>
}

/**
 * The endpoint fields to set for a flat second model moved off the policy: every field beside
 * `m.key` with the same stem (judge_base_url, judge_model, judge_api_key) whose value reads
 * `${policy_…}`, rewritten to read <PREFIX>_BASE_URL, _MODEL_NAME and _API_KEY instead.
 * `ownerPath` is `<owner>.<kind>.<implementation>`; `fields` the owner's merged fields.
 */
export function flatEndpoint(m: SecondModel, ownerPath: string, fields: Record<string, unknown>, taken: ReadonlySet<string>): AddedEndpoint | string {
  const parts = m.key.split('.')
  const stem = parts.pop()!.replace(ENDPOINT_PART, '')
  let parent: unknown = fields
  for (const part of parts) parent = parent && typeof parent === 'object' ? (parent as Record<string, unknown>)[part] : undefined
  if (!parent || typeof parent !== 'object') return `${m.key} is not a field gymrecipe can set`
  const prefix = freeName(envPrefixOf(stem), taken)
  const vars = endpointVariables(prefix)
  const overrides: Record<string, string> = {}
  for (const [key, value] of Object.entries(parent as Record<string, unknown>)) {
    if (!key.startsWith(`${stem}_`) || !ENDPOINT_PART.test(key) || typeof value !== 'string' || !value.match(POLICY_REFERENCE)) continue
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,63}$/.test(key)) return `field "${key}" cannot be set on the command line`
    overrides[[ownerPath, ...parts, key].join('.')] = policyToEnv(value, vars)
  }
  if (!Object.values(overrides).some((v) => v.includes(vars.baseUrl))) return `${m.key} takes its endpoint from no \${policy_base_url} field, so gymrecipe cannot point it at ${vars.baseUrl}`
  return {role: m.role, owner: m.owner, env_prefix: prefix, overrides}
}

/** The `gym env start` overrides that point a flat second model at its own endpoint. */
export function endpointOverrides(endpoint: Pick<AddedEndpoint, 'overrides'>): string[] {
  return Object.entries(endpoint.overrides).map(([path, value]) => `++${path}=${hydraValue(value)}`)
}

/** A value reading the policy's endpoint (`${policy_base_url}` …) rewritten to read these variables instead. */
function policyToEnv(value: string, vars: ReturnType<typeof endpointVariables>): string {
  return value.replace(POLICY_REFERENCE, (_all, part: string) =>
    part === 'base_url' ? `\${oc.env:${vars.baseUrl}}` : part === 'model_name' ? `\${oc.env:${vars.model}}` : `\${oc.env:${vars.apiKey},EMPTY}`,
  )
}

/** `wanted`, or `wanted_2`, `wanted_3` … the first that is not taken. */
export function freeName(wanted: string, taken: ReadonlySet<string>): string {
  if (!taken.has(wanted)) return wanted
  for (let i = 2; ; i++) if (!taken.has(`${wanted}_${i}`)) return `${wanted}_${i}`
}

function isEmpty(value: unknown): boolean {
  return Array.isArray(value) ? value.length === 0 : typeof value === 'object' && value !== null && Object.keys(value).length === 0
}

/** One Hydra override value: strings quoted (interpolations inside quotes stay interpolations). */
export function hydraValue(value: ModelServerField): string {
  if (value === null) return 'null'
  if (typeof value === 'string') return `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`
  if (typeof value === 'number' || typeof value === 'boolean') return String(value)
  return Array.isArray(value) ? '[]' : '{}'
}

/** The `gym env start` overrides that define the server and point its callers at it (host and port aside). */
export function modelServerOverrides(server: Pick<AddedModelServer, 'name' | 'type' | 'fields' | 'binds'>): string[] {
  const at = `${server.name}.responses_api_models.${server.type}`
  return [...Object.entries(server.fields).map(([key, value]) => `++${at}.${key}=${hydraValue(value)}`), ...server.binds.map((path) => `++${path}=${server.name}`)]
}
