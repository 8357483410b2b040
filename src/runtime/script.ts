/**
 * Run a recipe shell script as its own process group, streaming its output live. Killing a
 * `sh -c` wrapper leaves grandchildren (docker build, curl, sleep) holding the pipes, so the
 * script is spawned detached (`bash <script>` leads a new group) and signals go to the group.
 */
import {setTimeout as sleep} from 'node:timers/promises'
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
  /**
   * Whether any process of the group is left. A group id is not handed out again while a member
   * lives, so this stays truthful after bash itself has exited.
   */
  groupAlive(): boolean
  /**
   * Stop the group: `first` (bash's trap cleans up), up to `graceMs` for bash to exit, then
   * SIGKILL for whatever is left — children still unwinding after bash exited included. Resolves
   * when the group is gone or a last short wait ran out.
   */
  stop(first: NodeJS.Signals, graceMs: number): Promise<void>
  /** The last lines the script printed on each stream. */
  tail(stream: 'stdout' | 'stderr', lines?: number): string[]
}

const KEEP_LINES = 400
const GROUP_POLL_MS = 50
const LEFTOVER_GRACE_MS = 1000
/** A SIGKILLed group is gone within milliseconds; this bounds the wait if the kernel is slow. */
const AFTER_KILL_MS = 2000

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
  // 'exit' fires when bash itself ends; execa settles only once every holder of its pipes is gone.
  const bashExited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve()
    else child.once('exit', () => resolve())
  })
  const pid = child.pid ?? -1
  const signalGroup = (signal: NodeJS.Signals | 0): boolean => {
    if (pid <= 0) return false
    try {
      process.kill(-pid, signal)
      return true
    } catch {
      return false
    }
  }
  const groupAlive = () => signalGroup(0)
  const waitGone = async (until: number) => {
    while (groupAlive() && Date.now() < until) await sleep(GROUP_POLL_MS)
  }
  return {
    pid,
    exited,
    running: () => !done,
    signalGroup,
    groupAlive,
    async stop(first, graceMs) {
      if (done && !groupAlive()) return
      signalGroup(first)
      // Unref'd: a pending grace timer must not keep the CLI alive after everything is stopped.
      await Promise.race([bashExited, sleep(graceMs, undefined, {ref: false})])
      // bash's trap has run; a child still unwinding gets a moment, not the whole grace again.
      await waitGone(Date.now() + LEFTOVER_GRACE_MS)
      // Only a group still there: once it is gone, its id is free to be handed out again.
      if (groupAlive()) signalGroup('SIGKILL')
      await exited
      await waitGone(Date.now() + AFTER_KILL_MS)
    },
    tail: (stream, lines = 50) => kept[stream].last(lines),
  }
}
