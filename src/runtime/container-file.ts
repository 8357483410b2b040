/**
 * Read a file from inside a running, recipe-owned container through the Docker exec API
 * (`cat -- <path>`), e.g. a Gym task row that only exists in the image.
 */
import type Docker from 'dockerode'
import {setTimeout as sleep} from 'node:timers/promises'
import {PassThrough} from 'node:stream'

import {ExitCode, GymError, messageOf, numberField} from '../errors.js'
import {type DockerTarget, OWNERSHIP_LABEL, dockerTarget, requireDocker, tryDocker} from './docker.js'
import {containerLogChunks} from './container.js'

const MAX_BYTES = 256 * 1024 * 1024

export async function readContainerFile(
  containerName: string,
  filePath: string,
  options: {recipeId: string; target?: DockerTarget; timeoutMs?: number},
): Promise<string> {
  const docker = await requireDocker(options.target ?? dockerTarget())
  const container = docker.getContainer(containerName)
  let info: Docker.ContainerInspectInfo
  try {
    info = await container.inspect()
  } catch (error) {
    throw new GymError(`container ${containerName} not found (${numberField(error, 'statusCode') ?? messageOf(error)})`, {
      code: 'E_CONTAINER_MISSING',
      exit: ExitCode.precondition,
      hint: 'Start the Gym service first (gymrecipe start), or pass --gym-root pointing at the pinned Gym checkout.',
    })
  }
  const owner = info?.Config?.Labels?.[OWNERSHIP_LABEL]
  if (owner !== options.recipeId) {
    throw new GymError(`container ${containerName} is not this recipe's (${OWNERSHIP_LABEL}=${owner ?? '<unset>'}, expected ${options.recipeId})`, {
      code: 'E_FOREIGN_CONTAINER',
      exit: ExitCode.precondition,
      hint: 'gymrecipe only reads from containers labelled for the recipe; restart the service with its start script.',
    })
  }
  if (!info?.State?.Running) {
    throw new GymError(`container ${containerName} is not running (${info?.State?.Status ?? 'unknown state'})`, {
      code: 'E_CONTAINER_NOT_RUNNING',
      exit: ExitCode.precondition,
      hint: 'Start the Gym service first (gymrecipe start), or pass --gym-root.',
    })
  }
  const exec = await container.exec({Cmd: ['cat', '--', filePath], AttachStdout: true, AttachStderr: true, Tty: false})
  const stream = await exec.start({hijack: true, stdin: false})
  const out: Buffer[] = []
  const err: Buffer[] = []
  let size = 0
  const stdout = new PassThrough()
  const stderr = new PassThrough()
  stdout.on('data', (chunk: Buffer) => {
    size += chunk.length
    if (size <= MAX_BYTES) out.push(chunk)
  })
  stderr.on('data', (chunk: Buffer) => err.push(chunk))
  docker.modem.demuxStream(stream, stdout, stderr)
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      stream.destroy()
      reject(new GymError(`reading ${filePath} from ${containerName} timed out`, {code: 'E_CONTAINER_EXEC', exit: ExitCode.failure}))
    }, options.timeoutMs ?? 60_000)
    stream.on('end', () => {
      clearTimeout(timer)
      resolve()
    })
    stream.on('close', () => {
      clearTimeout(timer)
      resolve()
    })
    stream.on('error', (error: Error) => {
      clearTimeout(timer)
      reject(error)
    })
  })
  let result = await exec.inspect()
  for (let i = 0; i < 40 && result.Running; i++) {
    await sleep(50)
    result = await exec.inspect()
  }
  if (result.ExitCode !== 0) {
    throw new GymError(`cannot read ${filePath} in ${containerName}: ${Buffer.concat(err).toString('utf8').trim() || `exit ${result.ExitCode}`}`, {
      code: 'E_CONTAINER_FILE',
      exit: ExitCode.failure,
      hint: 'The path is relative to the Gym root inside the image (/opt/nemo-gym); check trial.task.file in recipe.yaml.',
    })
  }
  if (size > MAX_BYTES) {
    throw new GymError(`${filePath} in ${containerName} is larger than ${MAX_BYTES} bytes`, {code: 'E_CONTAINER_FILE', exit: ExitCode.failure})
  }
  return Buffer.concat(out).toString('utf8')
}

/**
 * The log lines a recipe-owned container wrote since a moment (stdout and stderr as Docker
 * stored them), at most `maxLines` of the latest. Undefined when there is no daemon, no such
 * container, or it is not this recipe's: a reader of logs never touches another's container.
 */
export async function recipeContainerLogLines(
  containerName: string,
  options: {recipeId: string; sinceSeconds: number; maxLines?: number; target?: DockerTarget},
): Promise<string[] | undefined> {
  const docker = await tryDocker(options.target ?? dockerTarget())
  if (!docker) return undefined
  let info: Docker.ContainerInspectInfo
  try {
    info = await docker.getContainer(containerName).inspect()
  } catch {
    return undefined
  }
  if (info?.Config?.Labels?.[OWNERSHIP_LABEL] !== options.recipeId) return undefined
  const maxLines = options.maxLines ?? 5000
  const chunks = await containerLogChunks(docker, info.Id, {sinceSeconds: options.sinceSeconds, tail: maxLines})
  const lines = chunks.map((c) => c.text).join('').split('\n')
  if (lines.at(-1) === '') lines.pop()
  return lines.slice(-maxLines)
}
