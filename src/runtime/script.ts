/**
 * Run a recipe shell script as its own process group, streaming its output live. Killing a
 * `sh -c` wrapper leaves grandchildren (docker build, curl, sleep) holding the pipes, so the
 * script is spawned detached (`bash <script>` leads a new group) and signals go to the group.
 */
import {execa} from 'execa'
import {numberField} from '../errors.js'
import {LineTail} from './line-tail.js'

export interface ScriptExit {
  exitCode: number | undefined
  signal: string | undefined
}

export interface ScriptRun {
  pid: number
  /** Resolves when bash exits (never rejects). */
  exited: Promise<ScriptExit>
  /** Whether bash is still running. */
  running(): boolean
  /** Signal the whole process group; false when it is already gone. */
  signalGroup(signal: NodeJS.Signals): boolean
  /** The last lines the script printed on each stream. */
  tail(stream: 'stdout' | 'stderr', lines?: number): string[]
}

const KEEP_LINES = 400

export function runScript(
  scriptPath: string,
  options: {cwd: string; env: Record<string, string | undefined>; onOutput: (stream: 'stdout' | 'stderr', text: string) => void},
): ScriptRun {
  const child = execa('bash', [scriptPath], {
    cwd: options.cwd,
    env: options.env,
    extendEnv: false,
    detached: true,
    reject: false,
    buffer: false,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
    // The group is ended explicitly below; execa must not add its own kill timer.
    forceKillAfterDelay: false,
  })
  const kept = {stdout: new LineTail(KEEP_LINES), stderr: new LineTail(KEEP_LINES)}
  const collect = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
    const text = chunk.toString('utf8')
    options.onOutput(stream, text)
    kept[stream].write(text)
  }
  child.stdout?.on('data', collect('stdout'))
  child.stderr?.on('data', collect('stderr'))
  let done = false
  const exited = child.then(
    (result) => {
      done = true
      return {exitCode: result.exitCode, signal: result.signal}
    },
    (error: unknown) => {
      done = true
      return {exitCode: numberField(error, 'exitCode'), signal: typeof error === 'object' && error !== null && 'signal' in error ? (error.signal as NodeJS.Signals | undefined) : undefined}
    },
  )
  const pid = child.pid ?? -1
  return {
    pid,
    exited,
    running: () => !done,
    signalGroup(signal) {
      if (pid <= 0) return false
      try {
        process.kill(-pid, signal)
        return true
      } catch {
        return false
      }
    },
    tail: (stream, lines = 50) => kept[stream].last(lines),
  }
}
