/**
 * The service container through the Docker Engine API (dockerode): inspect by name, ownership,
 * demultiplexed logs, removal by id, the image a tag points to. Nothing here selects containers
 * by pattern; every mutation takes an exact id.
 */
import type Docker from 'dockerode'
import {PassThrough, type Readable} from 'node:stream'

import {OWNERSHIP_LABEL} from './docker.js'
import {numberField} from '../errors.js'

export interface ContainerState {
  id: string
  name: string
  /** The image reference it was created with (e.g. a tag). */
  imageRef: string
  /** The image id (sha256:...) it was created from. */
  imageId: string
  labels: Record<string, string>
  owner: string | undefined
  status: string
  running: boolean
  restarting: boolean
  restartCount: number
  exitCode: number
  oomKilled: boolean
  startedAt: string
  finishedAt: string
  created: string
  tty: boolean
  env: Record<string, string>
}

function envMap(list: string[] | undefined | null): Record<string, string> {
  const env: Record<string, string> = {}
  for (const entry of list ?? []) {
    const eq = entry.indexOf('=')
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1)
  }
  return env
}

function stateOf(info: Docker.ContainerInspectInfo): ContainerState {
  const labels = (info.Config?.Labels ?? {}) as Record<string, string>
  return {
    id: info.Id,
    name: info.Name.replace(/^\//, ''),
    imageRef: info.Config?.Image ?? '',
    imageId: info.Image,
    labels,
    owner: labels[OWNERSHIP_LABEL],
    status: info.State.Status,
    running: info.State.Running,
    restarting: info.State.Restarting,
    restartCount: info.RestartCount ?? 0,
    exitCode: info.State.ExitCode,
    oomKilled: info.State.OOMKilled,
    startedAt: info.State.StartedAt,
    finishedAt: info.State.FinishedAt,
    created: info.Created,
    tty: Boolean(info.Config?.Tty),
    env: envMap(info.Config?.Env),
  }
}

/** Inspect a container by name or id; undefined when it does not exist. */
export async function inspectContainer(docker: Docker, nameOrId: string): Promise<ContainerState | undefined> {
  try {
    return stateOf(await docker.getContainer(nameOrId).inspect())
  } catch (error) {
    if (numberField(error, 'statusCode') === 404) return undefined
    throw error
  }
}

/** The image id a tag currently points to; undefined when the tag does not exist. */
export async function imageIdOf(docker: Docker, ref: string): Promise<string | undefined> {
  try {
    return (await docker.getImage(ref).inspect()).Id
  } catch (error) {
    if (numberField(error, 'statusCode') === 404) return undefined
    throw error
  }
}

/** Remove one container by its exact id (force). Returns false when it was already gone. */
export async function removeContainer(docker: Docker, id: string): Promise<boolean> {
  try {
    await docker.getContainer(id).remove({force: true})
    return true
  } catch (error) {
    if (numberField(error, 'statusCode') === 404) return false
    // 409: removal already in progress (e.g. the start script's own trap): it will be gone.
    if (numberField(error, 'statusCode') === 409) return true
    throw error
  }
}

export interface LogChunk {
  stream: 'stdout' | 'stderr'
  text: string
}

/**
 * Split Docker's multiplexed log format (8-byte frame headers: stream id, 3 zero bytes,
 * big-endian length). A TTY container's logs are raw; they are returned as stdout.
 */
export function demuxLogBuffer(buffer: Buffer, tty = false): LogChunk[] {
  if (tty) return buffer.length > 0 ? [{stream: 'stdout', text: buffer.toString('utf8')}] : []
  const chunks: LogChunk[] = []
  let offset = 0
  while (offset + 8 <= buffer.length) {
    const kind = buffer[offset]
    const size = buffer.readUInt32BE(offset + 4)
    if ((kind !== 1 && kind !== 2 && kind !== 0) || buffer[offset + 1] !== 0 || buffer[offset + 2] !== 0 || buffer[offset + 3] !== 0) {
      // Not a frame header: the rest is raw output.
      chunks.push({stream: 'stdout', text: buffer.subarray(offset).toString('utf8')})
      return chunks
    }
    const body = buffer.subarray(offset + 8, offset + 8 + size)
    chunks.push({stream: kind === 2 ? 'stderr' : 'stdout', text: body.toString('utf8')})
    offset += 8 + size
  }
  return chunks
}

export interface LogOptions {
  /** Last N lines; undefined = all. */
  tail?: number
  /** Only lines after this moment (unix seconds, fractional allowed). */
  sinceSeconds?: number
  timestamps?: boolean
}

/** A container's logs so far, demultiplexed, in order. */
export async function containerLogChunks(docker: Docker, id: string, options: LogOptions = {}): Promise<LogChunk[]> {
  const container = docker.getContainer(id)
  const info = await container.inspect()
  const query: Docker.ContainerLogsOptions & {follow: false} = {stdout: true, stderr: true, follow: false, timestamps: Boolean(options.timestamps)}
  if (options.tail !== undefined) query.tail = options.tail
  if (options.sinceSeconds !== undefined) query.since = options.sinceSeconds.toFixed(9)
  const raw: unknown = await container.logs(query)
  const buffer = Buffer.isBuffer(raw) ? raw : Buffer.from(String(raw ?? ''))
  return demuxLogBuffer(buffer, Boolean(info.Config?.Tty))
}

/** The last `tail` lines of a container's logs (stdout and stderr interleaved as Docker stored them). */
export async function containerLogTail(docker: Docker, id: string, tail = 200): Promise<string[]> {
  const chunks = await containerLogChunks(docker, id, {tail})
  const lines = chunks.map((c) => c.text).join('').split('\n')
  if (lines.at(-1) === '') lines.pop()
  return lines.slice(-tail)
}

export interface FollowHandle {
  /** Resolves when the log stream ends (the container stopped) or stop() was called. */
  done: Promise<void>
  stop(): void
}

/**
 * Follow a container's logs, writing stdout and stderr to the given sinks as they arrive.
 */
export async function followContainerLogs(
  docker: Docker,
  id: string,
  sinks: {stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream},
  options: {tail?: number} = {},
): Promise<FollowHandle> {
  const container = docker.getContainer(id)
  const info = await container.inspect()
  const stream = (await container.logs({stdout: true, stderr: true, follow: true, ...(options.tail === undefined ? {} : {tail: options.tail})})) as unknown as Readable
  const out = new PassThrough()
  const err = new PassThrough()
  out.pipe(sinks.stdout, {end: false})
  err.pipe(sinks.stderr, {end: false})
  if (info.Config?.Tty) stream.pipe(out)
  else docker.modem.demuxStream(stream, out, err)
  const done = new Promise<void>((resolve) => {
    const finish = () => {
      out.end()
      err.end()
      resolve()
    }
    stream.once('end', finish)
    stream.once('close', finish)
    stream.once('error', finish)
  })
  return {
    done,
    stop() {
      stream.destroy()
    },
  }
}

/** Run a command in a running container through the exec API; stdout/stderr demultiplexed. */
export async function execInContainer(
  docker: Docker,
  id: string,
  cmd: string[],
  options: {timeoutMs?: number; env?: string[]} = {},
): Promise<{exitCode: number | null; stdout: string; stderr: string; timedOut: boolean}> {
  const container = docker.getContainer(id)
  const exec = await container.exec({Cmd: cmd, AttachStdout: true, AttachStderr: true, Env: options.env})
  const stream = (await exec.start({hijack: true, stdin: false})) as unknown as Readable
  let stdout = ''
  let stderr = ''
  const out = new PassThrough()
  const err = new PassThrough()
  out.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')))
  err.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')))
  docker.modem.demuxStream(stream, out, err)
  let timedOut = false
  await new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      timedOut = true
      stream.destroy()
      resolve()
    }, options.timeoutMs ?? 120_000)
    const finish = () => {
      clearTimeout(timer)
      resolve()
    }
    stream.once('end', finish)
    stream.once('close', finish)
    stream.once('error', finish)
  })
  const inspected = await exec.inspect()
  return {exitCode: inspected.Running ? null : inspected.ExitCode, stdout, stderr, timedOut}
}
