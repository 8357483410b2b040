import type {Options as ExecaOptions} from 'execa'
import {constants as fsConstants, promises as fsp} from 'node:fs'
import path from 'node:path'
import {codeOf} from '../errors.js'

export interface RunResult {
  command: string
  exitCode: number | undefined
  stdout: string
  stderr: string
  failed: boolean
  timedOut: boolean
  signal?: string
  notFound: boolean
}

/**
 * Run a program and capture its output without throwing. A missing program is
 * reported as notFound so callers can point at `gymrecipe doctor`.
 */
export async function run(file: string, args: readonly string[], options: ExecaOptions = {}): Promise<RunResult> {
  // Loaded on first use: most commands start no process, and execa is a large part of start-up.
  const {execa} = await import('execa')
  // No stdin unless given: a socket on stdin makes bash behave as under sshd and source ~/.bashrc.
  const stdin = options.input === undefined && options.inputFile === undefined && options.stdin === undefined ? {stdin: 'ignore' as const} : {}
  const result = await execa(file, args, {reject: false, stripFinalNewline: true, ...stdin, ...options})
  const stdout = typeof result.stdout === 'string' ? result.stdout : ''
  const stderr = typeof result.stderr === 'string' ? result.stderr : ''
  return {
    command: [file, ...args].join(' '),
    exitCode: result.exitCode,
    stdout,
    stderr,
    failed: result.failed,
    timedOut: result.timedOut,
    signal: result.signal,
    notFound: codeOf(result) === 'ENOENT',
  }
}

/** Find an executable on PATH (no shell involved). */
export async function which(name: string, envPath = process.env.PATH ?? ''): Promise<string | undefined> {
  if (name.includes('/')) return (await isExecutable(name)) ? name : undefined
  for (const dir of envPath.split(path.delimiter)) {
    if (!dir) continue
    const candidate = path.join(dir, name)
    if (await isExecutable(candidate)) return candidate
  }
  return undefined
}

async function isExecutable(p: string): Promise<boolean> {
  try {
    const stat = await fsp.stat(p)
    if (!stat.isFile()) return false
    await fsp.access(p, fsConstants.X_OK)
    return true
  } catch {
    return false
  }
}
