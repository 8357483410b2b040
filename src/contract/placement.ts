/**
 * Where the start line places each server: its host and port are Hydra overrides on the instance,
 * or on the instance it `_inherit_from`s, which is the only place the pinned Gym takes them.
 */
import type {GymGraph, GymServer, GymAgent} from './gym-config.js'
import {ExitCode, GymError} from '../errors.js'
import type {AdditionalEnvironment} from './types.js'

/**
 * The start line places every server with `++<id>.<kind>.<implementation>.port=…`; Hydra's override
 * keys take no '/', so an implementation in a nested directory (Gym after the pinned commit, e.g.
 * conversational_tool_use/simulation) cannot be placed there.
 */
export function assertPlaceable(servers: Array<GymServer | null | undefined>): void {
  const nested = servers.find((s) => s?.implementation.includes('/'))
  if (!nested) return
  throw new GymError(`${nested.id} is implemented by ${nested.kind}/${nested.implementation}, a nested directory: the gym env start line sets each server's host and port with a Hydra override, and Hydra's override keys take no '/', so this server cannot be placed`, {
    code: 'E_GYM_CONFIG',
    exit: ExitCode.usage,
    hint: 'Use a Gym checkout whose implementations sit one directory deep (the commit Relax pins has only those), or wrap this one in a directory of its own with a config of your own (--config-root).',
  })
}

/** The instance whose host and port the start line sets for this server: its own, or the one it inherits from. */
export function placedAs(server: {name: string; placed_via?: string}): string {
  return server.placed_via ?? server.name
}

/** An instance that inherits another is placed (host, port) through that source: see GymGraph.inheritedFrom. */
function placedVia(graph: GymGraph, server: GymServer): {placed_via?: string} {
  const source = graph.inheritedFrom[server.id]
  return source ? {placed_via: source} : {}
}

/** The agent and resources server as recipe.yaml records them. */
export function serverRefs(graph: GymGraph, agent: GymAgent, resource: GymServer | null): Pick<AdditionalEnvironment, 'agent' | 'resources_server'> {
  return {
    agent: {name: agent.id, type: agent.implementation, max_steps: agent.maxSteps, ...placedVia(graph, agent)},
    resources_server: resource ? {name: resource.id, implementation: resource.implementation, ...placedVia(graph, resource)} : null,
  }
}

/** Two servers inheriting one source would take their host and port from one place, and share a port. */
export function assertDistinctPlacements(servers: Array<{name: string; placed_via?: string}>): void {
  const placedBy = new Map<string, string>()
  for (const server of servers) {
    const at = placedAs(server)
    const other = placedBy.get(at)
    if (other !== undefined && other !== server.name) {
      throw new GymError(`${other} and ${server.name} both take their host and port through ${at} (each inherits it with _inherit_from), so Gym would place them on one port`, {
        code: 'E_GYM_CONFIG',
        exit: ExitCode.usage,
        hint: 'Train these environments in recipes of their own, or give one of them a config of its own that does not inherit the other\'s server.',
      })
    }
    placedBy.set(at, server.name)
  }
}
