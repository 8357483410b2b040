import {Flags} from '@oclif/core'

import {BaseCommand, outputUnlessDryRun, plural, OUTPUT_WRITE_STATUS, PARTIAL_OUTPUT_INTERRUPT_STATUS} from '../../cli/base-command.js'
import {type IngestSummary, ingestRollouts} from '../../gym/rollouts/ingest.js'

export default class RolloutsIngest extends BaseCommand<typeof RolloutsIngest> {
  static override removesPartialOutputOnInterrupt = true
  static override summary = 'Join collected Gym rollouts back onto their exported tasks'
  static override description = `Each record is matched to its task by _ng_task_index and written as one normalized line with: scenario_id, task_index, rollout_index, status, reward, provenance, agent_ref, failure_class, failure_terminal, failure_reason, failure_stage, rollout_id, attempt, task_id, environment_server, task, rollout.

Completed rollouts come first (status "completed"), then the failure sidecar (status "failed"). Fields come only from explicit keys (e.g. failure_reason from failure_reason, else _ng_failure_message); a missing one stays null. Tasks that share an index must be identical. Memory holds the task table, not the rollouts. Nothing is written unless every record joins.

EXIT STATUS
  0  records written (or, with --dry-run, validated)
  ${OUTPUT_WRITE_STATUS}
  2  bad input: unknown task index, conflicting tasks, missing file (file, line and field named)
  ${PARTIAL_OUTPUT_INTERRUPT_STATUS}`

  static override examples = [
    '<%= config.bin %> rollouts ingest --tasks gym-tasks.jsonl --rollouts rollouts.jsonl --output normalized.jsonl',
    '<%= config.bin %> rollouts ingest --tasks gym-tasks.jsonl --rollouts rollouts.jsonl --failures rollouts_failures.jsonl --output normalized.jsonl --json',
  ]

  static override flags = {
    tasks: Flags.string({description: 'Gym tasks (JSONL) from `tasks export`', required: true}),
    rollouts: Flags.string({description: 'collected rollouts (JSONL), e.g. Gym --output X.jsonl', required: true}),
    failures: Flags.string({description: "Gym's failure sidecar, e.g. X_failures.jsonl; must exist when given"}),
    output: Flags.string({char: 'o', description: 'normalized records to write (JSONL); required unless --dry-run'}),
    'dry-run': Flags.boolean({default: false, description: 'validate everything and report what would be written, without writing'}),
  }

  public async run(): Promise<IngestSummary> {
    const output = outputUnlessDryRun(this.flags.output, this.flags['dry-run'])
    this.dataOutput(output)
    const {tasks, rollouts, failures} = this.flags
    const progress = this.readProgress('rollouts ingest')
    const summary = await ingestRollouts({tasks, rollouts, failures, output, dryRun: this.flags['dry-run'], onProgress: progress.update}).finally(progress.stop)
    this.say(
      `${summary.dryRun ? 'Would write' : 'Wrote'} ${plural(summary.records, 'record')}${summary.output ? ` to ${summary.output}` : ''} ` +
        `(${summary.rollouts.records} completed, ${summary.failures.records} failed; ${plural(summary.tasks.distinct, 'task')})`,
    )
    return summary
  }
}
