/**
 * The judges and simulators of a recipe's graph, against what gymrecipe adds for them: which are
 * refused (the policy as its own judge, a server no config defines), which are served by an added
 * model server or by endpoint fields gymrecipe sets, and the deployment variables those read.
 */
import type {GymAgent, GymGraph} from './gym-config.js'
import {type AddedEndpoint, type AddedModelServer, endpointVariables} from './gym-config/model-servers.js'
import {type SecondModel, secondModels} from './gym-config/second-models.js'
import {ExitCode, GymError} from '../errors.js'

/** A deployment variable the start line reads, where, and its fallback (null: required). */
export interface DeploymentVariable {
  name: string
  fallback: string | null
  at: string
}

/**
 * A judge or simulator that is the policy model grades (or plays the user for) the model being
 * trained: refused unless the user says so. One that names a server no loaded config defines
 * cannot start.
 */
export function checkSecondModels(graph: GymGraph, agent: GymAgent, policyServes: string[], added: AddedModelServer[], endpoints: AddedEndpoint[]): SecondModel[] {
  const models = secondModels(graph, agent)
  const where = (m: SecondModel) => `${m.owner}.${m.key}`
  const open = models.filter((m) => !servedByAdded(m, added) && !servedByEndpoint(m, endpoints))
  const undefinedServer = open.find((m) => m.enabled && !m.defined)
  if (undefinedServer?.server === '???') {
    throw new GymError(`${where(undefinedServer)} is left ??? in the config: the ${undefinedServer.role}'s model server must be named`, {
      code: 'E_SECOND_MODEL',
      exit: ExitCode.usage,
      hint: `Add a config that sets ${undefinedServer.key}.name to a model server it defines (with --gym-config), e.g. one based on responses_api_models/openai_model/configs/openai_model.yaml.`,
      details: {second_models: models},
    })
  }
  if (undefinedServer) {
    throw new GymError(`${where(undefinedServer)} names model server ${undefinedServer.server}, which no loaded config defines: the ${undefinedServer.role} cannot be reached and the service cannot start`, {
      code: 'E_SECOND_MODEL',
      exit: ExitCode.usage,
      hint: `Add the config that defines ${undefinedServer.server} (e.g. --gym-config responses_api_models/openai_model/configs/openai_model.yaml, with the ${undefinedServer.role}'s endpoint in it), or point ${undefinedServer.key} at a model server the configs define.`,
      details: {second_models: models},
    })
  }
  const policy = open.find((m) => m.enabled && m.policy && m.role !== 'model' && !policyServes.includes(m.role))
  if (policy) {
    throw new GymError(`${where(policy)} is the policy model${policy.server ? '' : ' (through ${policy_…})'}: under Relax that is the model being trained, so it would serve as its own ${policy.role}`, {
      code: 'E_POLICY_AS_SECOND_MODEL',
      exit: ExitCode.usage,
      hint: `Pass --second-model ${policy.role} to give it a model server of its own (its endpoint set in env.sh), point ${policy.key} at one a config defines (added with --gym-config), or pass --policy-serves ${policy.role} if the model being trained is meant to be its own ${policy.role}.`,
      details: {second_models: models},
    })
  }
  return models
}

/** A flat judge or simulator whose endpoint fields gymrecipe sets. */
export function servedByEndpoint(m: SecondModel, endpoints: AddedEndpoint[]): boolean {
  return m.server === null && endpoints.some((e) => e.owner === m.owner && e.role === m.role)
}

/** The variables a flat endpoint's fields read: its base URL and model name are required. */
export function flatEndpointReferences(endpoint: AddedEndpoint): DeploymentVariable[] {
  const vars = endpointVariables(endpoint.env_prefix)
  const read = Object.entries(endpoint.overrides)
  return [vars.baseUrl, vars.model, vars.apiKey].flatMap((name) => {
    const at = read.find(([, value]) => value.includes(`\${oc.env:${name}`))
    return at ? [{name, fallback: name === vars.apiKey ? 'EMPTY' : null, at: at[0]}] : []
  })
}

/** A judge or simulator now served by a server gymrecipe adds: named by it, or pointed at it. */
export function servedByAdded(m: SecondModel, added: AddedModelServer[]): boolean {
  return added.some((server) => server.name === m.server || server.binds.some((path) => path.startsWith(`${m.owner}.`) && path.endsWith(`.${m.key}.name`)))
}

/** The deployment variables an added model server reads its endpoint from. */
export function endpointReferences(server: AddedModelServer): DeploymentVariable[] {
  const vars = endpointVariables(server.env_prefix)
  const at = `${server.name}.responses_api_models.${server.type}`
  return [
    {name: vars.baseUrl, fallback: null, at},
    {name: vars.model, fallback: null, at},
    {name: vars.apiKey, fallback: 'EMPTY', at},
  ]
}
