/**
 * Reading Relax's training outputs: rollout dumps, terminal reward traces,
 * driver-log step lines, checkpoints, and OOM/traceback lines in logs. Pure functions over
 * files and text, so each rule is testable on its own.
 */
import {createReadStream, promises as fsp} from 'node:fs'
import path from 'node:path'
import {messageOf} from '../../errors.js'

export const DUMP_FIELDS = [
  'rollout_id', 'sample_index', 'prompt', 'response', 'reward', 'prompt_length', 'response_length', 'total_length',
  'prompt_token_count', 'response_token_count', 'total_token_count', 'agent_turns', 'status', 'group_index',
] as const

export interface DumpSample {
  file: string
  line: number
  rollout_id: unknown
  group_index: unknown
  sample_index: unknown
  reward: unknown
  status: unknown
  agent_turns: unknown
  response: unknown
  prompt: unknown
}

export interface DumpProblem {
  file: string
  line: number
  message: string
}

export interface Dumps {
  dir: string
  files: string[]
  samples: DumpSample[]
  problems: DumpProblem[]
}

async function jsonlFiles(dir: string): Promise<string[]> {
  const entries = await fsp.readdir(dir).catch(() => [] as string[])
  return entries
    .filter((e) => e.endsWith('.jsonl') && !e.startsWith('.'))
    .sort((a, b) => (Number.parseInt(a, 10) || 0) - (Number.parseInt(b, 10) || 0) || a.localeCompare(b))
    .map((e) => path.join(dir, e))
}

/** `<save>/rollout_result/train/*.jsonl`: one record per committed sample. */
export async function readRolloutDumps(saveDir: string): Promise<Dumps> {
  const dir = path.join(saveDir, 'rollout_result', 'train')
  const files = await jsonlFiles(dir)
  const samples: DumpSample[] = []
  const problems: DumpProblem[] = []
  for (const file of files) {
    const text = await fsp.readFile(file, 'utf8')
    const lines = text.split('\n')
    for (let i = 0; i < lines.length; i++) {
      if (!lines[i].trim()) continue
      let record: unknown
      try {
        record = JSON.parse(lines[i])
      } catch (error) {
        problems.push({file, line: i + 1, message: `not JSON (${messageOf(error)})`})
        continue
      }
      if (!record || typeof record !== 'object' || Array.isArray(record)) {
        problems.push({file, line: i + 1, message: 'not a JSON object'})
        continue
      }
      const fields = record as Record<string, unknown>
      const missing = DUMP_FIELDS.filter((f) => !(f in fields))
      if (missing.length > 0) problems.push({file, line: i + 1, message: `missing ${missing.join(', ')}`})
      samples.push({
        file, line: i + 1, rollout_id: fields.rollout_id, group_index: fields.group_index, sample_index: fields.sample_index,
        reward: fields.reward, status: fields.status, agent_turns: fields.agent_turns, response: fields.response, prompt: fields.prompt,
      })
    }
  }
  return {dir, files, samples, problems}
}

/** `<save>/rollout_result/reward_terminal_traces/*.jsonl`: samples that did not commit. */
export async function readTerminalTraces(saveDir: string): Promise<Array<Record<string, unknown>>> {
  const files = await jsonlFiles(path.join(saveDir, 'rollout_result', 'reward_terminal_traces'))
  const out: Array<Record<string, unknown>> = []
  for (const file of files) {
    for (const line of (await fsp.readFile(file, 'utf8')).split('\n')) {
      if (!line.trim()) continue
      try {
        const record = JSON.parse(line)
        if (record && typeof record === 'object') out.push(record)
      } catch {
        // a torn line is not evidence either way
      }
    }
  }
  return out
}

export interface GroupStat {
  key: string
  rollout: unknown
  group: unknown
  size: number
  rewards: number[]
  variance: boolean
}

export function rewardNumber(reward: unknown): number | null {
  if (typeof reward === 'number' && Number.isFinite(reward)) return reward
  if (reward && typeof reward === 'object' && 'scalar' in reward && typeof reward.scalar === 'number') return reward.scalar
  return null
}

/** Groups by (rollout_id, group_index): sizes and whether rewards vary (non-zero GRPO advantage). */
export function groupStats(samples: DumpSample[]): GroupStat[] {
  const groups = new Map<string, GroupStat>()
  for (const s of samples) {
    const key = `${String(s.rollout_id)}/${String(s.group_index)}`
    let g = groups.get(key)
    if (!g) {
      g = {key, rollout: s.rollout_id, group: s.group_index, size: 0, rewards: [], variance: false}
      groups.set(key, g)
    }
    g.size++
    const r = rewardNumber(s.reward)
    if (r !== null) g.rewards.push(r)
  }
  for (const g of groups.values()) g.variance = g.rewards.length > 1 && g.rewards.some((r) => Math.abs(r - g.rewards[0]) > 1e-12)
  return [...groups.values()]
}

export interface StepLine {
  line: number
  step: number
  gradNorm: number | null
  text: string
}

function parseLooseNumber(raw: string): number | null {
  const s = raw.trim().replace(/^(?:np\.float\d*|tensor|float)\(/, '').replace(/\)$/, '').split(',')[0].trim()
  if (/^[+-]?nan$/i.test(s)) return Number.NaN
  if (/^[+-]?inf(inity)?$/i.test(s)) return s.startsWith('-') ? -Infinity : Infinity
  const n = Number(s)
  return Number.isNaN(n) ? null : n
}

/** `step N: {... 'train/grad_norm': <float>, ..., 'train/step': N ...}` lines of a job log. */
export function parseStepLines(log: string): StepLine[] {
  return digestText(log, '').steps
}

export interface CheckpointState {
  tracker: string | null
  iteration: string | null
  iterDir: string | null
  iterDirExists: boolean
  iterDirs: string[]
}

export async function checkpointState(saveDir: string): Promise<CheckpointState> {
  const tracker = path.join(saveDir, 'latest_checkpointed_iteration.txt')
  const text = await fsp.readFile(tracker, 'utf8').catch(() => null)
  const entries = await fsp.readdir(saveDir).catch(() => [] as string[])
  const iterDirs = entries.filter((e) => /^iter_\d{7}$/.test(e)).sort()
  const iteration = text === null ? null : text.trim()
  let iterDir: string | null = null
  let exists = false
  if (iteration !== null && /^\d+$/.test(iteration)) {
    iterDir = path.join(saveDir, `iter_${iteration.padStart(7, '0')}`)
    const stat = await fsp.stat(iterDir).catch(() => null)
    exists = Boolean(stat?.isDirectory()) && (await fsp.readdir(iterDir)).length > 0
  }
  return {tracker: text === null ? null : tracker, iteration, iterDir, iterDirExists: exists, iterDirs}
}

export interface LogFinding {
  source: string
  line: number
  kind: 'oom' | 'traceback'
  text: string
}

const OOM = /OutOfMemoryError|CUDA out of memory/
const TRACEBACK = /^\s*(?:\(\S+ pid=\d+\)\s*)?Traceback \(most recent call last\):/

/** OOM and traceback lines; for a traceback, the exception line that ends it is quoted. */
export function scanLog(text: string, source: string): LogFinding[] {
  return digestText(text, source).findings
}

/** Bounds on what a digest keeps, so a log of any length costs the same memory. */
const KEEP = {steps: 100_000, findings: 1000, saved: 10_000, failures: 10_000, lineChars: 1_048_576}

/**
 * What the training rung reads from a driver or worker log, gathered line by line as the text
 * streams past (from the dashboard's websocket, or a file), so a log of any length is read in
 * bounded memory: the optimizer step lines, degenerate batches, saved rollout results, OOM and
 * traceback findings, and the thin client's failure lines.
 */
export class LogDigest {
  readonly steps: StepLine[] = []
  readonly saved: Array<{samples: number; path: string}> = []
  readonly findings: LogFinding[] = []
  readonly thinClientFailures: string[] = []
  degenerate = 0
  lines = 0
  private partial = ''
  private traceback: {line: number; first: string} | undefined

  constructor(readonly source: string) {}

  push(text: string): void {
    const pieces = (this.partial + text).split('\n')
    this.partial = pieces.pop() ?? ''
    // A line without an end is cut rather than kept growing.
    if (this.partial.length > KEEP.lineChars) this.partial = this.partial.slice(0, KEEP.lineChars)
    for (const piece of pieces) this.line(piece)
  }

  /** The text has ended: the last line without a newline, and a traceback still open. */
  end(): this {
    if (this.partial) {
      const last = this.partial
      this.partial = ''
      this.line(last)
    }
    if (this.traceback) this.closeTraceback('')
    return this
  }

  private closeTraceback(ending: string): void {
    const open = this.traceback!
    this.traceback = undefined
    if (this.findings.length < KEEP.findings) this.findings.push({source: this.source, line: open.line, kind: 'traceback', text: (ending.trim() || open.first.trim()).slice(0, 300)})
  }

  private line(raw: string): void {
    this.lines++
    const text = raw.replace(/\r$/, '')
    const n = this.lines
    // A traceback goes on over indented and blank lines; the first other line names the exception.
    if (this.traceback && !(/^\s+|^\s*$/.test(text) && !TRACEBACK.test(text))) this.closeTraceback(text)
    if (OOM.test(text) && this.findings.length < KEEP.findings) this.findings.push({source: this.source, line: n, kind: 'oom', text: text.trim().slice(0, 300)})
    if (TRACEBACK.test(text)) this.traceback = {line: n, first: text}
    const step = /\bstep (\d+): (\{.*\})\s*$/.exec(text)
    if (step && this.steps.length < KEEP.steps) {
      const grad = /['"]train\/grad_norm['"]\s*:\s*([^,}]+(?:\([^)]*\))?)/.exec(step[2])
      this.steps.push({line: n, step: Number(step[1]), gradNorm: grad ? parseLooseNumber(grad[1]) : null, text: text.trim().slice(0, 400)})
    }
    if (text.includes('degenerate/zero-signal batch')) this.degenerate += text.split('degenerate/zero-signal batch').length - 1
    for (const m of text.matchAll(/Saved rollout result \((\d+) samples\) to (\S+)/g)) {
      if (this.saved.length < KEEP.saved) this.saved.push({samples: Number(m[1]), path: m[2]})
    }
    if (text.includes('NeMo Gym thin client failed') && this.thinClientFailures.length < KEEP.failures) this.thinClientFailures.push(text.slice(0, 4096))
  }
}

export function digestText(text: string, source: string): LogDigest {
  const digest = new LogDigest(source)
  digest.push(text)
  return digest.end()
}

/** A log file, read as a stream into a digest. */
export async function digestFile(file: string, source = file): Promise<LogDigest> {
  const digest = new LogDigest(source)
  const stream = createReadStream(file, {encoding: 'utf8', highWaterMark: 1 << 20})
  for await (const chunk of stream) digest.push(chunk as string)
  return digest.end()
}

/** Files of a worker-log argument: the file itself, or the log files under a directory. */
export async function workerLogFiles(target: string): Promise<string[]> {
  const stat = await fsp.stat(target)
  if (stat.isFile()) return [target]
  const out: string[] = []
  const walk = async (dir: string, depth: number) => {
    for (const entry of await fsp.readdir(dir, {withFileTypes: true})) {
      const full = path.join(dir, entry.name)
      if (entry.isDirectory() && depth < 4) await walk(full, depth + 1)
      else if (entry.isFile() && /\.(err|out|log)$/.test(entry.name)) out.push(full)
    }
  }
  await walk(target, 0)
  return out.sort()
}
