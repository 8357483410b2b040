/**
 * The Ray emulators (test/fixtures/ray): a fake Ray Jobs REST server on 127.0.0.1 (OS-chosen port)
 * that behaves like Ray 2.58's dashboard, and the `ray` CLI a generated training script finds
 * first on PATH: Ray 2.58's real CLI where it is installed (recorded by real-bin/ray), else the
 * fake CLI (bin/ray).
 *
 *   const ray = await startFakeRay({stateDir})
 *   await runCli([...], {env: {...ray.env(), RAY_DASHBOARD_ADDRESS: ray.url}})
 *   await ray.stop()            // SIGTERM by pid; the server stops its jobs' process groups;
 *                               // a state dir the helper created is removed
 *
 * GYMRECIPE_REQUIRE_REAL_RAY=1 (CI) makes a missing real CLI an error instead of a fall-back.
 */
import {execa, execaSync, type ResultPromise} from 'execa'
import {randomBytes} from 'node:crypto'
import {mkdtemp, readFile, rm} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
export const RAY_FIXTURE_DIR = path.resolve(here, '..', 'fixtures', 'ray')
export const FAKE_RAY_BIN_DIR = path.join(RAY_FIXTURE_DIR, 'bin')
export const REAL_RAY_BIN_DIR = path.join(RAY_FIXTURE_DIR, 'real-bin')
/** The Ray release the server emulates and the real CLI the tests drive it with. */
export const RAY_VERSION = '2.58.0'

let realRayFound: {path: string} | {problem: string} | undefined

/** The real `ray` executable on PATH when it is Ray 2.58, else undefined (or an error under GYMRECIPE_REQUIRE_REAL_RAY=1). */
export function realRay(): string | undefined {
  if (!realRayFound) {
    const dirs = (process.env.PATH ?? '').split(path.delimiter).filter((d) => d && !d.startsWith(RAY_FIXTURE_DIR))
    try {
      const which = execaSync('sh', ['-c', 'command -v ray'], {env: {...process.env, PATH: dirs.join(path.delimiter)}, reject: false})
      const found = which.stdout.trim()
      if (!found) throw new Error('no `ray` on PATH (pip install ray==2.58.0 aiohttp)')
      const version = execaSync(found, ['--version'], {reject: false, timeout: 60_000})
      if (!version.stdout.includes(`version ${RAY_VERSION}`)) throw new Error(`${found} is not Ray ${RAY_VERSION}: ${version.stdout || version.stderr}`)
      realRayFound = {path: found}
    } catch (error) {
      realRayFound = {problem: (error as Error).message}
    }
  }
  if ('path' in realRayFound) return realRayFound.path
  if (process.env.GYMRECIPE_REQUIRE_REAL_RAY === '1') throw new Error(`GYMRECIPE_REQUIRE_REAL_RAY=1 but the real Ray CLI is missing: ${realRayFound.problem}`)
  return undefined
}
const SERVER = path.join(RAY_FIXTURE_DIR, 'server.py')

export interface FakeRayNode {
  node_id: string
  node_ip?: string
  is_head?: boolean
  alive?: boolean
  /** A network namespace (created by the test) the node's tasks run in. */
  netns?: string
}

export interface FakeRayOptions {
  stateDir?: string
  nodes?: FakeRayNode[]
  /** `name=value` headers every request must carry (a proxy's own header, as RAY_JOB_HEADERS sends). */
  requireHeaders?: string[]
  /** Ray token auth (RAY_AUTH_MODE=token on the cluster) with this token. */
  authToken?: string
  /** Websocket log tails of running jobs die without a close frame after this long. */
  dropTailAfterS?: number
  /** A PENDING job fails instead of starting. */
  pendingFail?: 'timeout' | 'unschedulable'
  /** The CLI the scripts run: the real one where installed (default), or the fake one. */
  cli?: 'real' | 'fake'
  pendingS?: number
  stopGraceS?: number
  /** Extra environment of the server, inherited by every job (like a raylet's environment). */
  env?: Record<string, string>
}

export interface FakeRay {
  url: string
  port: number
  pid: number
  stateDir: string
  /** JSON-lines log of every `ray` CLI invocation made with env() */
  callLog: string
  /** Which `ray` CLI env() puts first on PATH. */
  cli: 'real' | 'fake'
  /** PATH with the fake `ray` first, plus FAKE_RAY_CALL_LOG. */
  env(basePath?: string): Record<string, string>
  /** Every REST request the server saw (method, path, submission_id, status, header names). */
  requests(): Promise<Array<Record<string, any>>>
  /** Every fake `ray` CLI invocation. */
  cliCalls(): Promise<Array<{argv: string[]; cwd: string}>>
  output(): string
  stop(): Promise<void>
}

export function randomNodeId(): string {
  return randomBytes(28).toString('hex')
}

async function readJsonLines(file: string): Promise<any[]> {
  try {
    return (await readFile(file, 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line))
  } catch (error: any) {
    if (error?.code === 'ENOENT') return []
    throw error
  }
}

/** Start the fake Ray Jobs server on 127.0.0.1 with an OS-chosen port. */
export async function startFakeRay(options: FakeRayOptions = {}): Promise<FakeRay> {
  const ownStateDir = options.stateDir === undefined
  const stateDir = options.stateDir ?? (await mkdtemp(path.join(os.tmpdir(), 'gr-fake-ray-')))
  const args = [SERVER, '--host', '127.0.0.1', '--port', '0', '--state-dir', stateDir]
  if (options.nodes) args.push('--nodes-json', JSON.stringify(options.nodes))
  for (const header of options.requireHeaders ?? []) args.push('--require-header', header)
  if (options.pendingS !== undefined) args.push('--pending-s', String(options.pendingS))
  if (options.stopGraceS !== undefined) args.push('--stop-grace-s', String(options.stopGraceS))
  if (options.authToken !== undefined) args.push('--auth-token', options.authToken)
  if (options.dropTailAfterS !== undefined) args.push('--drop-tail-after-s', String(options.dropTailAfterS))
  if (options.pendingFail !== undefined) args.push('--pending-fail', options.pendingFail)
  const real = options.cli === 'fake' ? undefined : realRay()
  if (options.cli === 'real' && !real) throw new Error(`the real Ray ${RAY_VERSION} CLI is not installed (pip install ray==${RAY_VERSION} aiohttp)`)
  // A cluster's processes do not inherit the submitter's environment: start from a minimal one.
  const child: ResultPromise = execa('python3', args, {
    reject: false,
    extendEnv: false,
    env: {PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', LANG: 'C.UTF-8', PYTHONUNBUFFERED: '1', ...options.env},
    all: true,
    buffer: false,
  })
  let output = ''
  let done = false
  const exited = child.then(() => {
    done = true
  })
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`fake Ray server did not start:\n${output}`)), 20_000)
    child.all?.on('data', (chunk: Buffer) => {
      output += chunk.toString()
      const match = /FAKE_RAY_LISTENING (\S+)/.exec(output)
      if (match) {
        clearTimeout(timer)
        resolve(match[1])
      }
    })
    void exited.then(() => {
      clearTimeout(timer)
      reject(new Error(`fake Ray server exited:\n${output}`))
    })
  })
  const callLog = path.join(stateDir, 'cli-calls.jsonl')
  return {
    url,
    port: Number(new URL(url).port),
    pid: child.pid!,
    stateDir,
    callLog,
    cli: real ? 'real' : 'fake',
    env(basePath = process.env.PATH ?? '/usr/bin:/bin'): Record<string, string> {
      if (real) return {PATH: `${REAL_RAY_BIN_DIR}${path.delimiter}${basePath}`, FAKE_RAY_CALL_LOG: callLog, GYMRECIPE_REAL_RAY: real}
      return {PATH: `${FAKE_RAY_BIN_DIR}${path.delimiter}${basePath}`, FAKE_RAY_CALL_LOG: callLog}
    },
    requests: () => readJsonLines(path.join(stateDir, 'requests.jsonl')),
    cliCalls: () => readJsonLines(callLog),
    output: () => output,
    async stop() {
      if (!done && child.pid) {
        process.kill(child.pid, 'SIGTERM')
        const timer = setTimeout(() => {
          if (!done && child.pid) process.kill(child.pid, 'SIGKILL')
        }, 10_000)
        await exited
        clearTimeout(timer)
      }
      // A state dir this helper created goes with the server (a caller's own dir is left alone).
      if (ownStateDir) await rm(stateDir, {recursive: true, force: true})
    },
  }
}

/** Poll until `predicate` holds (or throw after timeoutMs). */
export async function waitFor<T>(probe: () => Promise<T>, predicate: (value: T) => boolean, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: T | undefined
  while (Date.now() < deadline) {
    try {
      last = await probe()
      if (predicate(last)) return last
    } catch {
      // not yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`)
}
