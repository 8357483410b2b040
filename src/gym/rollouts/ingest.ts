import {POLICY_MESSAGES} from '../../json/input-policy.js'
import {assertJsonlFile, FieldError, type JsonlOutput, LineBuilder, locate, nonFiniteField, type ReadProgress, readJsonlBatches, scanObjectByteLine, withJsonlOutput} from '../../json/index.js'
import {type RolloutStatus, writeNormalized} from './normalize.js'
import {loadTaskTable, type TaskEntry} from './task-table.js'

export interface IngestOptions {
  tasks: string
  rollouts: string
  /** Gym's `<output>_failures.jsonl` sidecar; when given it must exist. */
  failures?: string
  output: string
  dryRun: boolean
  onProgress?: (progress: ReadProgress) => void
}

export interface IngestSummary {
  tasks: {path: string; lines: number; distinct: number; identicalDuplicates: number}
  rollouts: {path: string; records: number}
  failures: {path: string | null; records: number}
  /** The file written; null on a dry run without --output. */
  output: string | null
  dryRun: boolean
  records: number
}

const JOIN_HINT = 'Rollouts join on _ng_task_index, which Gym stamps while collecting from tasks exported by `gymrecipe tasks export`.'

async function joinFile(file: string, flag: string, status: RolloutStatus, tasks: Map<string, TaskEntry>, out: JsonlOutput, onProgress?: (progress: ReadProgress) => void): Promise<number> {
  let records = 0
  const built = new LineBuilder()
  for await (const batch of readJsonlBatches(file, flag, onProgress, {bytes: true, text: false})) {
    for (let line = batch.next(); line; line = batch.next()) {
      records++
      const scanned = scanObjectByteLine(line, file)
      try {
        if (scanned.hasNonFinite) throw new FieldError(nonFiniteField(line.text, ''), POLICY_MESSAGES.nonFinite)
        writeNormalized(built, line.bytes, scanned.members, tasks, status)
      } catch (error) {
        throw locate(error, 'E_ROLLOUT_INVALID', file, line.line, JOIN_HINT)
      }
    }
    // the batch's bytes are copied before the next batch is read over them
    await out.writeBuilt(built)
  }
  return records
}

/**
 * Join collected rollouts (status "completed") and then failure-sidecar records
 * (status "failed") onto their exported tasks. Streams: memory holds the task
 * table, not the rollouts. Nothing is written unless every record joins.
 */
export async function ingestRollouts(options: IngestOptions): Promise<IngestSummary> {
  const {tasks: tasksFile, rollouts, failures, output, dryRun} = options
  await assertJsonlFile(rollouts, '--rollouts')
  if (failures !== undefined) await assertJsonlFile(failures, '--failures')
  const table = await loadTaskTable(tasksFile)
  const counts = await withJsonlOutput(output, dryRun, async (out) => ({
    completed: await joinFile(rollouts, '--rollouts', 'completed', table.entries, out, options.onProgress),
    failed: failures === undefined ? 0 : await joinFile(failures, '--failures', 'failed', table.entries, out, options.onProgress),
  }))
  return {
    tasks: {path: tasksFile, lines: table.lines, distinct: table.entries.size, identicalDuplicates: table.identicalDuplicates},
    rollouts: {path: rollouts, records: counts.completed},
    failures: {path: failures ?? null, records: counts.failed},
    output: output || null,
    dryRun,
    records: counts.completed + counts.failed,
  }
}
