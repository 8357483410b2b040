import type {GymAgent, GymGraph, GymProblem, GymServer, GymServerKind} from './types.js'
import {readDatasets} from './datasets.js'
import {gymConfigError} from './errors.js'
import type {Origin} from './provenance.js'
import {forEachLeaf, hasKey, isMapping, isMissing, type Mapping, type Path, toDotted, toPointer} from './tree.js'
import {verbatim} from '../../json-document.js'

/** The resources server an agent names, when the loaded configs define it. */
export function resourcesServerOf(graph: Pick<GymGraph, 'resourcesServers'>, agent: Pick<GymAgent, 'resourcesServer'> | undefined): GymServer | null {
  return (agent?.resourcesServer ? graph.resourcesServers.find((s) => s.id === agent.resourcesServer) : undefined) ?? null
}

export const SERVER_KINDS: readonly GymServerKind[] = ['resources_servers', 'responses_api_agents', 'responses_api_models']

/**
 * Top-level keys that are settings, not server instances (`NEMO_GYM_RESERVED_TOP_LEVEL_KEYS` in
 * nemo_gym/global_config.py, pinned commit plus later additions, which cannot be server ids either).
 */
export const RESERVED_TOP_LEVEL_KEYS: ReadonlySet<string> = new Set([
  'config_paths', 'entrypoint', 'default_host', 'head_server', 'disallowed_ports', 'head_server_deps',
  'python_version', 'pip_install_verbose', 'use_absolute_ip', 'uv_pip_set_python', 'skip_venv_if_present',
  'hf_token', 'ray_head_node_address', 'port_range_low', 'port_range_high', 'dry_run',
  'model_endpoint_readiness_timeout_seconds', 'allow_openai_version_skew', 'uv_cache_dir', 'uv_venv_dir',
  'results_dir', 'cache_dir', '_inherit_from', '_copy', 'nemo_gym_log_dir', 'verbose', 'json', 'query',
  'observability_enabled', 'model_call_capture_dir', 'token_id_capture', 'component_name',
  'skip_verification', 'skip_verification_reward', 'telemetry', 'allow_unsupported_pairing',
  'environment_server_name', 'environment_server_routes', 'environment_routing_mode', 'tasksets',
  'rollout_input', 'agent_bindings',
])

const KIND_LABEL: Record<GymServerKind, string> = {
  resources_servers: 'resources server',
  responses_api_agents: 'agent',
  responses_api_models: 'model server',
}

export interface ExtractedGraph {
  resourcesServers: GymServer[]
  agents: GymAgent[]
  models: GymServer[]
  problems: GymProblem[]
}

type Locate = (path: Path) => Origin

/**
 * Every non-reserved top-level key holding exactly one server-type key, itself holding exactly
 * one implementation key, is a server instance. Names come only from those YAML keys.
 */
export function extractGraph(config: Mapping, locate: Locate): ExtractedGraph {
  const graph: ExtractedGraph = {resourcesServers: [], agents: [], models: [], problems: []}
  const report = (severity: GymProblem['severity'], message: string, path: Path) =>
    graph.problems.push({severity, message, pointer: toPointer(path), ...locate(path)})

  for (const [id, block] of Object.entries(config)) {
    if (RESERVED_TOP_LEVEL_KEYS.has(id) || !isMapping(block)) continue
    const server = readServer(id, block, locate)
    if (!server) continue
    if (server.kind === 'resources_servers') graph.resourcesServers.push(server)
    else if (server.kind === 'responses_api_models') graph.models.push(server)
    else graph.agents.push(readAgent(server, report, locate, graph.problems))
  }
  checkServerRefs(graph, report)
  return graph
}

function readServer(id: string, block: Mapping, locate: Locate): GymServer | null {
  const kinds = SERVER_KINDS.filter((kind) => hasKey(block, kind))
  if (kinds.length === 0) return null
  const shapeError = (message: string, path: Path) =>
    gymConfigError('server-shape', message, {...locate(path), pointer: toPointer(path)}, 'A server instance is <id>: {<server type>: {<implementation>: {entrypoint: ..., ...}}}.')
  if (kinds.length > 1) {
    throw shapeError(`server instance '${id}' has ${kinds.length} server-type keys (${kinds.join(', ')}); it must have exactly one`, [id, kinds[1]])
  }
  const kind = kinds[0]
  const typeBlock = block[kind]
  const implementations = isMapping(typeBlock) ? Object.keys(typeBlock) : []
  if (!isMapping(typeBlock) || implementations.length !== 1) {
    const found = implementations.length === 0 ? 'none' : implementations.join(', ')
    throw shapeError(`'${id}.${kind}' must hold exactly one implementation key (found ${found})`, [id, kind])
  }
  const implementation = implementations[0]
  const fields = typeBlock[implementation]
  if (isMissing(fields)) return {id, kind, implementation, fields: {}}
  if (!isMapping(fields)) {
    throw shapeError(`'${id}.${kind}.${implementation}' must be a mapping of the server's fields, got ${JSON.stringify(fields)}`, [id, kind, implementation])
  }
  // The server's own fields, printed by `inspect --json` with the keys Gym gave them.
  return {id, kind, implementation, fields: verbatim(fields)}
}

function readAgent(server: GymServer, report: Report, locate: Locate, problems: GymProblem[]): GymAgent {
  const base: Path = [server.id, server.kind, server.implementation]
  const {datasets, problems: datasetProblems} = readDatasets(server.fields.datasets, [...base, 'datasets'], locate)
  problems.push(...datasetProblems)
  return {
    ...server,
    kind: 'responses_api_agents',
    resourcesServer: refName(server.fields.resources_server, 'resources_servers', [...base, 'resources_server'], report),
    modelServer: refName(server.fields.model_server, 'responses_api_models', [...base, 'model_server'], report),
    maxSteps: readMaxSteps(server.fields.max_steps, [...base, 'max_steps'], report),
    datasets,
  }
}

type Report = (severity: GymProblem['severity'], message: string, path: Path) => void

/** The `name` of a `{type, name}` reference; null when absent or `???` (reported with the other unset values). */
function refName(value: unknown, expectedType: GymServerKind, path: Path, report: Report): string | null {
  if (value === undefined || value === null || isMissing(value)) return null
  if (!isMapping(value)) {
    report('error', `${path[path.length - 1]} must be a reference {type: ${expectedType}, name: <instance id>}`, path)
    return null
  }
  if (value.type !== expectedType && !isMissing(value.type)) {
    report('error', `${path[path.length - 1]}.type must be ${expectedType}, got ${JSON.stringify(value.type ?? null)}`, [...path, 'type'])
  }
  if (isMissing(value.name)) return null
  if (typeof value.name !== 'string' || value.name === '') {
    report('error', `${path[path.length - 1]}.name must be a server instance id, got ${JSON.stringify(value.name ?? null)}`, [...path, 'name'])
    return null
  }
  return value.name
}

function readMaxSteps(value: unknown, path: Path, report: Report): number | null {
  if (value === undefined || value === null || isMissing(value)) return null
  if (typeof value === 'number' && Number.isInteger(value)) return value
  report('error', `max_steps must be an integer, got ${JSON.stringify(value)}`, path)
  return null
}

/**
 * Every `{type: <server type>, name: ...}` field of a server must name an instance of that type,
 * as Gym checks before starting anything. A missing model server is only a warning: the policy
 * model usually comes from a separate model config (`--model-type`).
 */
function checkServerRefs(graph: ExtractedGraph, report: Report): void {
  const all: GymServer[] = [...graph.resourcesServers, ...graph.agents, ...graph.models]
  const byId = new Map(all.map((server) => [server.id, server]))
  for (const server of all) {
    for (const [field, value] of Object.entries(server.fields)) {
      if (!isMapping(value) || !SERVER_KINDS.includes(value.type as GymServerKind)) continue
      if (typeof value.name !== 'string' || isMissing(value.name)) continue
      const path: Path = [server.id, server.kind, server.implementation, field, 'name']
      const expected = value.type as GymServerKind
      const target = byId.get(value.name)
      const who = `${KIND_LABEL[server.kind]} '${server.id}'`
      if (target && target.kind !== expected) {
        report('error', `${who}: ${field} names '${value.name}', which is a ${KIND_LABEL[target.kind]}, not a ${KIND_LABEL[expected]}`, path)
      } else if (!target && expected === 'responses_api_models') {
        report('warning', `${who}: ${field} names model server '${value.name}', which no loaded config defines; add a model config (e.g. responses_api_models/<type>/configs/<type>.yaml) before starting Gym`, path)
      } else if (!target) {
        const known = all.filter((candidate) => candidate.kind === expected).map((candidate) => candidate.id)
        report('error', `${who}: ${field} names ${KIND_LABEL[expected]} '${value.name}', which no loaded config defines (defined: ${known.join(', ') || 'none'})`, path)
      }
    }
  }
}

/** Every `???` left after merging and directives: Gym refuses to start until each is set. */
export function missingValueProblems(config: Mapping, locate: Locate): GymProblem[] {
  const problems: GymProblem[] = []
  forEachLeaf(config, (value, path) => {
    if (!isMissing(value)) return
    const key = toDotted(path)
    problems.push({
      severity: 'warning',
      kind: 'unset-value',
      message: `${key} is ??? (mandatory value not set); set it with ++${key}=<value> or in a config merged after this one`,
      key,
      pointer: toPointer(path),
      ...locate(path),
    })
  })
  return problems
}
