/**
 * `gymrecipe logs`: the recipe's service container logs through the Docker Engine API, only
 * for a container that carries the recipe's ownership label.
 */
import {ExitCode, GymError, usageError} from '../errors.js'
import {describeService} from '../ladder/index.js'
import {resolveRecipe} from '../recipe/target.js'
import {containerLogChunks, followContainerLogs, inspectContainer, type LogChunk} from '../runtime/container.js'
import {dockerTarget, OWNERSHIP_LABEL, requireDocker} from '../runtime/docker.js'
import {scriptEnvironment} from '../runtime/recipe-env.js'

export interface LogsOptions {
  relaxRoot: string
  recipe: string
  env: NodeJS.ProcessEnv
  tail?: number
  follow: boolean
  /** Follow mode: where the streams go. */
  sinks?: {stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream}
  signal?: AbortSignal
}

export interface LogsReport {
  recipe: string
  container: {name: string; id: string; state: string}
  /** Without --follow: the log chunks in order (stream + text). */
  chunks: LogChunk[]
}

export async function recipeLogs(o: LogsOptions): Promise<LogsReport> {
  const target = await resolveRecipe(o.relaxRoot, o.recipe)
  const desc = await describeService(target, await scriptEnvironment(target.dir, o.env))
  if (!desc.container) throw usageError(`cannot tell the service container of ${o.recipe} (no recipe.yaml, and the start script names none)`)
  const docker = await requireDocker(dockerTarget(o.env))
  const c = await inspectContainer(docker, desc.container)
  if (!c) {
    throw new GymError(`no container named ${desc.container}`, {code: 'E_NO_CONTAINER', exit: ExitCode.failure, hint: `Start the service: gymrecipe start ${o.recipe}`})
  }
  if (c.owner !== desc.recipe) {
    throw new GymError(`${desc.container} is not this recipe's container: ${OWNERSHIP_LABEL}=${c.owner ?? '<unset>'}, expected ${desc.recipe}`, {
      code: 'E_FOREIGN_CONTAINER',
      exit: ExitCode.precondition,
      hint: 'gymrecipe only reads containers labelled for the recipe; use docker logs yourself if you own it.',
      details: {container: {name: c.name, id: c.id, owner: c.owner ?? null}},
    })
  }
  const container = {name: c.name, id: c.id, state: c.running ? 'running' : `${c.status} (exit code ${c.exitCode})`}
  if (!o.follow) return {recipe: o.recipe, container, chunks: await containerLogChunks(docker, c.id, {tail: o.tail})}
  const handle = await followContainerLogs(docker, c.id, o.sinks ?? {stdout: process.stdout, stderr: process.stderr}, {tail: o.tail})
  const onAbort = () => handle.stop()
  o.signal?.addEventListener('abort', onAbort, {once: true})
  try {
    await handle.done
  } finally {
    o.signal?.removeEventListener('abort', onAbort)
  }
  return {recipe: o.recipe, container, chunks: []}
}
