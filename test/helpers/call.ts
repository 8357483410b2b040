import {mkdtemp, readdir, readFile, writeFile} from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

import {parseCallConfig} from '../../src/gym/call/config.js'
import {type CallSummary, runCall, type RunCallOptions} from '../../src/gym/call/run.js'
import type {CallKind} from '../../src/gym/call/types.js'

export interface CallRunResult {
  dir: string
  summary: CallSummary
  evidenceDir: string
  outputPath: string
  /** Output lines as text (undefined when no output was written). */
  lines?: string[]
  /** Output rows parsed with JSON.parse. */
  rows?: any[]
  /** Parsed attempt artifact of a row's envelope. */
  artifact(envelope: {artifact: string | null}): Promise<any>
  /** Every file the run wrote (evidence and output), concatenated, for secret scans. */
  everything(): Promise<string>
}

export async function tempDir(prefix = 'gr-call-'): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), prefix))
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = []
  for (const entry of await readdir(dir, {withFileTypes: true}).catch(() => [])) {
    const p = path.join(dir, entry.name)
    if (entry.isDirectory()) out.push(...(await walk(p)))
    else if (entry.isFile()) out.push(p)
  }
  return out
}

/** Write rows and config into a temp dir, run the library, read back output and evidence. */
export async function callRun(
  kind: CallKind,
  configYaml: string,
  rows: (object | string)[],
  options: Partial<Pick<RunCallOptions, 'resume' | 'signal' | 'env' | 'dryRun' | 'onProgress'>> & {dir?: string; evidenceDir?: string} = {},
): Promise<CallRunResult> {
  const dir = options.dir ?? (await tempDir())
  const input = path.join(dir, 'rows.jsonl')
  const configPath = path.join(dir, 'config.yaml')
  if (!options.dir || !(await readFile(input, 'utf8').catch(() => undefined))) {
    await writeFile(input, rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n') + '\n')
  }
  await writeFile(configPath, configYaml)
  const config = parseCallConfig(configYaml, kind, configPath)
  const evidenceDir = options.evidenceDir ?? path.join(dir, 'evidence')
  const outputPath = path.join(dir, 'out.jsonl')
  const summary = await runCall({
    config,
    input,
    output: outputPath,
    evidenceDir,
    resume: options.resume,
    signal: options.signal,
    env: options.env ?? {},
    dryRun: options.dryRun,
    onProgress: options.onProgress,
  })
  const text = await readFile(outputPath, 'utf8').catch(() => undefined)
  const lines = text === undefined ? undefined : text.split('\n').filter((l) => l !== '')
  return {
    dir,
    summary,
    evidenceDir,
    outputPath,
    lines,
    rows: lines?.map((l) => JSON.parse(l)),
    artifact: async (envelope) => JSON.parse(await readFile(path.join(evidenceDir, envelope.artifact!), 'utf8')),
    everything: async () => {
      const files = [...(await walk(evidenceDir)), ...(text === undefined ? [] : [outputPath])]
      return (await Promise.all(files.map((f) => readFile(f, 'utf8')))).join('\n')
    },
  }
}
