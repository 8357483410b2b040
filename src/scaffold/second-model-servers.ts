import {loadGymGraph, type GymAgent, type GymGraph} from '../contract/gym-config.js'
import {type AddedEndpoint, type AddedModelServer, addedModelServer, DEFAULT_MODEL_SERVER_TYPE, flatEndpoint, MODEL_SERVER_TYPES, needsEndpoint, needsServer} from '../contract/gym-config/model-servers.js'
import {secondModels} from '../contract/gym-config/second-models.js'
import {ExitCode, GymError, usageError} from '../errors.js'
import {resourcesServerOf} from '../contract/gym-config/graph.js'

/** `--second-model ROLE[=TYPE]`: a judge or simulator served by a model server gymrecipe adds. */
export interface SecondModelRequest {
  role: string
  type: string
}

export function parseSecondModelFlag(value: string): SecondModelRequest {
  const m = value.match(/^(judge|simulator|model)(?:=([a-z_]+))?$/)
  if (!m) throw usageError(`--second-model ${value}: expected ROLE or ROLE=TYPE (ROLE judge, simulator or model)`, `e.g. --second-model judge or --second-model judge=openai_model; TYPE is one of ${MODEL_SERVER_TYPES.join(', ')}.`, {field: '--second-model'})
  const type = m[2] ?? DEFAULT_MODEL_SERVER_TYPE
  if (!(MODEL_SERVER_TYPES as readonly string[]).includes(type)) {
    throw usageError(`--second-model ${value}: ${type} is not a model server gymrecipe can define`, `Use one of ${MODEL_SERVER_TYPES.join(', ')}, or add your own model server config with --gym-config.`, {field: '--second-model'})
  }
  return {role: m[1], type}
}

/**
 * The model servers to add: one for every enabled judge or simulator that names a server no
 * loaded config defines (or ???), and for every one the user asked a server for instead of the
 * policy. Each is an instance of the checkout's own model implementation. `already` are those added
 * for other environments: returned with them, a judge of the same role shares its server.
 */
export async function secondModelServers(gymRoot: string, graph: GymGraph, agent: GymAgent, requests: SecondModelRequest[], already: AddedModelServer[] = []): Promise<AddedModelServer[]> {
  const resource = resourcesServerOf(graph, agent)
  const ownerPath = (owner: string) =>
    owner === agent.id ? `${agent.id}.responses_api_agents.${agent.implementation}` : `${owner}.resources_servers.${resource?.implementation ?? owner}`
  const taken = new Set([...[...graph.models, ...graph.agents, ...graph.resourcesServers].map((s) => s.id), ...already.map((a) => a.name)])
  // A judge moved off the policy for an environment shares the server one was added for before.
  const added: AddedModelServer[] = already.map((server) => ({...server, binds: [...server.binds]}))
  const templates = new Map<string, Awaited<ReturnType<typeof loadGymGraph>>['models'][number]>()
  for (const m of secondModels(graph, agent)) {
    if (!needsServer(m, requests.map((r) => r.role))) continue
    // One server per undefined name, and one per role for judges and simulators moved off the policy.
    const named = !m.defined && m.server !== '???' ? m.server : null
    const shared = named ? added.find((a) => a.name === named) : added.find((a) => a.role === m.role && a.binds.length > 0)
    if (shared) {
      if (!named) shared.binds.push(`${ownerPath(m.owner)}.${m.key}.name`)
      continue
    }
    const type = requests.find((r) => r.role === m.role)?.type ?? DEFAULT_MODEL_SERVER_TYPE
    let template = templates.get(type)
    if (!template) {
      const model = (await loadGymGraph(gymRoot, [`responses_api_models/${type}/configs/${type}.yaml`])).models.find((s) => s.implementation === type)
      if (!model) throw usageError(`responses_api_models/${type}/configs/${type}.yaml in the Gym checkout defines no ${type} server`, 'Pick another --second-model TYPE, or add your own model server config with --gym-config.')
      template = model
      templates.set(type, model)
    }
    const server = addedModelServer(m, ownerPath(m.owner), template, taken)
    if (typeof server === 'string') {
      throw new GymError(`${m.owner}.${m.key}: ${server}`, {
        code: 'E_SECOND_MODEL',
        exit: ExitCode.usage,
        hint: `Add a config that defines the ${m.role}'s model server (with --gym-config) and point ${m.key}.name at it.`,
      })
    }
    taken.add(server.name)
    added.push(server)
  }
  return added
}

/**
 * The endpoints to set for judges and simulators whose config takes the policy's endpoint as plain
 * fields (`judge_base_url: ${policy_base_url}` …) and that the user asked to move off the policy.
 * `already` are those set for other environments, returned with them.
 */
export function secondModelEndpoints(graph: GymGraph, agent: GymAgent, requests: SecondModelRequest[], servers: AddedModelServer[], already: AddedEndpoint[] = []): AddedEndpoint[] {
  const resource = resourcesServerOf(graph, agent)
  const owners = new Map([[agent.id, agent], ...(resource ? [[resource.id, resource] as const] : [])])
  const endpoints = [...already]
  const taken = new Set([...servers.map((s) => s.env_prefix), ...already.map((e) => e.env_prefix)])
  for (const m of secondModels(graph, agent)) {
    if (!needsEndpoint(m, requests.map((r) => r.role)) || endpoints.some((e) => e.owner === m.owner && e.role === m.role)) continue
    const owner = owners.get(m.owner)!
    const kind = owner === agent ? 'responses_api_agents' : 'resources_servers'
    const endpoint = flatEndpoint(m, `${owner.id}.${kind}.${owner.implementation}`, owner.fields, taken)
    if (typeof endpoint === 'string') {
      throw new GymError(`${m.owner}.${m.key}: ${endpoint}`, {
        code: 'E_SECOND_MODEL',
        exit: ExitCode.usage,
        hint: `Set ${m.owner}'s ${m.role} endpoint fields in a config of your own (added with --gym-config), or pass --policy-serves ${m.role}.`,
      })
    }
    taken.add(endpoint.env_prefix)
    endpoints.push(endpoint)
  }
  return endpoints
}
