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

/** Read the attempt an envelope's `artifact` ("attempts/<segment>.jsonl:<line>") points at. */
export async function readArtifact(evidenceDir: string, ref: string): Promise<any> {
  const colon = ref.lastIndexOf(':')
  const lines = (await readFile(path.join(evidenceDir, ref.slice(0, colon)), 'utf8')).split('\n')
  return JSON.parse(lines[Number(ref.slice(colon + 1)) - 1])
}

/** Every attempt recorded under an evidence directory, across segments. */
export async function readAttempts(evidenceDir: string): Promise<any[]> {
  const dir = path.join(evidenceDir, 'attempts')
  const out: any[] = []
  for (const file of (await readdir(dir)).sort()) {
    for (const line of (await readFile(path.join(dir, file), 'utf8')).split('\n')) if (line !== '') out.push(JSON.parse(line))
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
    artifact: (envelope) => readArtifact(evidenceDir, envelope.artifact!),
    everything: async () => {
      const files = [...(await walk(evidenceDir)), ...(text === undefined ? [] : [outputPath])]
      return (await Promise.all(files.map((f) => readFile(f, 'utf8')))).join('\n')
    },
  }
}
