import {Args, Flags} from '@oclif/core'

import {BaseCommand, outputUnlessDryRun, plural, OUTPUT_WRITE_STATUS, PARTIAL_OUTPUT_INTERRUPT_STATUS} from '../../cli/base-command.js'
import {type ExportSummary, exportTasks} from '../../gym/tasks/export.js'
import {stopYoungGenerationGrowth} from '../../runtime/heap.js'

export default class TasksExport extends BaseCommand<typeof TasksExport> {
  static override removesPartialOutputOnInterrupt = true
  static override summary = 'Export scenario bundles as Gym tasks for rollout collection or prepare'
  static override description = `Writes one Gym task per bundle, in order: the task's members (top-level nulls dropped), then id (only when the task has none), _ng_task_index (60-bit, from the scenario ID), _dd_scenario_id, and _dd_provenance (only when non-empty). Values are copied exactly, so large integers and number spellings survive. Nothing is written unless every bundle is valid.

EXIT STATUS
  0  tasks written (or, with --dry-run, validated)
  ${OUTPUT_WRITE_STATUS}
  2  bad bundle (the message names the file, line and field)
  ${PARTIAL_OUTPUT_INTERRUPT_STATUS}`

  static override examples = [
    '<%= config.bin %> tasks export scenarios.jsonl --output gym-tasks.jsonl',
    '<%= config.bin %> tasks export scenarios.jsonl --output gym-tasks.jsonl --dry-run --json',
  ]

  static override args = {
    scenarios: Args.string({description: 'scenario bundles (JSONL) from `tasks build`', required: true}),
  }

  static override flags = {
    output: Flags.string({char: 'o', description: 'Gym tasks to write (JSONL); required unless --dry-run'}),
    'dry-run': Flags.boolean({default: false, description: 'validate everything and report what would be written, without writing'}),
  }

  public async run(): Promise<ExportSummary> {
    const output = outputUnlessDryRun(this.flags.output, this.flags['dry-run'])
    this.dataOutput(output)
    const progress = this.readProgress('tasks export')
    // the stream's lines die young: the young generation start-up left is enough for them
    stopYoungGenerationGrowth()
    const summary = await exportTasks({input: this.args.scenarios, output, dryRun: this.flags['dry-run'], onProgress: progress.update}).finally(progress.stop)
    this.say(`${summary.dryRun ? 'Would write' : 'Wrote'} ${plural(summary.tasks, 'Gym task')}${summary.output ? ` to ${summary.output}` : ''}`)
    return summary
  }
}
