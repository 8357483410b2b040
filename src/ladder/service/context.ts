/**
 * Shared state of one service-rung run: the recipe's environment (env.sh), the service
 * description, the Docker client and the container, each computed once per run.
 */
import type Docker from 'dockerode'

import {isGymError} from '../../errors.js'
import {type ContainerState, inspectContainer} from '../../runtime/container.js'
import {dockerTarget, requireDocker} from '../../runtime/docker.js'
import {once, ScratchKey, scriptEnv} from '../scratch.js'
import type {CheckContext} from '../types.js'
import {describeService, type ServiceDescription, serviceUrls, type ServiceUrls} from './describe.js'

const DESCRIPTION = new ScratchKey<Promise<ServiceDescription>>('service.description')
const DOCKER = new ScratchKey<Promise<DockerAccess>>('service.docker')

/** The Docker client, or the reason it cannot be used (message + hint). */
export interface DockerAccess {
  docker?: Docker
  problem?: {message: string; hint?: string}
}


export function service(ctx: CheckContext): Promise<ServiceDescription> {
  return once(ctx, DESCRIPTION, async () => describeService(ctx.target, await scriptEnv(ctx)))
}

export function dockerFor(ctx: CheckContext): Promise<DockerAccess> {
  return once(ctx, DOCKER, async () => {
    try {
      return {docker: await requireDocker(dockerTarget(ctx.options.env))}
    } catch (error) {
      if (isGymError(error)) return {problem: {message: error.message, hint: error.hint}}
      throw error
    }
  })
}

export interface RunningService {
  docker: Docker
  desc: ServiceDescription
  container: ContainerState
  urls: ServiceUrls
}

/**
 * The service container when it exists and runs, with its URLs; otherwise why not. Later checks
 * use this to avoid repeating the container check's failure as their own.
 */
export async function runningService(ctx: CheckContext): Promise<{ok: RunningService} | {problem: {message: string; hint?: string}}> {
  const desc = await service(ctx)
  const {docker, problem} = await dockerFor(ctx)
  if (!docker) return {problem: problem!}
  if (!desc.container) return {problem: {message: 'the service container name is unknown (no recipe.yaml, and the start script names none)'}}
  const container = await inspectContainer(docker, desc.container)
  if (!container?.running) return {problem: {message: `container ${desc.container} is not running`, hint: `gymrecipe start ${desc.recipe}`}}
  const urls = serviceUrls(desc, container.env)
  if (!urls) return {problem: {message: 'the Gym host or Gateway port is unknown (GYM_HOST / NEMO_GYM_GATEWAY_PORT are unset in env.sh and in the container)', hint: 'Set GYM_HOST in env.sh.'}}
  return {ok: {docker, desc, container, urls}}
}
