/**
 * Environments trained in the same run as the first: each agent named with a repeated --agent
 * becomes one more Gateway registration, with the names its config gives it. What the config does
 * not say (its Gateway config name, cleanup routes and the fields its grader reads) comes from the
 * built-in recipe of the same environment implementation when there is one, else from the
 * checkout's example rows; admission limits from the recipe's own Gateway section.
 */
import type {GymGraph} from './gym-config.js'
import {chooseAgent, definedResourcesServer, type ExampleRowsSummary, gatewayConfigName, verifierFieldsFrom} from './from-gym.js'
import {assertDistinctPlacements, assertPlaceable, serverRefs} from './placement.js'
import {ExitCode, GymError, usageError} from '../errors.js'
import type {AdditionalEnvironment, RecipeContract} from './types.js'

export interface AdditionalEnvironmentInput {
  agent: string
  /** Fields and shape of the checkout's example rows for this agent, when it has any. */
  examples?: ExampleRowsSummary
  /** A built-in recipe for the same environment implementation. */
  known?: RecipeContract
  /** Verifier (and trial) taken from the environment's own example rollouts, when no built-in knows it. */
  own?: {verifier: RecipeContract['verifier']; trial?: RecipeContract['trial']}
}

export function additionalEnvironment(graph: GymGraph, input: AdditionalEnvironmentInput, base: RecipeContract): AdditionalEnvironment {
  const agent = chooseAgent(graph, input.agent)
  const resource = definedResourcesServer(graph, agent)
  assertPlaceable([agent, resource])
  const environment = resource?.id ?? agent.id
  const known = input.known
  const limits = known?.gateway ?? base.gateway
  const fields = known ? known.data.verifier_fields : input.examples && input.examples.fields.length > 0 ? verifierFieldsFrom(input.examples) : null
  if (!fields) {
    throw new GymError(`the fields ${environment}'s grader reads from each row are unknown: the Gym checkout has no example rows for agent ${agent.id}`, {
      code: 'E_VERIFIER_FIELDS_REQUIRED',
      exit: ExitCode.usage,
      hint: 'Give that environment example rows in the checkout (resources_servers/<name>/data/example.jsonl), or train it in a recipe of its own.',
    })
  }
  return {
    environment,
    gateway_config: known ? known.gym.gateway_config : gatewayConfigName(environment),
    ...serverRefs(graph, agent, resource),
    max_concurrency: base.gateway.max_concurrency,
    queue_capacity: base.gateway.queue_capacity,
    max_deadline_s: limits.max_deadline_s,
    readiness: known ? known.gateway.readiness : resource ? ['agent', 'resource'] : ['agent'],
    cleanup: known ? known.gateway.cleanup : null,
    verifier_fields: fields,
    ...verifierAndTrial(input, resource?.implementation ?? null),
  }
}

/** Environments, Gateway configs and agents must each be distinct across the recipe. */
export function assertDistinct(environments: Array<Pick<AdditionalEnvironment, 'environment' | 'gateway_config' | 'agent' | 'resources_server'>>): void {
  for (const key of ['environment', 'gateway_config'] as const) {
    const seen = new Set<string>()
    for (const e of environments) {
      if (seen.has(e[key])) throw usageError(`two environments of the recipe share ${key === 'environment' ? 'the environment' : 'the Gateway config'} ${e[key]}`, 'Each --agent must start an environment of its own (the Gateway rejects a repeated environment/config pair).', {field: '--agent'})
      seen.add(e[key])
    }
  }
  const agents = new Set<string>()
  for (const e of environments) {
    if (agents.has(e.agent.name)) throw usageError(`agent ${e.agent.name} is named twice`, 'Name each agent once with --agent.', {field: '--agent'})
    agents.add(e.agent.name)
  }
  assertDistinctPlacements(environments.flatMap((e) => [e.agent, ...(e.resources_server ? [e.resources_server] : [])]))
}

/**
 * Only a direct verifier runs per environment (a golden one needs the trial machinery of its own),
 * with its own resources server's Python.
 */
function verifierAndTrial(input: AdditionalEnvironmentInput, implementation: string | null): Pick<AdditionalEnvironment, 'verifier' | 'trial'> {
  const source = input.known ?? input.own
  if (!source) return {}
  const verifier = source.verifier.kind === 'direct' && implementation ? {...source.verifier, python: `/opt/nemo-gym/resources_servers/${implementation}/.venv/bin/python`} : undefined
  return {...(verifier ? {verifier} : {}), ...(source.trial ? {trial: source.trial} : {})}
}
