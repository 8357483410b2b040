/**
 * What the network checks share within one run: the recipe environment (env.sh applied), the
 * Gym container (Docker Engine API), the Gateway and Relax endpoints. Computed once per run.
 */
import type Docker from 'dockerode'

import {isGymError} from '../../errors.js'
import {type ContainerState, inspectContainer} from '../../runtime/container.js'
import {dockerTarget, requireDocker} from '../../runtime/docker.js'
import {type GatewayEndpoint, relaxEndpoint, type RelaxEndpoint, trainingGateway} from '../../contract/endpoints.js'
import {once, ScratchKey, scriptEnv} from '../scratch.js'
import type {CheckContext} from '../types.js'

export async function gatewayFor(ctx: CheckContext): Promise<GatewayEndpoint | {problem: string}> {
  if (!ctx.target.contract) return {problem: 'recipe.yaml is missing: the Gateway port of the recipe is unknown'}
  return trainingGateway(ctx.target.contract, await scriptEnv(ctx))
}

export async function relaxFor(ctx: CheckContext): Promise<RelaxEndpoint | {problem: string}> {
  return relaxEndpoint(await scriptEnv(ctx))
}

export type ContainerLookup =
  | {ok: true; docker: Docker; container: ContainerState}
  | {ok: false; status: 'fail' | 'skip'; message: string; hint?: string}

const CONTAINER = new ScratchKey<Promise<ContainerLookup>>('network.container')

/** The recipe's running Gym container, owned by this recipe; or why it cannot be used. */
export function gymContainer(ctx: CheckContext): Promise<ContainerLookup> {
  return once(ctx, CONTAINER, async (): Promise<ContainerLookup> => {
    const contract = ctx.target.contract
    if (!contract) return {ok: false, status: 'fail', message: 'recipe.yaml is missing: the container name is unknown'}
    let docker: Docker
    try {
      docker = await requireDocker(dockerTarget(ctx.options.env))
    } catch (error) {
      if (isGymError(error)) return {ok: false, status: 'skip', message: error.message, hint: error.hint}
      throw error
    }
    const name = contract.service.container
    const container = await inspectContainer(docker, name)
    if (!container) return {ok: false, status: 'fail', message: `container ${name} does not exist`, hint: `Start the service first: gymrecipe start ${contract.id}`}
    if (container.owner !== contract.id) {
      return {ok: false, status: 'fail', message: `container ${name} is not this recipe's (ai.relax.recipe=${container.owner ?? '<unset>'})`, hint: 'gymrecipe never uses a container without its ownership label.'}
    }
    if (!container.running) return {ok: false, status: 'fail', message: `container ${name} is not running (${container.status})`, hint: `gymrecipe start ${contract.id}`}
    return {ok: true, docker, container}
  })
}
