/**
 * Reading Relax's training outputs: rollout dumps, terminal reward traces,
 * driver-log step lines, checkpoints, and OOM/traceback lines in logs. Pure functions over
 * files and text, so each rule is testable on its own.
 */
import {promises as fsp} from 'node:fs'
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
        reward: fields.reward, status: fields.status, agent_turns: fields.agent_turns, response: fields.response,
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
  const out: StepLine[] = []
  const lines = log.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const m = /\bstep (\d+): (\{.*\})\s*$/.exec(lines[i])
    if (!m) continue
    const grad = /['"]train\/grad_norm['"]\s*:\s*([^,}]+(?:\([^)]*\))?)/.exec(m[2])
    out.push({line: i + 1, step: Number(m[1]), gradNorm: grad ? parseLooseNumber(grad[1]) : null, text: lines[i].trim().slice(0, 400)})
  }
  return out
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
  const findings: LogFinding[] = []
  const lines = text.split('\n')
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]
    if (OOM.test(line)) findings.push({source, line: i + 1, kind: 'oom', text: line.trim().slice(0, 300)})
    if (TRACEBACK.test(line)) {
      let end = i + 1
      while (end < lines.length && /^\s+|^\s*$/.test(lines[end]) && !TRACEBACK.test(lines[end])) end++
      const last = (lines[end] ?? '').trim()
      findings.push({source, line: i + 1, kind: 'traceback', text: (last || line.trim()).slice(0, 300)})
    }
  }
  return findings
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
