import {once, ScratchKey} from '../scratch.js'
import type {CheckContext} from '../types.js'
import type {JsonlStats} from './jsonl-scan.js'
import {scanWithSample} from './parallel-scan.js'
import type {SampledRow} from './sample.js'
import {type DataPlan, dataPlan} from './source.js'
import {messageOf} from '../../errors.js'

export interface DataScan {
  plan: DataPlan
  /** Null when the source cannot be read (the source check says why). */
  stats: JsonlStats | null
  sample: SampledRow[]
  /** Threads that scanned the file (large files are split into line-aligned ranges). */
  threads?: number
  error?: string
}

const SCAN_KEY = new ScratchKey<Promise<DataScan>>('data.scan')
/** Bad lines and rows missing a field listed by name; the totals are always complete. */
export const LISTED = 20

/** One streaming pass over the source file, shared by every row-level check of the run. */
export function dataScan(ctx: CheckContext): Promise<DataScan> {
  return once(ctx, SCAN_KEY, () => runScan(ctx))
}

async function runScan(ctx: CheckContext): Promise<DataScan> {
  const plan = await dataPlan(ctx)
  if (!plan.readable || !plan.file) return {plan, stats: null, sample: []}
  try {
    const {stats, sample, threads} = await scanWithSample(plan.file, {fields: plan.fields, maxProblems: LISTED, maxMissingLines: LISTED, signal: ctx.options.signal})
    return {plan, stats, sample, threads}
  } catch (error) {
    return {plan, stats: null, sample: [], error: `reading ${plan.file} failed: ${messageOf(error)}`}
  }
}

/** A short "not checked" result for checks that need rows when the source is unusable. */
export function sourceUnusable(scan: DataScan): {status: 'skip'; message: string; hint: string} {
  return {
    status: 'skip',
    message: scan.error ?? 'not checked: the source file is not usable (see the NEMO_GYM_SOURCE_DATA check)',
    hint: 'Fix NEMO_GYM_SOURCE_DATA first; run `gymrecipe prepare` to materialize it.',
  }
}
