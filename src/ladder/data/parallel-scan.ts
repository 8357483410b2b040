import {existsSync} from 'node:fs'
import {open, stat} from 'node:fs/promises'
import os from 'node:os'
import {Worker} from 'node:worker_threads'

import {builtFile} from '../../package-root.js'
import {type JsonlStats, scanJsonlFile, type ScanOptions} from './jsonl-scan.js'
import {RowSample, SAMPLE_BUDGET_BYTES, type SampledRow} from './sample.js'

/**
 * A large file is split into line-aligned byte ranges scanned at the same time: the first on
 * this thread, the others on worker threads, each with its own reader and constant memory.
 * Their statistics are then stitched together in file order (line and row numbers shifted),
 * so the result is exactly that of one sequential scan.
 */

export interface RangeJob {
  file: string
  start: number
  end: number
  options: Pick<ScanOptions, 'fields' | 'maxProblems' | 'maxMissingLines' | 'maxSampleBytes'>
  sampleHead: number
  sampleSize: number
  /** This range's share of the sample's byte budget. */
  sampleBudget: number
  seed: number
}

export interface RangeResult {
  stats: JsonlStats
  head: SampledRow[]
  reservoir: SampledRow[]
}

export interface SampledScan {
  stats: JsonlStats
  /** Rows kept for the conversion check: the first rows plus a uniform sample of the rest. */
  sample: SampledRow[]
  /** How many threads scanned the file. */
  threads: number
}

export interface SampledScanOptions extends Pick<ScanOptions, 'fields' | 'maxProblems' | 'maxMissingLines' | 'maxSampleBytes'> {
  signal?: AbortSignal
  /** Upper bound on threads (default: the available parallelism, at most 4). */
  threads?: number
  /** Files smaller than this are scanned on one thread (default 64 MiB: workers cost ~40 ms to start). */
  minParallelBytes?: number
}

const SAMPLE_HEAD = 16
const SAMPLE_SIZE = 48
const SEED = 0x5eed
const MAX_THREADS = 4
/** The compiled worker; absent when running from TypeScript sources (tests), then one thread is used. */
const WORKER_FILE = builtFile('ladder/data/scan-worker.js')

export async function scanWithSample(file: string, o: SampledScanOptions): Promise<SampledScan> {
  const size = (await stat(file)).size
  const threads = Math.min(o.threads ?? os.availableParallelism(), MAX_THREADS)
  const workerFile = WORKER_FILE !== undefined && existsSync(WORKER_FILE) ? WORKER_FILE : undefined
  const bounds = threads > 1 && workerFile !== undefined && size >= (o.minParallelBytes ?? 64 * 1024 * 1024) ? await lineAlignedBounds(file, size, threads) : [0, size]
  const jobs: RangeJob[] = bounds.slice(0, -1).map((start, k) => ({
    file,
    start,
    end: bounds[k + 1],
    options: {fields: o.fields, maxProblems: o.maxProblems, maxMissingLines: o.maxMissingLines, maxSampleBytes: o.maxSampleBytes},
    sampleHead: k === 0 ? SAMPLE_HEAD : 0,
    sampleSize: SAMPLE_SIZE,
    sampleBudget: Math.floor(SAMPLE_BUDGET_BYTES / (bounds.length - 1)),
    seed: SEED + k,
  }))
  const results = await Promise.all(jobs.map((job, k) => (k === 0 || workerFile === undefined ? scanRangeHere(job, o.signal) : scanRangeInWorker(workerFile, job, o.signal))))
  return {...stitch(results, o), threads: jobs.length}
}

async function scanRangeHere(job: RangeJob, signal?: AbortSignal): Promise<RangeResult> {
  const sample = new RowSample(job.sampleHead, job.sampleSize, job.seed, job.sampleBudget)
  const stats = await scanJsonlFile(job.file, {...job.options, sampler: sample, startOffset: job.start, end: job.end, signal})
  return {stats, head: sample.headRows(), reservoir: sample.reservoirRows()}
}

function scanRangeInWorker(workerFile: string, job: RangeJob, signal?: AbortSignal): Promise<RangeResult> {
  return new Promise((resolve, reject) => {
    // No inherited CLI flags (`-e`, `--input-type` would make the worker fail to start).
    const worker = new Worker(workerFile, {workerData: job, execArgv: []})
    const abort = () => void worker.terminate()
    signal?.addEventListener('abort', abort, {once: true})
    let settled = false
    const settle = (fn: () => void) => {
      if (settled) return
      settled = true
      signal?.removeEventListener('abort', abort)
      fn()
    }
    worker.once('message', (message: {ok: boolean; result?: RangeResult; error?: string}) => {
      settle(() => (message.ok ? resolve(message.result!) : reject(new Error(message.error))))
      void worker.terminate()
    })
    worker.once('error', (error) => settle(() => reject(error)))
    worker.once('exit', (code) => settle(() => reject(signal?.aborted ? signal.reason : new Error(`scan worker exited with ${code}`))))
  })
}

/**
 * Range starts for `parts` ranges, each just after a newline, plus the file size at the end. A
 * boundary that would fall inside one giant line is dropped (its range merges with the next).
 */
export async function lineAlignedBounds(file: string, size: number, parts: number): Promise<number[]> {
  const bounds = [0]
  const handle = await open(file, 'r')
  try {
    const window = Buffer.alloc(64 * 1024)
    for (let k = 1; k < parts; k++) {
      const next = Math.floor((size * (k + 1)) / parts)
      let position = Math.max(Math.floor((size * k) / parts), bounds.at(-1)!)
      let boundary = -1
      while (boundary === -1 && position < next) {
        const {bytesRead} = await handle.read(window, 0, Math.min(window.length, next - position), position)
        if (bytesRead === 0) break
        const newline = window.subarray(0, bytesRead).indexOf(0x0a)
        if (newline !== -1) boundary = position + newline + 1
        position += bytesRead
      }
      if (boundary > bounds.at(-1)! && boundary < size) bounds.push(boundary)
    }
  } finally {
    await handle.close()
  }
  bounds.push(size)
  return bounds
}

/** Join range results in file order, as one sequential scan would have reported them. */
function stitch(results: RangeResult[], o: SampledScanOptions): {stats: JsonlStats; sample: SampledRow[]} {
  const maxProblems = o.maxProblems ?? 20
  const maxMissingLines = o.maxMissingLines ?? 20
  const first = results[0].stats
  const stats: JsonlStats = {...first, problems: [], missing: first.missing.map((m) => ({field: m.field, rows: 0, lines: []}))}
  for (const key of ['bytes', 'newlines', 'lines', 'rows', 'blankLines', 'objectRows', 'badRows', 'crlfLines'] as const) stats[key] = 0
  const totalRows = results.reduce((n, r) => n + r.stats.rows, 0)
  const sample: SampledRow[] = []
  let lineBase = 0
  let rowBase = 0
  for (const {stats: part, head, reservoir} of results) {
    for (const key of ['bytes', 'newlines', 'lines', 'rows', 'blankLines', 'objectRows', 'badRows', 'crlfLines'] as const) stats[key] += part[key]
    for (const p of part.problems) if (stats.problems.length < maxProblems) stats.problems.push({...p, line: p.line + lineBase})
    part.missing.forEach((m, f) => {
      stats.missing[f].rows += m.rows
      for (const line of m.lines) if (stats.missing[f].lines.length < maxMissingLines) stats.missing[f].lines.push(line + lineBase)
    })
    // Reservoir rows are a uniform sample of their range; keep each range's share of the total.
    const share = totalRows === 0 ? 0 : Math.round((SAMPLE_SIZE * part.rows) / totalRows)
    for (const row of [...head, ...reservoir.slice(0, share)]) sample.push({...row, line: row.line + lineBase, row: row.row + rowBase})
    lineBase += part.newlines
    rowBase += part.rows
  }
  stats.finalNewline = results.at(-1)!.stats.finalNewline
  return {stats, sample: sample.sort((a, b) => a.line - b.line)}
}
