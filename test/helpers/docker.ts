/**
 * Docker helpers for tests that run against the real Docker Engine.
 *
 * Rules (DESIGN.md §5): containers run with host networking, services bind
 * 127.0.0.1, and everything a test creates carries a label so it can be removed
 * by that label afterwards. Nothing is ever pruned or selected by name pattern.
 */
import {execa} from 'execa'
import {randomBytes} from 'node:crypto'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
export const repoRoot = path.resolve(here, '..', '..')

/** Tag of the debootstrap-based base image (override with GYMRECIPE_TEST_BASE_IMAGE). */
export const BASE_IMAGE = process.env.GYMRECIPE_TEST_BASE_IMAGE ?? 'gymrecipe-test-base:bookworm'
export const BASE_IMAGE_LABEL = 'io.gymrecipe.test-base'
export const BUILD_BASE_IMAGE_SCRIPT = path.join(repoRoot, 'test', 'fixtures', 'images', 'build-base-image.sh')
/** Label key that every test-created container/image carries (value: a per-run unique id). */
export const TEST_LABEL_KEY = 'io.gymrecipe.test'

export interface DockerResult {
  exitCode: number
  stdout: string
  stderr: string
}

/** Run the docker CLI; never throws for a non-zero exit (check exitCode). */
export async function docker(args: string[], options: {timeoutMs?: number; input?: string} = {}): Promise<DockerResult> {
  const result = await execa('docker', args, {
    reject: false,
    timeout: options.timeoutMs ?? 120_000,
    input: options.input,
    env: {DOCKER_CLI_HINTS: 'false'},
  })
  return {exitCode: result.exitCode ?? -1, stdout: String(result.stdout ?? ''), stderr: String(result.stderr ?? '')}
}

/** Like docker() but throws with stderr when the command fails. */
export async function dockerOk(args: string[], options: {timeoutMs?: number; input?: string} = {}): Promise<string> {
  const result = await docker(args, options)
  if (result.exitCode !== 0) {
    throw new Error(`docker ${args.join(' ')} failed (exit ${result.exitCode}): ${result.stderr.trim() || result.stdout.trim()}`)
  }
  return result.stdout
}

let availability: Promise<string | undefined> | undefined

/** Why Docker cannot be used here, or undefined when the daemon answers. Cached per process. */
export function dockerUnavailableReason(): Promise<string | undefined> {
  availability ??= (async () => {
    try {
      const result = await docker(['version', '--format', '{{.Server.Version}}'], {timeoutMs: 15_000})
      if (result.exitCode === 0 && result.stdout.trim()) return undefined
      return `docker daemon not reachable: ${result.stderr.trim() || `exit ${result.exitCode}`}`
    } catch (error: any) {
      return `docker CLI not runnable: ${error?.shortMessage ?? error?.message ?? String(error)}`
    }
  })()
  return availability
}

/** True when the docker CLI works and the daemon answers. */
export async function dockerAvailable(): Promise<boolean> {
  return (await dockerUnavailableReason()) === undefined
}

let baseImage: Promise<string> | undefined

/**
 * The base image is shared by every Docker-backed test (and images built FROM it
 * inherit its `io.gymrecipe.test-base` label): never remove it, and never call
 * removeByLabel() with that label — use a uniqueTestLabel() on what you create.
 *
 * Make sure the base image exists (builds it with build-base-image.sh: debootstrap
 * + docker import, ~40 s the first time, instant afterwards). Returns the tag.
 */
export function ensureBaseImage(options: {image?: string; timeoutMs?: number} = {}): Promise<string> {
  const image = options.image ?? BASE_IMAGE
  if (image === BASE_IMAGE && baseImage) return baseImage
  const run = (async () => {
    const result = await execa('bash', [BUILD_BASE_IMAGE_SCRIPT], {
      reject: false,
      timeout: options.timeoutMs ?? 600_000,
      env: {GYMRECIPE_TEST_BASE_IMAGE: image},
    })
    if (result.exitCode !== 0) {
      throw new Error(`build-base-image.sh failed (exit ${result.exitCode}):\n${String(result.stderr)}\n${String(result.stdout)}`)
    }
    return image
  })()
  if (image === BASE_IMAGE) {
    baseImage = run.catch((error) => {
      baseImage = undefined
      throw error
    })
    return baseImage
  }
  return run
}

/** A fresh `key=value` label unique to this test run. */
export function uniqueTestLabel(purpose: string): string {
  return `${TEST_LABEL_KEY}=${purpose}-${process.pid}-${randomBytes(4).toString('hex')}`
}

/**
 * Remove every container, then every image, that carries `label` (`key` or
 * `key=value`). Selection is by label only; nothing is pruned.
 */
export async function removeByLabel(label: string): Promise<{containers: string[]; images: string[]}> {
  const filter = `label=${label}`
  const containers = (await dockerOk(['ps', '-a', '-q', '--no-trunc', '--filter', filter])).split('\n').filter(Boolean)
  if (containers.length > 0) await dockerOk(['rm', '-f', '-v', ...containers])
  const images = [...new Set((await dockerOk(['image', 'ls', '-q', '--no-trunc', '--filter', filter])).split('\n').filter(Boolean))]
  if (images.length > 0) await dockerOk(['rmi', '-f', ...images])
  return {containers, images}
}

export interface BuildOptions {
  contextDir: string
  /** Dockerfile path relative to the context (like `-f` in `docker build`). */
  dockerfile: string
  tag: string
  labels?: string[]
  buildArgs?: Record<string, string>
  timeoutMs?: number
}

/** `docker build` with labels; throws with the build output on failure. Returns the duration in ms. */
export async function buildImage(options: BuildOptions): Promise<number> {
  const args = ['build', '--network', 'host', '-f', path.join(options.contextDir, options.dockerfile), '-t', options.tag]
  for (const label of options.labels ?? []) args.push('--label', label)
  for (const [key, value] of Object.entries(options.buildArgs ?? {})) args.push('--build-arg', `${key}=${value}`)
  args.push(options.contextDir)
  const started = Date.now()
  const result = await docker(args, {timeoutMs: options.timeoutMs ?? 600_000})
  if (result.exitCode !== 0) throw new Error(`docker build failed (exit ${result.exitCode}):\n${result.stdout}\n${result.stderr}`)
  return Date.now() - started
}

/** stdout+stderr of a container (what `docker logs` shows). */
export async function containerLogs(id: string, tail?: number): Promise<string> {
  const result = await docker(['logs', ...(tail ? ['--tail', String(tail)] : []), id])
  return result.stdout + result.stderr
}

/** `docker inspect` of a container, or undefined when it does not exist. */
export async function inspectContainer(id: string): Promise<any | undefined> {
  const result = await docker(['container', 'inspect', id])
  if (result.exitCode !== 0) return undefined
  return JSON.parse(result.stdout)[0]
}

/**
 * vitest globalSetup entry (`globalSetup: ['test/helpers/docker.ts']`): builds the
 * base image once before the Docker-backed files run; without a daemon it only
 * prints a loud notice (those files then skip themselves and say why).
 */
export async function setup(): Promise<void> {
  const reason = await dockerUnavailableReason()
  if (reason) {
    // CI must never hide Docker-backed tests behind a skip.
    if (process.env.GYMRECIPE_REQUIRE_DOCKER === '1') throw new Error(`Docker is required (GYMRECIPE_REQUIRE_DOCKER=1) but unavailable: ${reason}`)
    console.error(`\n!!! Docker-backed tests will be skipped: ${reason}\n`)
    return
  }
  await ensureBaseImage()
  await ensureBuildAnchor()
}

/** Tag of the shared first layers of every fixture Gym image build (never removed by tests). */
export const BUILD_ANCHOR_IMAGE = 'gymrecipe-test-base:fixture-anchor'

/**
 * Test files build fixture Gym images in parallel and remove their own afterwards. `docker rmi`
 * also prunes untagged parent layers, including the layers every build shares before its first
 * COPY: a build that reuses them from the cache at that moment fails with "unknown parent image
 * ID". Building those shared steps once under a tag keeps them alive for every build.
 */
export async function ensureBuildAnchor(): Promise<void> {
  const dockerfile = await fs.readFile(path.join(repoRoot, 'test', 'fixtures', 'relax-checkout', 'examples', 'nemo_gym_agentic', 'service', 'Dockerfile'), 'utf8')
  const lines = dockerfile.split('\n')
  const firstCopy = lines.findIndex((l) => /^\s*(COPY|ADD|RUN)\b/.test(l))
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'gymrecipe-anchor-'))
  try {
    await fs.writeFile(path.join(dir, 'Dockerfile'), `${lines.slice(0, firstCopy).join('\n')}\n`)
    // Same build arguments as the generated scripts pass, so the cache keys match.
    await dockerOk(['build', '--network', 'none', '--build-arg', 'NEMO_GYM_COMMIT=a85670eb167ba9b48cc53a36a070eed815e6c40d', '-t', BUILD_ANCHOR_IMAGE, dir], {timeoutMs: 300_000})
  } finally {
    await fs.rm(dir, {recursive: true, force: true})
  }
}
