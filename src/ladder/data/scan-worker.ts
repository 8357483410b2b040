import {parentPort, workerData} from 'node:worker_threads'

import {scanJsonlFile} from './jsonl-scan.js'
import {RowSample} from './sample.js'
import type {RangeJob, RangeResult} from './parallel-scan.js'

/** Worker thread: scan one line-aligned byte range of a JSONL file and post the result. */
async function scanRange(job: RangeJob): Promise<RangeResult> {
  const sample = new RowSample(job.sampleHead, job.sampleSize, job.seed, job.sampleBudget)
  const stats = await scanJsonlFile(job.file, {...job.options, sampler: sample, startOffset: job.start, end: job.end})
  return {stats, head: sample.headRows(), reservoir: sample.reservoirRows()}
}

scanRange(workerData as RangeJob).then(
  (result) => parentPort!.postMessage({ok: true, result}),
  (error: Error) => parentPort!.postMessage({ok: false, error: error.message}),
)
