import {mkdtemp, readFile, rm, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {run, which} from './process.js'

export type ConverterOutcome =
  | {status: 'converted'; lines: string[]; python: string; command: string}
  | {status: 'failed'; reason: string; python: string; command: string}
  | {status: 'no-python'; reason: string}

/**
 * Run a Relax checkout's convert_dataset.py on a few raw rows (one JSON text each) with
 * python3, exactly as the prepare script and the training job do, and return its output lines.
 * Everything happens in a private temporary directory that is removed afterwards.
 */
export async function runConvertDataset(script: string, rows: string[], options: {python?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number} = {}): Promise<ConverterOutcome> {
  const python = await which(options.python ?? 'python3', options.env?.PATH ?? process.env.PATH)
  if (!python) return {status: 'no-python', reason: `${options.python ?? 'python3'} is not on PATH`}
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gymrecipe-convert-'))
  try {
    const input = path.join(dir, 'sample.jsonl')
    const output = path.join(dir, 'sample_relax.jsonl')
    await writeFile(input, rows.map((r) => `${r}\n`).join(''))
    const args = [script, '--input', input, '--output', output]
    const result = await run(python, args, {timeout: options.timeoutMs ?? 60_000, env: {...options.env, PYTHONDONTWRITEBYTECODE: '1'}, extendEnv: !options.env})
    const command = `${python} ${args.join(' ')}`
    if (result.failed) {
      const why = result.timedOut ? 'timed out' : `exited with ${result.exitCode ?? result.signal}`
      return {status: 'failed', reason: `${why}: ${lastLine(result.stderr) ?? lastLine(result.stdout) ?? 'no output'}`, python, command}
    }
    const text = await readFile(output, 'utf8').catch(() => undefined)
    if (text === undefined) return {status: 'failed', reason: `wrote no ${path.basename(output)}`, python, command}
    return {status: 'converted', lines: text.split('\n').filter((l) => l.trim() !== ''), python, command}
  } finally {
    await rm(dir, {recursive: true, force: true})
  }
}

function lastLine(text: string): string | undefined {
  return text.trim().split('\n').at(-1) || undefined
}
