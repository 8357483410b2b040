import Docker from 'dockerode'

import {codeOf, GymError, messageOf, ExitCode} from '../errors.js'

/** The label every gymrecipe-managed Gym container carries; the value is the recipe id. */
export const OWNERSHIP_LABEL = 'ai.relax.recipe'

export interface DockerTarget {
  /** Unix socket path, from DOCKER_HOST=unix://... or the default socket. */
  socketPath: string
  /** A DOCKER_HOST gymrecipe does not use (tcp://, ssh://): the daemon must be local. */
  unsupportedHost?: string
}

export function dockerTarget(env: NodeJS.ProcessEnv = process.env): DockerTarget {
  const host = env.DOCKER_HOST
  if (host && host.startsWith('unix://')) return {socketPath: host.slice('unix://'.length)}
  if (host) return {socketPath: '/var/run/docker.sock', unsupportedHost: host}
  return {socketPath: '/var/run/docker.sock'}
}

/** Why a DOCKER_HOST is not used, for messages. */
export function unsupportedHostMessage(host: string): string {
  return `DOCKER_HOST=${host.replace(/\/\/[^@/]*@/, '//<redacted>@')} is not supported: gymrecipe needs the local daemon on a unix socket (containers bind-mount this machine's paths)`
}

export function dockerClient(target: DockerTarget = dockerTarget()): Docker {
  return new Docker({socketPath: target.socketPath})
}

export const dockerUnreachableHint =
  'Start the Docker daemon (e.g. `sudo systemctl start docker`), or set DOCKER_HOST=unix:///path/to/docker.sock, and check with `gymrecipe doctor`.'

/** Ping the daemon; throws a precondition GymError (exit 3) when it cannot be reached. */
export async function requireDocker(target: DockerTarget = dockerTarget()): Promise<Docker> {
  if (target.unsupportedHost) {
    throw new GymError(unsupportedHostMessage(target.unsupportedHost), {code: 'E_DOCKER_HOST', exit: ExitCode.precondition, hint: 'Unset DOCKER_HOST or set it to unix:///path/to/docker.sock of this machine.'})
  }
  const docker = dockerClient(target)
  try {
    await docker.ping()
  } catch (error) {
    throw new GymError(`Docker daemon is not reachable at ${target.socketPath} (${codeOf(error) ?? messageOf(error) ?? 'no answer'})`, {
      code: 'E_DOCKER_UNREACHABLE',
      exit: ExitCode.precondition,
      hint: dockerUnreachableHint,
    })
  }
  return docker
}

/** Like requireDocker but returns undefined instead of throwing. */
export async function tryDocker(target: DockerTarget = dockerTarget()): Promise<Docker | undefined> {
  try {
    return await requireDocker(target)
  } catch {
    return undefined
  }
}
