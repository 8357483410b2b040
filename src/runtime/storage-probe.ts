import type Docker from 'dockerode'
import {randomBytes} from 'node:crypto'

import {OWNERSHIP_LABEL} from './docker.js'
import {removeOnInterrupt} from './interrupt.js'
import {messageOf} from '../errors.js'

/** Label of the short-lived probe containers (value: the recipe id); never the ownership label. */
export const PROBE_LABEL = 'io.gymrecipe.probe'

export interface ProbeImage {
  image: string
  /** Why this image: shown to the user, since it may not be the recipe's own. */
  why: string
}

/** Images of a shell distribution, tried first among any local image: they have coreutils. */
const SHELL_IMAGE = /^(?:[^/]+\/)*(?:busybox|alpine|debian|ubuntu|python|bash|gymrecipe-test-base)(?::|$)/

/**
 * The images to start the probe container from, best first: the recipe's NEMO_GYM_IMAGE when it
 * exists locally (nothing is pulled), else GYMRECIPE_PROBE_IMAGE, else another local image built
 * for this recipe or any gymrecipe recipe, else any local image (a shell distribution first): the
 * probe needs only `wc`, so the data can be checked before the recipe's image is built.
 */
export async function probeImageCandidates(docker: Docker, recipeImage: string | null, recipeId: string, env: NodeJS.ProcessEnv = process.env): Promise<ProbeImage[]> {
  const notBuilt = `NEMO_GYM_IMAGE ${recipeImage ?? '(unset)'} is not built here`
  if (recipeImage && (await imageExists(docker, recipeImage))) return [{image: recipeImage, why: `the recipe's NEMO_GYM_IMAGE ${recipeImage}`}]
  const requested = env.GYMRECIPE_PROBE_IMAGE
  if (requested && (await imageExists(docker, requested))) return [{image: requested, why: `GYMRECIPE_PROBE_IMAGE ${requested} (${notBuilt})`}]
  for (const label of [`${OWNERSHIP_LABEL}=${recipeId}`, OWNERSHIP_LABEL]) {
    const images: Docker.ImageInfo[] = await docker.listImages({filters: {label: [label]}})
    const tagged = images.flatMap((i) => (i.RepoTags ?? []).filter((t) => t !== '<none>:<none>'))
    if (tagged.length > 0) return [{image: tagged.sort()[0], why: `local image ${tagged.sort()[0]} labelled ${label} (${notBuilt})`}]
  }
  const all: Docker.ImageInfo[] = await docker.listImages()
  const tags = all.flatMap((i) => (i.RepoTags ?? []).filter((t) => t !== '<none>:<none>')).sort()
  const ordered = [...tags.filter((t) => SHELL_IMAGE.test(t)), ...tags.filter((t) => !SHELL_IMAGE.test(t))]
  return ordered.slice(0, 3).map((image) => ({image, why: `any local image with wc: ${image} (${notBuilt})`}))
}

async function imageExists(docker: Docker, image: string): Promise<boolean> {
  try {
    await docker.getImage(image).inspect()
    return true
  } catch {
    return false
  }
}

export type ProbeOutcome =
  | {status: 'seen'; size: number; containerId: string; output: string}
  | {status: 'not-seen'; reason: string; containerId?: string; output: string}

export interface ProbeOptions {
  image: string
  /** The file to look for; its directory is bind-mounted at the same absolute path. */
  file: string
  dir: string
  recipeId: string
  timeoutMs?: number
}

/**
 * Start a throw-away container (no network, the data directory bind-mounted read-only at the
 * same absolute path) that opens the file and prints its size with `wc -c`. The container is
 * labelled, and removed by its id whatever happens.
 */
export async function probeSharedPath(docker: Docker, o: ProbeOptions): Promise<ProbeOutcome> {
  // Named before it exists, so an interrupt while the daemon is still creating it can find its id.
  const name = `gymrecipe-probe-${o.recipeId}-${randomBytes(6).toString('hex')}`
  const progress: {creating?: Promise<unknown>} = {}
  const forget = removeOnInterrupt(async () => {
    // A create request the daemon is still serving would otherwise finish after the lookup.
    await progress.creating?.catch(() => undefined)
    await removeByName(docker, name)
  })
  try {
    return await runProbe(docker, o, name, progress)
  } finally {
    forget()
  }
}

/** Remove the probe container called name, if the daemon has it, by its id. */
async function removeByName(docker: Docker, name: string): Promise<void> {
  const [found] = await docker.listContainers({all: true, filters: {name: [`^/${name}$`]}})
  if (found) await docker.getContainer(found.Id).remove({force: true, v: true})
}

async function runProbe(docker: Docker, o: ProbeOptions, name: string, progress: {creating?: Promise<unknown>}): Promise<ProbeOutcome> {
  let container: Docker.Container | undefined
  try {
    container = await (progress.creating = docker.createContainer({
      name,
      Image: o.image,
      Entrypoint: ['wc'],
      Cmd: ['-c', '--', o.file],
      Labels: {[PROBE_LABEL]: o.recipeId},
      NetworkDisabled: true,
      HostConfig: {NetworkMode: 'none', AutoRemove: false, Mounts: [{Type: 'bind', Source: o.dir, Target: o.dir, ReadOnly: true}]},
    }))
  } catch (error) {
    return {status: 'not-seen', reason: `the daemon refused the bind mount: ${dockerMessage(error)}`, output: ''}
  }
  try {
    await container.start()
    const exit = await waitWithTimeout(container, o.timeoutMs ?? 60_000)
    const output = await logsOf(container)
    if (exit === undefined) return {status: 'not-seen', reason: `the probe container did not finish within ${(o.timeoutMs ?? 60_000) / 1000}s`, containerId: container.id, output: output.stdout + output.stderr}
    const size = Number(output.stdout.trim().split(/\s+/)[0])
    if (exit !== 0 || !Number.isFinite(size)) {
      return {status: 'not-seen', reason: `wc -c exited ${exit}: ${output.stderr.trim() || output.stdout.trim() || 'no output'}`, containerId: container.id, output: output.stdout + output.stderr}
    }
    return {status: 'seen', size, containerId: container.id, output: output.stdout.trim()}
  } catch (error) {
    return {status: 'not-seen', reason: `the probe container failed: ${dockerMessage(error)}`, containerId: container.id, output: ''}
  } finally {
    await container.remove({force: true, v: true}).catch(() => undefined)
  }
}

async function waitWithTimeout(container: Docker.Container, timeoutMs: number): Promise<number | undefined> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), timeoutMs)
  })
  try {
    const result = await Promise.race([container.wait() as Promise<{StatusCode: number}>, timeout])
    if (result === undefined) await container.kill().catch(() => undefined)
    return result?.StatusCode
  } finally {
    clearTimeout(timer)
  }
}

/** stdout and stderr of a finished container (Docker multiplexes them in 8-byte-header frames). */
async function logsOf(container: Docker.Container): Promise<{stdout: string; stderr: string}> {
  const raw = (await container.logs({stdout: true, stderr: true, follow: false})) as unknown as Buffer
  const out = {stdout: '', stderr: ''}
  let at = 0
  while (at + 8 <= raw.length) {
    const size = raw.readUInt32BE(at + 4)
    const text = raw.subarray(at + 8, at + 8 + size).toString('utf8')
    if (raw[at] === 2) out.stderr += text
    else out.stdout += text
    at += 8 + size
  }
  return out
}

function dockerMessage(error: unknown): string {
  const fields = (typeof error === 'object' && error !== null ? error : {}) as {json?: {message?: unknown}; reason?: unknown}
  const body = fields.json?.message ?? fields.reason ?? messageOf(error)
  return String(body).trim()
}
