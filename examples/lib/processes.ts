/**
 * Process helpers shared by the examples: start a service as a child process of
 * its own, wait for the one JSON line it prints once listening, and stop it by
 * its pid (never by name). Run a gymrecipe command from this checkout's build.
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {once} from 'node:events'
import {createWriteStream} from 'node:fs'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..')
const GYMRECIPE = path.join(REPO_ROOT, 'bin', 'run.js')

export interface RunningService {
  name: string
  url: string
  pid: number
  child: ChildProcess
  /** Extra fields the service printed with its url. */
  info: Record<string, unknown>
}

/**
 * Start `node --import tsx <script> ...args` and resolve once it prints its
 * `{"url": ...}` line on stdout. Its stderr (and later stdout) go to `logFile`.
 */
export async function startService(name: string, script: string, args: string[], logFile: string, env: NodeJS.ProcessEnv = process.env): Promise<RunningService> {
  const log = createWriteStream(logFile, {flags: 'a'})
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe']})
  child.stderr!.pipe(log)
  const pid = child.pid
  if (pid === undefined) throw new Error(`${name}: could not be started`)
  return await new Promise<RunningService>((resolve, reject) => {
    let buffered = ''
    const timer = setTimeout(() => fail(new Error(`${name} printed no listening line within 30 s (log: ${logFile})`)), 30_000)
    const fail = (error: Error) => {
      clearTimeout(timer)
      child.stdout!.removeAllListeners('data')
      if (child.exitCode === null) child.kill('SIGKILL')
      reject(error)
    }
    child.once('exit', (code, signal) => fail(new Error(`${name} exited during start-up (${signal ?? `exit ${code}`}; log: ${logFile})`)))
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8')
      const newline = buffered.indexOf('\n')
      if (newline < 0) return
      clearTimeout(timer)
      child.removeAllListeners('exit')
      child.stdout!.removeAllListeners('data')
      child.stdout!.pipe(log)
      try {
        const info = JSON.parse(buffered.slice(0, newline)) as Record<string, unknown>
        if (typeof info.url !== 'string') throw new Error('no url')
        resolve({name, url: info.url, pid, child, info})
      } catch {
        fail(new Error(`${name} printed ${JSON.stringify(buffered.slice(0, newline))} instead of its {"url": ...} line`))
      }
    })
  })
}

/** SIGTERM the service by its pid and wait for it to exit; SIGKILL after `graceMs`. */
export async function stopService(service: RunningService, graceMs = 10_000): Promise<void> {
  const {child} = service
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  process.kill(service.pid, 'SIGTERM')
  const timer = setTimeout(() => {
    if (child.exitCode === null && child.signalCode === null) process.kill(service.pid, 'SIGKILL')
  }, graceMs)
  await exited
  clearTimeout(timer)
}

/** SIGKILL by pid, as a crash would end it, and wait for the exit. */
export async function killService(service: RunningService): Promise<void> {
  const {child} = service
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = once(child, 'exit')
  process.kill(service.pid, 'SIGKILL')
  await exited
}

export interface CommandResult {
  args: string[]
  exitCode: number
  stdout: string
  stderr: string
}

/** Run this checkout's gymrecipe CLI (build it first: `npm run build`). */
export async function gymrecipe(args: string[], options: {env?: NodeJS.ProcessEnv} = {}): Promise<CommandResult> {
  const child = spawn(process.execPath, [GYMRECIPE, ...args], {cwd: REPO_ROOT, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe']})
  let stdout = ''
  let stderr = ''
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString('utf8')))
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')))
  const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null]
  return {args, exitCode: code ?? (signal === null ? 1 : 128), stdout, stderr}
}

/** GET a JSON route of a running service. */
export async function getJson(url: string): Promise<any> {
  const response = await fetch(url, {signal: AbortSignal.timeout(10_000)})
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`)
  return await response.json()
}
