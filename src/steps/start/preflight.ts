/** Before the script runs: the recipe's service, its ports free, the container it may replace; and the dry run's plan. */
import {promises as fsp} from 'node:fs'
import path from 'node:path'
import {ExitCode, GymError, usageError} from '../../errors.js'
import {describeService, type ServiceDescription} from '../../ladder/index.js'
import {resolveRecipe} from '../../recipe/target.js'
import type {RecipeTarget} from '../../recipe/types.js'
import {type ContainerState, inspectContainer} from '../../runtime/container.js'
import {dockerTarget, OWNERSHIP_LABEL, tryDocker} from '../../runtime/docker.js'
import {pathExists} from '../../runtime/fs.js'
import {portAcceptsConnections} from '../../runtime/net.js'
import {scriptEnvironment} from '../../runtime/recipe-env.js'
import type {BuilderChoice} from '../../runtime/docker-builder.js'
import type {StartOptions, StartReport} from './types.js'

export const NO_WAIT_ENV = 'NEMO_GYM_START_NO_WAIT'
export const LOG_LINES = 200

export const short = (id: string | null | undefined) => (id ?? '').replace(/^sha256:/, '').slice(0, 12)

/** The promise's value, or undefined after ms; the timer never outlives the race (it would keep the CLI alive). */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([promise, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))])
  } finally {
    clearTimeout(timer)
  }
}

export function stateText(c: ContainerState | undefined): string {
  if (!c) return 'removed'
  if (c.running) return c.restarting ? 'restarting' : 'running'
  if (c.status === 'created') return 'created, never started'
  return `${c.status} (exit code ${c.exitCode}${c.oomKilled ? ', OOM-killed' : ''})`
}

/** Resolve the recipe and what its service should look like. */
export async function readStartInputs(o: StartOptions): Promise<{target: RecipeTarget; desc: ServiceDescription; scriptPath: string; scriptEnv: Record<string, string>}> {
  const target = await resolveRecipe(o.relaxRoot, o.recipe)
  if (!target.files.start) {
    throw new GymError(`no start_<recipe>_gym.sh in ${target.dir}`, {code: 'E_NO_START_SCRIPT', exit: ExitCode.usage, hint: `Generate the recipe with \`gymrecipe new ${o.recipe}\`.`})
  }
  const scriptPath = path.join(target.dir, target.files.start)
  if (!(await fsp.stat(scriptPath).catch(() => undefined))?.isFile()) {
    throw new GymError(`${scriptPath} does not exist`, {code: 'E_NO_START_SCRIPT', exit: ExitCode.usage, hint: `Generate the recipe with \`gymrecipe new ${o.recipe}\`.`, location: {file: scriptPath}})
  }
  const scriptEnv = await scriptEnvironment(target.dir, o.env)
  const desc = await describeService(target, scriptEnv)
  if (!desc.container) {
    throw usageError(`cannot tell which container ${target.files.start} creates (no recipe.yaml, no CONTAINER=... or --name in the script)`, 'Record the recipe with `gymrecipe new`, or set CONTAINER=<name> in the start script.', {file: scriptPath})
  }
  if (!desc.gymHost) {
    throw usageError('GYM_HOST is empty', `Set GYM_HOST in ${path.join(target.dir, 'env.sh')} (or the environment): a bare IP of this host reachable from every Relax worker.`, {file: path.join(target.dir, 'env.sh'), field: 'GYM_HOST'})
  }
  if (desc.gatewayPort === undefined) {
    throw usageError('the Gateway port is unknown', 'Set NEMO_GYM_GATEWAY_PORT in env.sh.', {file: path.join(target.dir, 'env.sh'), field: 'NEMO_GYM_GATEWAY_PORT'})
  }
  return {target, desc, scriptPath, scriptEnv}
}

export function foreignContainer(desc: ServiceDescription, c: ContainerState): GymError {
  return new GymError(`Refusing to replace ${c.name} (${short(c.id)}, ${stateText(c)}): ${OWNERSHIP_LABEL}=${c.owner ?? '<unset>'}, expected ${desc.recipe}`, {
    code: 'E_FOREIGN_CONTAINER',
    exit: ExitCode.precondition,
    hint: `That container is not this recipe's; it was left untouched. Stop it if it is yours, or give the recipe another service.container name.`,
    details: {container: {name: c.name, id: c.id, owner: c.owner ?? null, state: stateText(c)}},
  })
}

export function portInUse(port: number, label: string, host: string): GymError {
  return new GymError(`Port ${port} (${label}) is already in use on ${host}`, {
    code: 'E_PORT_IN_USE',
    exit: ExitCode.precondition,
    hint: `Find what holds it (ss -ltnp 'sport = :${port}'), stop it, or move the recipe: ${label === 'private Ray GCS' ? 'gymrecipe new <recipe> --update --gcs-port <port>' : 'gymrecipe new <recipe> --update --port-base <port>'}.`,
    details: {port, label, host},
  })
}

/** Every port of the recipe must be free before a fresh container binds them. */
export async function checkPorts(desc: ServiceDescription, gymHost: string): Promise<void> {
  const hosts = [...new Set(['127.0.0.1', gymHost])]
  const busy = await Promise.all(desc.ports.map(async (p) => {
    for (const host of hosts) if (await portAcceptsConnections(host, p.port)) return {...p, host}
    return undefined
  }))
  const first = busy.find(Boolean)
  if (first) throw portInUse(first.port, first.label, first.host)
}

export async function dryRunPlan(o: StartOptions, target: RecipeTarget, desc: ServiceDescription, scriptPath: string, gatewayUrl: string, timeoutS: number, builder: BuilderChoice): Promise<StartReport> {
  const docker = await tryDocker(dockerTarget(o.env))
  const existing = docker ? await inspectContainer(docker, desc.container!) : undefined
  const action = !docker
    ? 'unknown: the Docker daemon is not reachable (start would stop with exit 3)'
    : !existing
      ? `build ${desc.imageTag}, create ${desc.container}, wait up to ${timeoutS}s for ${gatewayUrl}/readyz`
      : existing.owner === desc.recipe
        ? `build ${desc.imageTag}, replace ${desc.container} (${short(existing.id)}, ${stateText(existing)}), wait up to ${timeoutS}s for ${gatewayUrl}/readyz`
        : `refuse: ${desc.container} carries ${OWNERSHIP_LABEL}=${existing.owner ?? '<unset>'} (exit 3, nothing touched)`
  return {
    recipe: target.id,
    dir: target.dir,
    dryRun: true,
    script: {path: scriptPath, command: ['bash', scriptPath], exitCode: null},
    container: {name: desc.container!, id: existing?.id ?? null, image: existing?.imageRef ?? null, imageId: existing?.imageId ?? null, state: existing ? stateText(existing) : 'absent', replaced: null},
    gatewayUrl: gatewayUrl,
    dockerBuilder: builder.builder,
    readiness: null,
    plan: {
      existing: existing ? {id: existing.id, owner: existing.owner ?? null, state: stateText(existing)} : null,
      action,
      wouldExit: !docker || (existing && existing.owner !== desc.recipe) ? ExitCode.precondition : ExitCode.ok,
      envShSourced: await pathExists(path.join(target.dir, 'env.sh')),
      ports: desc.ports,
      env: {...builder.env, [NO_WAIT_ENV]: '1', NEMO_GYM_IMAGE: desc.imageTag ?? '', GYM_HOST: desc.gymHost ?? '', NEMO_GYM_GATEWAY_PORT: String(desc.gatewayPort)},
      then: 'climb the ladder: static → data → service',
    },
    ladder: null,
  }
}
